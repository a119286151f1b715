"""examples/embed.html, served locally, shows a hub demo inside an iframe in Debian Chromium."""

import functools
import http.server
import threading
import time

import pytest
from playwright.sync_api import expect

import apps
from shared.weights import REPO_ROOT
from tests.conftest import free_port

pytestmark = pytest.mark.browser


@pytest.fixture
def examples_server():
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(REPO_ROOT / "examples"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.mark.parametrize("demo_id", ["prax", "tag2text"])
def test_embedded_demo_renders_in_iframe(page, hub_url, examples_server, demo_id, tmp_path):
    page.goto(f"{examples_server}/embed.html?hub={hub_url}&demo={demo_id}")
    frame = page.frame_locator("#demo-frame")
    expect(frame.get_by_text(apps.get_demo(demo_id).title).first).to_be_visible(timeout=60_000)
    expect(frame.locator("nav")).to_be_hidden()  # the embedded view
    # the frame takes the height the page reports (its content's, which changes as thumbnails load), not the 1400 px
    # it started with
    expect(page.locator("#demo-frame")).not_to_have_attribute("height", "1400", timeout=30_000)
    deadline, heights = time.monotonic() + 20, None
    while time.monotonic() < deadline:
        heights = (int(page.locator("#demo-frame").get_attribute("height")),
                   frame.locator("gradio-app").evaluate("app => Math.ceil(app.getBoundingClientRect().bottom)"))
        if abs(heights[0] - heights[1]) <= 2:
            break
        page.wait_for_timeout(250)
    assert abs(heights[0] - heights[1]) <= 2, f"the frame's height {heights[0]} does not follow its page {heights[1]}"
    page.screenshot(path=tmp_path / f"embed-{demo_id}.png", full_page=True)
    assert page.console_errors == []
