"""The Hugging Face Hub paths end to end, against tests/fixtures/hub_server.py through the real huggingface_hub client:
`demohub download` for each demo (exactly the allow-listed files, then an offline load), a broken download reported
and retried cleanly, `demohub deploy` (the dry-run plan in one commit), and `demohub serve --streamlit` as a command.
"""

from __future__ import annotations

import fnmatch
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from PIL import Image

import apps
from apps import get_demo, spaces
from shared import weights
from shared.context import load_pipeline
from shared.weights import REPO_ROOT
from tests.commands import checkout_env
from tests.conftest import free_port
from tests.fixtures import tiny_repos
from tests.fixtures.hub_server import HubServer
from tests.fixtures.tiny_tag2text import inferable_config

REPOS = {demo.id: demo.weight_sets[0].repo_id for demo in apps.DEMOS}  # each demo's default official weights


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("repos")
    files = {demo_id: tiny_repos.default_repo(demo_id, tmp) for demo_id in REPOS}
    server = HubServer().start()
    for demo_id, repo_id in REPOS.items():
        ws = get_demo(demo_id).weight_sets[0]
        pinned = ws.revision if len(ws.revision) == 40 else None  # a set pinned in its registration: that commit
        server.add_repo(repo_id, files[demo_id], repo_type=ws.repo_type, sha=pinned)
    yield server, files
    assert server.errors == [], "the Hub test server failed (a 500 of its own, not an injected fault)"
    server.stop()


def hub_env(server: HubServer, tmp_path, **extra) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    return {**env, "HF_ENDPOINT": server.url, "HF_HUB_DISABLE_XET": "1", "HF_HUB_CACHE": str(tmp_path / "cache"),
            "DEMOHUB_CHECKPOINTS": str(tmp_path / "no-bundled"), **extra}


def demohub(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "apps.cli", *args], capture_output=True, text=True,
                          env=checkout_env(env), timeout=300)


def weight_set(demo_id: str):
    return next(ws for ws in get_demo(demo_id).weight_sets if ws.repo_id == REPOS[demo_id])


@pytest.mark.parametrize("demo_id", list(REPOS))
def test_download_fetches_exactly_the_allowed_files_then_loads_offline(hub, demo_id, tmp_path, monkeypatch):
    server, files = hub
    repo_id, ws = REPOS[demo_id], weight_set(demo_id)
    before = len(server.downloads(repo_id))
    done = demohub("download", demo_id, "--weights", ws.name, env=hub_env(server, tmp_path))
    assert done.returncode == 0, done.stderr
    allowed = sorted(f for f in files[demo_id] if any(fnmatch.fnmatch(f, p) for p in ws.allow_patterns))
    assert len(allowed) < len(files[demo_id]), "the repo holds files outside the allow-list"
    assert sorted(server.downloads(repo_id)[before:]) == allowed

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("DEMOHUB_CHECKPOINTS", str(tmp_path / "no-bundled"))
    monkeypatch.setenv("DEMOHUB_CONVERTED_CACHE", str(tmp_path / "converted"))
    assert weights.state(demo_id, ws) is weights.WeightState.CACHED
    folder = weights.resolve(demo_id, ws)  # no download allowed: it must be in the cache now
    assert folder.name == server.repo_sha(repo_id, repo_type=ws.repo_type), "the commit the Hub served"
    assert tiny_repos.folder_files(folder) == {f: files[demo_id][f] for f in allowed}
    pipe = load_pipeline(get_demo(demo_id), ws, folder)
    assert type(pipe).__name__ == get_demo(demo_id).pipeline.rsplit(":", 1)[1]
    if demo_id == "prax":
        result = pipe([{"string": "ab1", "label": "+"}, {"string": "x", "label": "-"}], k=3, num_samples=20, seed=0)
        assert result.n_samples == 20
    if demo_id == "tag2text":  # the checkpoint alone: its sizes were read from its shapes
        assert pipe.config == inferable_config()
        result = pipe(Image.new("RGB", (90, 70), (200, 30, 30)))
        (image,) = result.results
        assert image.caption.strip() and len(image.tags) > 0 and set(image.tag_names) <= set(pipe.config.tags)
    if demo_id == "geodiffusion":
        out = pipe({"camera": "front", "bbox": [["car", 0.1, 0.4, 0.3, 0.6]]}, num_inference_steps=2)
        assert len(out.images) == 1


def test_a_broken_download_is_reported_and_retried_cleanly(hub, tmp_path):
    server, files = hub
    env = hub_env(server, tmp_path)
    server.truncate("pytorch_model.bin", 100, method="GET")
    failed = demohub("download", "prax", "--weights", "pragmatic-ft-listener", env=env)
    assert failed.returncode == 1
    assert "the download failed (error id" in failed.stderr and "nothing half-written is used" in failed.stderr
    assert "Traceback" not in failed.stderr.split("demohub: ")[-1]
    snapshots = list((tmp_path / "cache").glob("models--pragmatic-programs--pragmatic-ft-listener/snapshots/*/*"))
    assert not [p for p in snapshots if p.name == "pytorch_model.bin"], "no half-written file in the snapshot"
    retried = demohub("download", "prax", "--weights", "pragmatic-ft-listener", env=env)
    assert retried.returncode == 0, retried.stderr
    snapshot = next((tmp_path / "cache").glob("models--pragmatic-programs--pragmatic-ft-listener/snapshots/*"))
    assert (snapshot / "pytorch_model.bin").read_bytes() == files["prax"]["pytorch_model.bin"]


