"""`demohub serve --ray` end to end: the command starts a local Ray instance, deploys the four demos (tiny checkpoints
in the official layouts, PraX on its bundled weights), and its pages and named endpoints answer exactly as an
in-process hub does; bad input gets the same sentence; stopping the hub stops its Ray instance."""

from __future__ import annotations

import json
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import psutil
import pytest
from PIL import Image

import apps
from apps import serving
from shared.weights import REPO_ROOT
from tests.commands import busy_cores, checkout_env, start_hub
from tests.conftest import free_port, tiny_hub_running
from tests.endpoints import DECLARED
from tests.hub.test_first_call import FIRST_JOIN_SECONDS, assert_answers, gradio_client_call, mcp_tool_call, timed_join
from tests.security import raw

SERVE_CONFIG = """
defaults:
  ray_actor_options: {num_cpus: 0}
demos:
  prax:
    weights: [tiny-pragmatic]
"""
EXAMPLES = [{"string": "abc", "label": "+"}, {"string": "b", "label": "-"}]


@pytest.fixture(scope="module")
def ray_hub(tiny_root, tmp_path_factory):
    root = tmp_path_factory.mktemp("ray-hub")
    (root / "serve.yaml").write_text(SERVE_CONFIG, encoding="utf-8")
    # --client-jobs 16: the first-call test's ten clients at once all come from this one address.
    hub = start_hub(root, ["--ray", "--serve-config", str(root / "serve.yaml"), "--downloads", "off", "--client-jobs",
                           "16"],
                    {"DEMOHUB_CHECKPOINTS": str(tiny_root), "HF_HUB_OFFLINE": "1"}, free_port())
    yield hub
    if hub.process.poll() is None:
        hub.process.kill()


@pytest.fixture(scope="module")
def local_hub(tiny_root, tmp_path_factory):
    """The same checkpoints served in process (the ModelPool): the answers to match."""
    with tiny_hub_running(tiny_root, tmp_path_factory, 2_000_000_000) as (url, _):
        yield url


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    folder = tmp_path_factory.mktemp("images")
    Image.new("RGB", (90, 70), (200, 30, 30)).save(folder / "red.png")
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (80, 100, 3), dtype=np.uint8)).save(
        folder / "noise.png")
    return folder


def calls(images) -> dict:
    """An honest call of every model endpoint the demos declare (tests/endpoints.py): each input at its declared
    example, files at their example or the test images; a new demo's endpoints are in it the day they are declared."""
    from gradio_client import handle_file

    def value(i):
        if i.kind == "file":
            return handle_file(str(REPO_ROOT / i.example) if i.example else str(images / "red.png"))
        if i.kind == "files":
            return [handle_file(str(REPO_ROOT / path)) for path in i.example] if i.example else \
                [handle_file(str(images / "red.png")), handle_file(str(images / "noise.png"))]
        return i.example

    return {name: {**{i.name: value(i) for i in endpoint.inputs}, "api_name": f"/{name}"}
            for name, (_, endpoint) in DECLARED.items() if endpoint.work == "model"}


def predict(url: str, call: dict):
    from gradio_client import Client

    client = Client(url, verbose=False)
    try:
        return client.predict(**call)
    finally:
        client.close()


def wait_until_running(hub, application: str, limit_s: float) -> float:
    """Seconds until Serve reports ``application`` RUNNING, read as ``demohub stats`` reads it
    (``serving.read_operator_stats``; the hub writes its operator file a moment after it first answers)."""
    port, start, seen = int(hub.url.rsplit(":", 1)[1]), time.monotonic(), None
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DEMOHUB_STATE_DIR", str(hub.root / "state"))
        while time.monotonic() - start < limit_s:
            if serving.operator_file(port).is_file():
                seen = serving.read_operator_stats(port)
                if seen.get("applications", {}).get(application) == "RUNNING":
                    return time.monotonic() - start
            time.sleep(0.5)
    raise AssertionError(f"{application} was not running after {limit_s:.0f} s: {seen}")


