"""shared.weights: bundled -> HF cache (no network) -> download, and the message on a miss."""

from pathlib import Path

import pytest

from shared import weights
from shared.errors import WeightsUnavailable
from shared.registry import WeightSet

SHA = "0123456789abcdef0123456789abcdef01234567"
WS = WeightSet("tiny", "test set", repo_id="owner/tiny-model", revision=SHA,
               allow_patterns=("config.json", "*.safetensors"), size_bytes=123_000_000)


def make_hf_cache(root: Path, repo_id: str, sha: str, files: dict[str, bytes], ref: str | None = "main") -> Path:
    """The real huggingface_hub cache layout: blobs/, snapshots/<sha>/<file>, refs/<ref>."""
    repo = root / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo / "snapshots" / sha
    for name, data in files.items():
        blob = repo / "blobs" / f"blob-{abs(hash(name))}"
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        target = snapshot / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(blob)
    if ref:
        (repo / "refs").mkdir(parents=True, exist_ok=True)
        (repo / "refs" / ref).write_text(sha)
    return snapshot


@pytest.fixture
def offline_cache(tmp_path, monkeypatch):
    cache = tmp_path / "hub"
    cache.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("DEMOHUB_CHECKPOINTS", str(tmp_path / "none"))
    return cache


def test_resolves_pinned_revision_from_hf_cache_offline(offline_cache):
    snapshot = make_hf_cache(offline_cache, WS.repo_id, SHA, {"config.json": b"{}", "model.safetensors": b"x"})
    assert weights.state("demo", WS) is weights.WeightState.CACHED
    assert weights.resolve("demo", WS) == snapshot


def test_resolves_main_through_refs(offline_cache):
    ws = WeightSet("tiny", "main", repo_id="owner/tiny-model", allow_patterns=("config.json",))
    snapshot = make_hf_cache(offline_cache, ws.repo_id, SHA, {"config.json": b"{}"})
    assert weights.resolve("demo", ws) == snapshot


def test_incomplete_snapshot_is_not_cached(offline_cache):
    make_hf_cache(offline_cache, WS.repo_id, SHA, {"config.json": b"{}"})  # no *.safetensors
    assert weights.cached_folder("demo", WS) is None
    assert weights.state("demo", WS) is weights.WeightState.UNAVAILABLE


def test_offline_miss_names_repo_size_and_command(offline_cache):
    with pytest.raises(WeightsUnavailable) as info:
        weights.resolve("demo", WS, allow_download=True)
    message = str(info.value)
    assert "owner/tiny-model" in message
    assert "123 MB" in message
    assert "demohub download demo --weights tiny" in message
    assert "HF_HUB_OFFLINE=1" in message
    assert str(offline_cache) not in message, "no server path in a message visitors may read"


def test_no_download_when_not_allowed(offline_cache, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE")
    with pytest.raises(WeightsUnavailable) as info:
        weights.resolve("demo", WS)  # the default: visitors never download
    assert str(info.value) == (
        "The demo weights 'tiny' (123 MB) are not on this server, and visitors cannot start downloads here. "
        "The operator can fetch them with `demohub download demo --weights tiny`.")
    assert weights.state("demo", WS) is weights.WeightState.DOWNLOADABLE


def test_checkpoints_folder_wins_over_cache(offline_cache, tmp_path, monkeypatch):
    make_hf_cache(offline_cache, WS.repo_id, SHA, {"config.json": b"{}", "model.safetensors": b"x"})
    local = tmp_path / "ckpts" / "demo" / "tiny"
    local.mkdir(parents=True)
    (local / "config.json").write_text("{}")
    monkeypatch.setenv("DEMOHUB_CHECKPOINTS", str(tmp_path / "ckpts"))
    assert weights.resolve("demo", WS) == local
    assert weights.state("demo", WS) is weights.WeightState.BUNDLED


def test_bundled_only_set_without_folder_says_how_to_fix(offline_cache):
    ws = WeightSet("ours", "bundled")
    with pytest.raises(WeightsUnavailable, match="DEMOHUB_CHECKPOINTS"):
        weights.resolve("nodemo", ws)