def test_deploy_uploads_exactly_the_dry_run_plan_in_one_commit(hub, tmp_path):
    server, _ = hub
    env = hub_env(server, tmp_path, HF_TOKEN="hf_test_token")
    plan = [(path, rel) for path, rel in spaces.upload_plan("prax")]
    commits_before = len(server.commits)
    done = demohub("deploy", "prax", "--space-id", "me/prax-demo", env=env)
    assert done.returncode == 0, done.stderr
    assert f"uploaded {len(plan)} files to Space me/prax-demo" in done.stdout
    created = [r for r in server.created_repos if r.get("name") == "prax-demo"]
    assert created and created[0].get("type") == "space" and created[0].get("sdk") == "gradio"
    commits = server.commits[commits_before:]
    assert len(commits) == 1 and commits[0].repo_type == "space" and commits[0].repo_id == "me/prax-demo"
    assert commits[0].files == {rel: path.read_bytes() for path, rel in plan}


def test_streamlit_hub_starts_as_a_command(tmp_path):
    port = free_port()
    env = checkout_env({**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "cache")})
    process = subprocess.Popen([sys.executable, "-m", "apps.cli", "serve", "--streamlit", "--port", str(port)],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 90
        while True:
            assert process.poll() is None, "demohub serve --streamlit exited"
            try:
                health = requests.get(f"http://127.0.0.1:{port}/_stcore/health", timeout=2)
                if health.status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            assert time.monotonic() < deadline, "no answer within 90 s"
            time.sleep(0.5)
        assert health.text == "ok"
        page = requests.get(f"http://127.0.0.1:{port}/", timeout=10)
        assert page.status_code == 200 and "<noscript>" in page.text  # Streamlit's app shell
        # A service manager's stop: SIGTERM to the process it started. It is Streamlit itself (exec, no child), so
        # nothing is left serving after it exits.
        assert "streamlit" in Path(f"/proc/{process.pid}/cmdline").read_bytes().decode(errors="replace")
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) is not None
        with pytest.raises(requests.ConnectionError):
            requests.get(f"http://127.0.0.1:{port}/_stcore/health", timeout=2)
        leftovers = [pid for pid in os.listdir("/proc") if pid.isdigit() and f"--server.port\0{port}\0".encode()
                     in _cmdline(pid)]
        assert leftovers == [], f"still running after SIGTERM: {leftovers}"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)


def _cmdline(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes() + b"\0"
    except OSError:  # the process ended while we looked
        return b""


def test_a_space_fetches_at_its_start_what_preload_cannot(hub, tmp_path, monkeypatch):
    """MERT's weights live in a Space's repository, which a Space card's preload_from_hub does not read: the MERT
    Space, started as the platform starts it (SPACE_ID set, its app.py run), fetches them itself, once, in the
    background, then serves them; without SPACE_ID nothing is fetched (``demohub download`` is the way)."""
    from apps.spaces import fetch_at_start

    server, files = hub
    demo = get_demo("mert")
    ws = demo.weight_sets[0]
    assert ws.repo_type == "space" and fetch_at_start([demo]) is None, "off a Space it fetches nothing"
    allowed = sorted(f for f in files["mert"] if any(fnmatch.fnmatch(f, p) for p in ws.allow_patterns))
    before = len(server.downloads(ws.repo_id))
    port = free_port()
    env = hub_env(server, tmp_path, SPACE_ID="lab/mert-demo", PORT=str(port), PYTHONPATH=str(REPO_ROOT),
                  DEMOHUB_WARM="0")
    space = subprocess.Popen([sys.executable, str(REPO_ROOT / "spaces" / "mert" / "app.py")], cwd=tmp_path, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # this process reads the Space's cache; the Space has its own env
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("DEMOHUB_CHECKPOINTS", str(tmp_path / "no-bundled"))
    try:
        deadline = time.monotonic() + 120
        # every file asked for, and the last one written into the cache (the server sees a request before the
        # Space has written its file: once the Space was stopped in between, seen in CI)
        while (sorted(server.downloads(ws.repo_id)[before:]) != allowed
               or weights.state("mert", ws) is not weights.WeightState.CACHED):
            assert space.poll() is None, space.stdout.read()[-3000:]
            assert time.monotonic() < deadline, f"fetched {server.downloads(ws.repo_id)[before:]}"
            time.sleep(0.5)
    finally:
        os.killpg(space.pid, signal.SIGTERM)
        space.wait(timeout=30)
    assert weights.state("mert", ws) is weights.WeightState.CACHED
