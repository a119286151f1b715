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


def test_an_allow_pattern_the_repository_lacks_leaves_the_set_never_cached(offline_cache, answering_hub, monkeypatch):
    """docs/adding-a-demo.md: every allow_patterns entry must be in the repository. Both pytorch_model.bin and
    model.safetensors, for a repository holding one: never cached, downloadable while the Hub answers, else
    unavailable; the one file it holds: cached."""
    import dataclasses

    both = WeightSet("both", "test set", repo_id="owner/tiny-model", revision=SHA,
                     allow_patterns=("config.json", "pytorch_model.bin", "model.safetensors"))
    make_hf_cache(offline_cache, both.repo_id, SHA, {"config.json": b"{}", "model.safetensors": b"x"})
    assert weights.cached_folder("demo", both) is None
    assert weights.state("demo", both) is weights.WeightState.DOWNLOADABLE
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert weights.state("demo", both) is weights.WeightState.UNAVAILABLE
    one = dataclasses.replace(both, allow_patterns=("config.json", "model.safetensors"))
    assert weights.state("demo", one) is weights.WeightState.CACHED


def test_offline_miss_names_repo_size_and_command(offline_cache):
    with pytest.raises(WeightsUnavailable) as info:
        weights.resolve("demo", WS, allow_download=True)
    message = str(info.value)
    assert "owner/tiny-model" in message
    assert "123 MB" in message
    assert "demohub download demo --weights tiny" in message
    assert "HF_HUB_OFFLINE=1" in message
    assert str(offline_cache) not in message, "no server path in a message visitors may read"


def test_no_download_when_not_allowed(offline_cache, answering_hub):
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


def test_weights_are_downloadable_only_while_the_hub_answers(offline_cache, answering_hub, monkeypatch):
    assert weights.state("demo", WS) is weights.WeightState.DOWNLOADABLE
    assert weights.state("demo", WS) is weights.WeightState.DOWNLOADABLE
    assert answering_hub.requests == 1, "the answer is remembered: one probe, not one per page render"
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert weights.state("demo", WS) is weights.WeightState.UNAVAILABLE
    assert weights.hub_problem() == "HF_HUB_OFFLINE=1 is set" and answering_hub.requests == 1


def test_an_unreachable_hub_makes_weights_unavailable_within_the_probe_time(offline_cache, monkeypatch):
    import socket
    import time

    from tests.conftest import free_port

    monkeypatch.delenv("HF_HUB_OFFLINE")
    silent = socket.socket()  # accepts connections and never answers: a firewalled Hub
    silent.bind(("127.0.0.1", free_port()))
    silent.listen(8)
    endpoint = f"http://127.0.0.1:{silent.getsockname()[1]}"
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    try:
        start = time.monotonic()
        assert weights.state("demo", WS) is weights.WeightState.UNAVAILABLE
        assert time.monotonic() - start < weights.HUB_PROBE_SECONDS + 1.5
        assert weights.hub_problem().startswith(f"{endpoint} did not answer within 2 s")
        start = time.monotonic()
        assert weights.state("demo", WS) is weights.WeightState.UNAVAILABLE
        assert time.monotonic() - start < 0.5, "the failed probe is remembered too"
    finally:
        silent.close()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{free_port()}")  # nothing listening: refused at once
    assert weights.state("demo", WS) is weights.WeightState.UNAVAILABLE


def test_a_visitor_reads_no_network_library_words_the_operator_does(monkeypatch, caplog):
    """The page's sentence on an unreachable Hub names the address and the wait; the library's reason (an errno,
    'Name or service not known') is in the log and in `demohub doctor` (detail), not on the page."""
    import logging

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://no-such-host.invalid")
    weights.forget_hub_probe()
    with caplog.at_level(logging.WARNING, logger="demohub"):
        sentence = weights.hub_problem()
    assert sentence == "http://no-such-host.invalid did not answer within 2 s", sentence
    assert "Errno" not in sentence and "(" not in sentence
    detail = weights.hub_problem(detail=True)
    assert detail.startswith(sentence + " (") and "Errno" in detail  # remembered: the same probe, its reason
    assert "cannot be reached" in caplog.text and "Errno" in caplog.text
    weights.forget_hub_probe()


def test_a_failed_download_makes_its_weights_unavailable_until_the_retry_time(offline_cache, answering_hub,
                                                                                 monkeypatch):
    """The Hub answers, but holds nothing: the download fails, and the state says so instead of "downloadable"."""
    monkeypatch.setattr(weights._downloads, "failures", {})
    assert weights.state("demo", WS) is weights.WeightState.DOWNLOADABLE
    with pytest.raises(WeightsUnavailable, match="could not be reached or refused"):
        weights.download("demo", WS)
    assert weights.state("demo", WS) is weights.WeightState.UNAVAILABLE
    other = WeightSet("other", "another set", repo_id="owner/other", revision=SHA, size_bytes=1)
    assert weights.state("demo", other) is weights.WeightState.DOWNLOADABLE, "only the failed set"
