"""shared.checkpoints: weights_only loading, clear messages on corrupt or unsafe files, tolerant conversion cache."""

import errno
import os

import pytest
import torch

from benchmarks.common import proc_status
from shared import checkpoints
from shared.errors import CheckpointError


class Payload:
    """Unpickling this would run code: weights_only loading must refuse it."""

    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_loads_plain_state_under_key(tmp_path):
    path = tmp_path / "model.pth"
    torch.save({"model": {"w": torch.ones(2), "step": 3}, "optimizer": {}}, path)
    state = checkpoints.load_torch_state(path, key="model")
    assert list(state) == ["w"] and torch.equal(state["w"], torch.ones(2))


def test_pickle_with_code_is_refused(tmp_path):
    path = tmp_path / "evil.pth"
    torch.save({"model": {"w": torch.ones(1)}, "x": Payload()}, path)
    with pytest.raises(CheckpointError, match="refused"):
        checkpoints.load_torch_state(path, key="model")


def test_truncated_pth_is_a_clear_error(tmp_path):
    path = tmp_path / "model.pth"
    torch.save({"model": {"w": torch.randn(1000)}}, path)
    path.write_bytes(path.read_bytes()[:300])
    with pytest.raises(CheckpointError, match="truncated or corrupt"):
        checkpoints.load_torch_state(path)


def test_missing_key_and_missing_file(tmp_path):
    path = tmp_path / "model.pth"
    torch.save({"state_dict": {}}, path)
    with pytest.raises(CheckpointError, match="no 'model' entry"):
        checkpoints.load_torch_state(path, key="model")
    with pytest.raises(CheckpointError, match="missing"):
        checkpoints.load_torch_state(tmp_path / "nope.pth")


def test_safetensors_roundtrip_and_truncation(tmp_path):
    target = tmp_path / "out" / "m.safetensors"
    assert checkpoints.save_safetensors({"w": torch.arange(6.0).view(2, 3).t()}, target)
    assert torch.equal(checkpoints.load_safetensors(target)["w"], torch.arange(6.0).view(2, 3).t())
    target.write_bytes(target.read_bytes()[:-8])
    with pytest.raises(CheckpointError, match="truncated or corrupt"):
        checkpoints.load_safetensors(target)


def test_extra_safe_globals_are_allowed_only_when_named(tmp_path):
    import argparse

    path = tmp_path / "unimol.pt"
    torch.save({"model": {"w": torch.ones(1)}, "args": argparse.Namespace(arch="unimol")}, path)
    with pytest.raises(CheckpointError, match="refused"):
        checkpoints.load_torch_checkpoint(path)
    obj = checkpoints.load_torch_checkpoint(path, safe_globals=(argparse.Namespace,))
    assert obj["args"].arch == "unimol"


def test_checkpoint_errors_are_weights_unavailable():
    from shared.errors import WeightsUnavailable

    assert issubclass(CheckpointError, WeightsUnavailable)


@pytest.mark.parametrize(("code", "reason"), [(errno.ENOSPC, "disk is full"), (errno.EROFS, "read-only")])
def test_full_or_read_only_disk_during_conversion_is_tolerated(tmp_path, monkeypatch, caplog, code, reason):
    import safetensors.torch

    def failing_write(tensors, filename, metadata=None):
        with open(filename, "wb") as f:
            f.write(b"partial")
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(safetensors.torch, "save_file", failing_write)
    target = tmp_path / "m.safetensors"
    assert checkpoints.save_safetensors({"w": torch.ones(1)}, target) is False
    assert not target.exists() and not list(tmp_path.glob("*.partial")), "no half-written file left behind"
    assert reason in caplog.text


def test_converted_path_changes_with_the_source(tmp_path, monkeypatch):
    monkeypatch.setenv("DEMOHUB_CONVERTED_CACHE", str(tmp_path / "conv"))
    source = tmp_path / "a.pth"
    source.write_bytes(b"1")
    first = checkpoints.converted_path(source)
    assert first.parent == tmp_path / "conv" and first.name.startswith("a-") and first.suffix == ".safetensors"
    source.write_bytes(b"22")
    assert checkpoints.converted_path(source) != first


def resident_file_mib() -> int:
    """This process's resident file-backed memory (``RssFile``), in MiB."""
    try:
        return proc_status("RssFile") // 2**20
    except (OSError, KeyError):
        pytest.skip("no RssFile in /proc/self/status (not Linux)")


