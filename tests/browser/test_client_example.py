"""examples/client.html, a paper page that calls PraX's /synthesize with @gradio/client and renders the guesses in
its own table, in Debian Chromium against a running hub (bundled PraX weights). No internet: a local static server
serves examples/ and the npm-installed browser build of the pinned client (tests/js, ``?client=URL``).

The in-page snippet of docs/api.md (its ```html block) runs the same way."""

from __future__ import annotations

import functools
import http.server
import re
import threading

import pytest
from playwright.sync_api import expect

from apps.prax import dsl
from shared.weights import REPO_ROOT
from tests.conftest import free_port
from tests.js.node import BROWSER_BUILD, CLIENT_DIST, node, pinned_client_version

pytestmark = pytest.mark.browser

CDN_BUILD = f"https://cdn.jsdelivr.net/npm/@gradio/client@{pinned_client_version()}/dist/browser.js"


@pytest.fixture
def site(tmp_path):
    """A local static server: examples/ at /, the pinned client's dist/ at /gradio-client/."""
    node()  # fails with how to install Node.js and the pinned client when they are missing
    assert BROWSER_BUILD.exists(), f"{BROWSER_BUILD} is missing from @gradio/client {pinned_client_version()}"
    for item in (REPO_ROOT / "examples").iterdir():
        (tmp_path / item.name).symlink_to(item)
    (tmp_path / "gradio-client").symlink_to(CLIENT_DIST, target_is_directory=True)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield tmp_path, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def no_internet(page):
    """Any request that leaves this machine fails the test (the CDN default must have been replaced)."""
    outside = []

    def route(r):
        if re.match(r"https?://(127\.0\.0\.1|localhost)[:/]", r.request.url) or r.request.url.startswith("data:"):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    return outside


def rows(page) -> list[dict]:
    return page.evaluate("""() => [...document.querySelectorAll('#guesses tbody tr')].map((tr) => ({
        program: tr.querySelector('td.regex').textContent,
        probability: Number(tr.children[2].textContent),
        marks: [...tr.querySelectorAll('td.marks span')].map((s) => [s.className, s.textContent.trim()]),
    }))""")


def assert_fit(guesses: list[dict], examples: list[tuple[str, str]]) -> None:
    assert len(guesses) == 5
    for guess in guesses:
        for string, label in examples:
            assert dsl.matches(guess["program"], string) == (label == "+"), (guess["program"], string, label)
        assert guess["marks"] == [["fits", ("\u2713" if label == "+" else "\u2717") + string]
                                  for string, label in examples]
    probabilities = [g["probability"] for g in guesses]
    assert probabilities == sorted(probabilities, reverse=True) and 0 < probabilities[0] <= 1


def test_client_example_renders_the_guesses_in_its_own_markup(page, hub_url, site, tmp_path):
    _, url = site
    outside = no_internet(page)
    page.goto(f"{url}/client.html?hub={hub_url}&client={url}/gradio-client/browser.js")
    status = page.locator("#status")
    expect(status).to_contain_text("5 guesses from the tiny-pragmatic listener", timeout=60_000)
    assert page.locator("iframe").count() == 0, "its own markup, not an embedded app"
    examples = [("ab1", "+"), ("xy7", "+"), ("ab", "-")]
    assert page.locator("#examples li").all_inner_texts() == [f"{label} {s}\u00d7" for s, label in examples]
    assert_fit(rows(page), examples)

    page.fill("#string", "a1")
    page.select_option("#label", "-")
    page.click("#add-example")
    examples.append(("a1", "-"))
    expect(page.locator("#guesses tbody tr").first.locator("td.marks span")).to_have_count(4, timeout=60_000)
    expect(status).to_contain_text("5 guesses", timeout=60_000)
    assert_fit(rows(page), examples)

    page.fill("#string", "ab1")  # ab1 is already a match: the hub refuses with its sentence
    page.select_option("#label", "-")
    page.click("#add-example")
    expect(status).to_have_text("The string 'ab1' is given both as a match (+) and as a non-match (-); remove one "
                                "of the two.", timeout=60_000)
    expect(page.locator("#guesses")).to_be_hidden()
    page.locator("#examples li").last.locator("button").click()  # remove it: guesses again
    expect(status).to_contain_text("5 guesses", timeout=60_000)
    assert_fit(rows(page), examples)

    page.screenshot(path=tmp_path / "client-example.png", full_page=True)
    refusals = [e for e in page.console_errors if "status of 422 (Unprocessable Entity)" in e]
    assert len(refusals) == 1, "the browser logs the refused request (HTTP 422) and nothing else"
    assert outside == [] and [e for e in page.console_errors if e not in refusals] == []


def test_client_example_loads_the_client_from_jsdelivr_by_default():
    html = (REPO_ROOT / "examples" / "client.html").read_text()
    assert f'params.get("client") || "{CDN_BUILD}"' in html, "the CDN default names the pinned version"


def test_readme_in_page_snippet(page, hub_url, site):
    folder, url = site
    text = (REPO_ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    [snippet] = re.findall(r"^```html\n(.*?)^```$", text, flags=re.M | re.S)
    assert snippet.count(CDN_BUILD) == 1 and snippet.count('"https://your-hub.example"') == 1
    snippet = snippet.replace(CDN_BUILD, f"{url}/gradio-client/browser.js").replace("https://your-hub.example", hub_url)
    (folder / "readme-snippet.html").write_text(f'<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,">'
                                                f"\n{snippet}")
    outside = no_internet(page)
    page.goto(f"{url}/readme-snippet.html")
    items = page.locator("#guesses li")
    expect(items).to_have_count(5, timeout=60_000)
    for program in items.all_inner_texts():
        assert dsl.matches(program, "ab1") and not dsl.matches(program, "ab"), program
    assert outside == [] and page.console_errors == []
