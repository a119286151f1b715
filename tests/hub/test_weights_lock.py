"""Reproducible weights: `demohub download` records the commit it received; later resolves and downloads use it even
after the Hub's branch moves; `demohub list`/`doctor` say pinned or unpinned; a read-only checkout writes the lock
under the user's cache. Against tests/fixtures/hub_server.py through the real huggingface_hub client."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from apps import get_demo, spaces
from shared import weights
from shared.registry import WeightSet
from tests.commands import checkout_env
from tests.fixtures import tiny_repos
from tests.fixtures.hub_server import HubServer

REPO = "pragmatic-programs/pragmatic-ft-listener"


@pytest.fixture()
def hub():
    server = HubServer().start()
    yield server
    assert server.errors == [], "the Hub test server failed (a 500 of its own, not an injected fault)"
    server.stop()


def env_for(server: HubServer, tmp_path, **extra) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    return {**env, "HF_ENDPOINT": server.url, "HF_HUB_DISABLE_XET": "1", "HF_HUB_CACHE": str(tmp_path / "cache"),
            "DEMOHUB_CHECKPOINTS": str(tmp_path / "no-bundled"), "DEMOHUB_WEIGHTS_LOCK": str(tmp_path / "w.lock"),
            **extra}


def demohub(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "apps.cli", *args], capture_output=True, text=True,
                          env=checkout_env(env), timeout=300)


def list_line(out: str, name: str) -> str:
    return next(line for line in out.splitlines() if line.strip().startswith(name + " "))


def test_download_pins_the_commit_and_later_resolves_keep_it_when_main_moves(hub, tmp_path):
    files = tiny_repos.prax_listener()
    first = hub.add_repo(REPO, files)
    env = env_for(hub, tmp_path)
    ws = get_demo("prax").weight_set("pragmatic-ft-listener")

    before = demohub("list", env=env)
    assert "unpinned (main)" in list_line(before.stdout, ws.name)

    done = demohub("download", "prax", "--weights", ws.name, env=env)
    assert done.returncode == 0, done.stderr
    lock = json.loads((tmp_path / "w.lock").read_text())
    entry = lock["weights"]["prax/pragmatic-ft-listener"]
    assert entry["revision"] == first and entry["repo_id"] == REPO and entry["branch"] == "main"
    assert f"pinned {first[:12]} (lock)" in list_line(demohub("list", env=env).stdout, ws.name)

    # The branch moves on the Hub (new config): offline resolves still give the pinned commit's snapshot ...
    moved = hub.add_repo(REPO, {**files, "config.json": files["config.json"].replace(b"{", b'{"moved": 1, ', 1)})
    assert moved != first
    offline = {**env, "HF_HUB_OFFLINE": "1"}
    code = ("from apps import get_demo; from shared import weights; "
            "print(weights.resolve('prax', get_demo('prax').weight_set('pragmatic-ft-listener')).name)")
    resolved = subprocess.run([sys.executable, "-c", code], env=offline, capture_output=True, text=True, timeout=120)
    assert resolved.stdout.strip() == first, resolved.stderr

    # ... and a fresh download elsewhere (an empty cache) fetches the pinned commit, not the new main.
    again = demohub("download", "prax", "--weights", ws.name, env={**env, "HF_HUB_CACHE": str(tmp_path / "cache2")})
    assert again.returncode == 0, again.stderr
    snapshots = list((tmp_path / "cache2").glob("models--*/snapshots/*"))
    assert [p.name for p in snapshots] == [first]
    assert b'"moved"' not in (snapshots[0] / "config.json").read_bytes()

    doctor = demohub("doctor", env=env)
    assert f"Weights lock  {tmp_path / 'w.lock'}" in doctor.stdout


def test_already_cached_weights_get_pinned_by_download(hub, tmp_path):
    sha = hub.add_repo(REPO, tiny_repos.prax_listener())
    env = env_for(hub, tmp_path)
    from huggingface_hub import snapshot_download

    ws = get_demo("prax").weight_set("pragmatic-ft-listener")
    snapshot_download(REPO, allow_patterns=list(ws.allow_patterns), cache_dir=tmp_path / "cache", endpoint=hub.url)
    done = demohub("download", "prax", "--weights", ws.name, env=env)
    assert "already here" in done.stdout and f"Pinned to {sha[:12]}" in done.stdout, done.stdout + done.stderr
    assert json.loads((tmp_path / "w.lock").read_text())["weights"]["prax/pragmatic-ft-listener"]["revision"] == sha


def test_read_only_checkout_writes_the_lock_under_the_user_cache(tmp_path, monkeypatch):
    checkout = tmp_path / "checkpoints"
    checkout.mkdir()
    monkeypatch.setattr(weights, "BUNDLED_ROOT", checkout)
    monkeypatch.delenv("DEMOHUB_WEIGHTS_LOCK")
    monkeypatch.setenv("DEMOHUB_STATE_DIR", str(tmp_path / "state"))
    ws = WeightSet("set", "a test set", repo_id="owner/repo")
    assert weights.lock_path() == checkout / "weights.lock"
    # read-only as seen by this process (root may write anywhere, so the folder mode alone would not show it)
    monkeypatch.setattr(weights, "_writable", lambda folder: False)
    assert weights.lock_path() == tmp_path / "state" / "weights.lock"
    assert weights.record_pin("demo", ws, "a" * 40) == tmp_path / "state" / "weights.lock"
    assert weights.pin("demo", ws) == weights.Pin("a" * 40, "lock")
    assert not (checkout / "weights.lock").exists()


def test_pin_sources_and_what_a_lock_cannot_override(tmp_path, monkeypatch):
    monkeypatch.setenv("DEMOHUB_WEIGHTS_LOCK", str(tmp_path / "w.lock"))
    branch = WeightSet("b", "on a branch", repo_id="owner/repo")
    sha = WeightSet("s", "pinned in the registry", repo_id="owner/repo", revision="c" * 40)
    bundled = WeightSet("local", "ours")
    assert str(weights.pin("demo", branch)) == "unpinned (main)"
    assert str(weights.pin("demo", bundled)) == "bundled"
    assert weights.pin("demo", sha) == weights.Pin("c" * 40, "registry")
    assert weights.record_pin("demo", sha, "d" * 40) is None  # a registry SHA is not overridden
    assert weights.record_pin("demo", branch, "not-a-sha") is None
    weights.record_pin("demo", branch, "e" * 40)
    assert weights.pin("demo", branch).revision == "e" * 40
    # an entry for another repository (the registration changed since) is not used
    moved = WeightSet("b", "moved to another repo", repo_id="other/repo")
    assert not weights.pin("demo", moved).pinned


def test_space_preloads_and_uploads_the_pinned_commit(tmp_path, monkeypatch):
    monkeypatch.setenv("DEMOHUB_WEIGHTS_LOCK", str(tmp_path / "w.lock"))
    demo = get_demo("tag2text")
    ws = next(ws for ws in demo.weight_sets if ws.repo_id)
    assert weights.pin(demo.id, ws).revision in ("main", ws.revision)
    weights.record_pin(demo.id, ws, "f" * 40)
    assert spaces.demo_space(demo).readme.count("f" * 40) == 1  # preload_from_hub names the commit
    plan = dict((rel, path) for path, rel in spaces.upload_plan("tag2text"))
    assert plan["checkpoints/weights.lock"] == tmp_path / "w.lock"