def test_streaming_a_state_dict_gives_every_tensor_and_holds_one_at_a_time(tmp_path):
    """``stream_torch_state`` yields the state dict's tensors in order with their values, and a tensor's file pages
    leave the process once the next is asked for: reading a 64 MiB file keeps a few MiB resident, where holding
    the loaded dict (the control, same reads) keeps all 64."""
    path = tmp_path / "pytorch_model-00001-of-00002.bin"
    torch.save({f"layers.{i}.weight": torch.full((512, 1024), float(i)) for i in range(32)}, path)  # 64 MiB
    growth = {}
    for kind in ("stream", "whole"):
        before = peak = resident_file_mib()
        seen = []
        pairs = checkpoints.stream_torch_state(path) if kind == "stream" else \
            checkpoints.load_torch_state(path).items()
        for name, tensor in pairs:
            seen.append((name, float(tensor.sum())))  # reads every page of the tensor
            peak = max(peak, resident_file_mib())
        del pairs
        assert seen == [(f"layers.{i}.weight", 512 * 1024 * i) for i in range(32)]
        growth[kind] = peak - before
    assert growth["whole"] >= 48 and growth["stream"] <= 8, growth


def test_a_cache_write_that_would_fill_the_disk_is_skipped_with_a_log(tmp_path, monkeypatch, caplog):
    """A cached file is an optimisation: where writing it would leave less than the reserve free, it is not written
    (logged; the caller loads as without a cache) and the disk keeps its room for everything else."""
    import shared.weights

    monkeypatch.setattr(shared.weights, "free_bytes", lambda folder: shared.weights.DISK_RESERVE_BYTES + 100)
    target = tmp_path / "m.safetensors"
    assert checkpoints.save_safetensors({"w": torch.ones(64)}, target) is False  # 256 bytes: over the reserve
    assert not target.exists() and "would keep less than" in caplog.text
    assert checkpoints.save_safetensors({"w": torch.ones(16)}, target) and target.is_file()  # 64 bytes fit


def test_cache_paths_and_digests_follow_their_parts(tmp_path, monkeypatch):
    monkeypatch.setenv("DEMOHUB_CONVERTED_CACHE", str(tmp_path / "conv"))
    source = tmp_path / "a.bin"
    source.write_bytes(b"1")
    first = checkpoints.cache_path("m", source, "int4")
    assert first.parent == tmp_path / "conv" and first.name.startswith("m-") and first.suffix == ".safetensors"
    assert checkpoints.cache_path("m", source, "int4") == first != checkpoints.cache_path("m", source, "int8")
    assert checkpoints.cache_path("m", source, "in", "t4") != first  # parts are separated
    tensors = {"a": torch.ones(2, 3, dtype=torch.bfloat16), "b": torch.zeros(0)}
    digest = checkpoints.tensors_digest(tensors)
    assert digest == checkpoints.tensors_digest(dict(reversed(tensors.items())))
    for other in ({**tensors, "a": torch.ones(3, 2, dtype=torch.bfloat16)},
                  {**tensors, "a": torch.ones(2, 3, dtype=torch.float16)},
                  {**tensors, "a": tensors["a"] * 2}, {"c": tensors["a"], "b": tensors["b"]}):
        assert checkpoints.tensors_digest(other) != digest


def test_writers_caching_the_same_file_at_once_leave_one_whole_file(tmp_path, monkeypatch):
    """Replicas that start together may cache the same conversion at once: each writes a temporary file of its own
    and the last rename wins, so the file is always one writer's whole file (a shared temporary name interleaved
    their bytes: a file of the right shapes holding wrong values)."""
    import threading

    import safetensors.torch

    save_file, started, names = safetensors.torch.save_file, threading.Barrier(2), []

    def together(tensors, filename, metadata=None):
        names.append(filename)
        started.wait(timeout=10)  # both writers are writing before either renames
        save_file(tensors, filename, metadata=metadata)

    monkeypatch.setattr(safetensors.torch, "save_file", together)
    target = tmp_path / "m.safetensors"
    values = [torch.full((256,), float(i)) for i in range(2)]
    writers = [threading.Thread(target=checkpoints.save_safetensors, args=({"w": v}, target)) for v in values]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    assert len(set(names)) == 2, "each writer has a temporary file of its own"
    written = checkpoints.load_safetensors(target)["w"]
    assert any(torch.equal(written, v) for v in values) and not list(tmp_path.glob("*.partial"))


def test_tensors_the_format_refuses_are_not_cached_and_the_load_goes_on(tmp_path, caplog):
    """A cache write never fails a load: tensors that share memory (which safetensors refuses) are logged and not
    written, as a full disk is."""
    base = torch.arange(8.0)
    target = tmp_path / "m.safetensors"
    assert checkpoints.save_safetensors({"a": base, "b": base[2:]}, target) is False
    assert not target.exists() and not list(tmp_path.glob("*.partial")) and "Not caching" in caplog.text