def test_first_calls_on_busy_cores_once_serve_is_up(ray_hub):
    """The first call after start, with --ray (issue #24): once Serve reports PraX's replica running (starting
    replicas is Ray's own work: minutes on two busy cores, so it is waited for on idle ones and printed), every core
    is made busy and the hub's first calls come at once: the first queue/join answers in under a second, and 8
    gradio_client calls with default settings and an MCP tool call are all answered. First in this module: no call
    has reached the hub before it."""
    ready = wait_until_running(ray_hub, "demohub-prax-tiny-pragmatic", 300)
    with busy_cores():
        synthesize = raw.fn_index(httpx.get(f"{ray_hub.url}/config", timeout=60).json(), "synthesize")
        first_join = timed_join(ray_hub.url, synthesize, "tiny-pragmatic")
        with ThreadPoolExecutor(max_workers=10) as pool:
            clients = [pool.submit(gradio_client_call, ray_hub.url) for _ in range(8)]
            mcp = pool.submit(mcp_tool_call, ray_hub.url, "tiny-pragmatic")
            answers = [c.result(timeout=300) for c in clients] + [mcp.result(timeout=300)]
    print(f"--ray: PraX's replica running {ready:.1f} s after the first 200; first queue/join on busy cores "
          f"{first_join:.2f} s")
    for answer in answers:
        assert_answers(answer, "tiny-pragmatic")
    assert first_join < FIRST_JOIN_SECONDS, first_join
    assert "Traceback" not in ray_hub.log, ray_hub.log[-3000:]


@pytest.mark.parametrize("name", sorted(n for n, (_, e) in DECLARED.items() if e.work == "model"))
def test_every_demo_answers_as_in_process(ray_hub, local_hub, images, name):
    call = calls(images)[name]
    remote = predict(ray_hub.url, call)
    assert remote == predict(local_hub, call)
    assert remote  # a real answer, not an empty one


def test_bad_input_gets_the_in_process_sentence(ray_hub, local_hub):
    call = dict(examples=[{"string": "abc", "label": "+"}, {"string": "abc", "label": "-"}], api_name="/synthesize")
    errors = []
    for url in (ray_hub.url, local_hub):
        with pytest.raises(ValueError) as info:  # gradio_client's AppError or ValidationError by route
            predict(url, call)
        errors.append(str(info.value))
    assert errors[0] == errors[1] and "both" in errors[0]
    assert predict(ray_hub.url, dict(examples=EXAMPLES, api_name="/synthesize"))["candidates"]  # still serving


def test_the_operator_sees_the_deployments(ray_hub):
    import os
    import subprocess
    import sys

    port = ray_hub.url.rsplit(":", 1)[1]
    env = checkout_env({**os.environ, "DEMOHUB_STATE_DIR": str(ray_hub.root / "state")})
    out = subprocess.run([sys.executable, "-m", "apps.cli", "stats", "--port", port], env=env, capture_output=True,
                         text=True, timeout=60)
    stats = json.loads(out.stdout)
    assert stats["backend"] == "ray"
    deployed = {demo.id: "tiny-pragmatic" if demo.id == "prax" else demo.weight_sets[0].name for demo in apps.DEMOS}
    assert {name: status for name, status in stats["applications"].items()} == {
        f"demohub-{demo_id}-{name}": "RUNNING" for demo_id, name in deployed.items()}  # serve.yaml's, those on disk


def test_stopping_the_hub_stops_its_ray_instance(ray_hub):
    process = psutil.Process(ray_hub.process.pid)
    ray_processes = [p for p in process.children(recursive=True) if "ray" in " ".join(p.cmdline()).lower()]
    assert ray_processes, "the hub started no Ray processes"
    ray_hub.process.send_signal(signal.SIGTERM)  # what a service manager sends
    assert ray_hub.process.wait(60) == 0
    deadline = time.monotonic() + 30
    while any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in ray_processes):
        assert time.monotonic() < deadline, [p.cmdline()[:2] for p in ray_processes if p.is_running()]
        time.sleep(0.5)
