"""Reading official weight files safely, and caching a safetensors conversion next to the HF cache.

Pickles (``.pth``, ``.bin``, ``.ckpt``) are only read with ``torch.load(weights_only=True)``: a file that carries
code is refused. Truncated or corrupt files give a ``CheckpointError`` that says what to do. The conversion cache is
an optimisation: a read-only or full disk only costs speed, never a failure.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import logging
import mmap
import os
import pickle
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from shared.errors import CheckpointError
from shared.weights import hf_cache_dir

log = logging.getLogger(__name__)


def load_torch_checkpoint(path: str | Path, safe_globals: tuple = ()):
    """``torch.load(weights_only=True)`` (memory-mapped for zip files); ``safe_globals`` lists the few extra classes
    a known checkpoint pickles beside its tensors (e.g. ``argparse.Namespace``)."""
    import torch

    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path.name} is missing from the weights folder; re-download the weights.")
    try:
        with torch.serialization.safe_globals(list(safe_globals)):
            return torch.load(path, map_location="cpu", weights_only=True, mmap=_is_zip(path))
    except pickle.UnpicklingError as error:
        raise CheckpointError(
            f"{path.name} contains objects other than plain weights (possibly code), so it was refused "
            "(weights_only loading). Only use checkpoints from the official repository."
        ) from error
    except (RuntimeError, EOFError, OSError, ValueError) as error:
        raise CheckpointError(_corrupt(path)) from error


def load_torch_state(path: str | Path, key: str | None = None, safe_globals: tuple = ()) -> dict:
    """The tensors of a pickled checkpoint (optionally under ``key``), read with ``weights_only=True``."""
    import torch

    path = Path(path)
    obj = load_torch_checkpoint(path, safe_globals)
    if key is not None:
        if not isinstance(obj, dict) or key not in obj:
            raise CheckpointError(f"{path.name} has no '{key}' entry; is it the right file?")
        obj = obj[key]
    if not isinstance(obj, dict):
        raise CheckpointError(f"{path.name} does not hold a state dict.")
    return {k: v for k, v in obj.items() if isinstance(v, torch.Tensor)}


def stream_torch_state(path: str | Path) -> Iterator[tuple[str, Any]]:
    """Each ``(name, tensor)`` of a pickled state dict in turn (``weights_only=True``, memory-mapped), for loading a
    checkpoint larger than what memory holds beside the model: once the caller asks for the next tensor, the pages
    the previous one occupied leave this process (a 10 GB Llama shard then costs one tensor at a time, not 10 GB of
    resident file pages). The caller copies what it keeps: a kept tensor would read its pages back from the file."""
    path = Path(path)
    state = load_torch_state(path)
    mapped = _is_zip(path)  # load_torch_checkpoint maps zip files; a legacy pickle is in anonymous memory
    for name in list(state):
        tensor = state.pop(name)
        yield name, tensor
        if mapped:
            _drop_pages(tensor)
        del tensor


def _drop_pages(tensor) -> None:
    """Give the file-mapped pages that lie wholly inside ``tensor``'s bytes back to the kernel (``MADV_DONTNEED``):
    the mapping is private and read-only in use, so they are only dropped from this process, never changed."""
    page = mmap.PAGESIZE
    start = -(-tensor.data_ptr() // page) * page
    end = (tensor.data_ptr() + tensor.numel() * tensor.element_size()) // page * page
    if end > start and hasattr(mmap, "MADV_DONTNEED"):  # the process's own symbols hold libc's madvise
        ctypes.CDLL(None).madvise(ctypes.c_void_p(start), ctypes.c_size_t(end - start), mmap.MADV_DONTNEED)


def load_safetensors(path: str | Path, owned: bool = False) -> dict:
    """The tensors of a safetensors file: views of the file, memory-mapped (aligned to their element's size only), or
    with ``owned`` each copied into memory of its own, aligned as PyTorch allocates (64 bytes: PyTorch's int8 CPU
    kernel reads its weights with aligned vector loads, and a weight read from the file crashed it), the file's
    pages given back as it goes (memory holds the copies and one tensor of the file)."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path.name} is missing from the weights folder; re-download the weights.")
    try:
        tensors = load_file(str(path))
        if owned:
            for name in list(tensors):
                mapped = tensors[name]
                tensors[name] = mapped.clone()
                _drop_pages(mapped)
                del mapped
    except (SafetensorError, OSError, ValueError, RuntimeError) as error:
        raise CheckpointError(_corrupt(path)) from error
    return tensors


def converted_path(source: str | Path, suffix: str = ".safetensors") -> Path:
    """Where the safetensors conversion of ``source`` is cached: keyed by the file's path, size and mtime."""
    source = Path(source).resolve()
    return cache_path(source.stem, source, suffix=suffix)


def cache_path(name: str, *parts: str | bytes | Path, suffix: str = ".safetensors") -> Path:
    """Where a file made from ``parts`` is cached (``DEMOHUB_CONVERTED_CACHE``, else ``demohub-converted`` beside the
    Hugging Face cache): ``name-<digest><suffix>``, the digest over every part, a file by its resolved path, size and
    modification time (a new download changes them; a missing one counts as missing), text and bytes as they are."""
    digest = hashlib.sha256()
    for part in parts:
        if isinstance(part, Path):
            stat = part.resolve().stat() if part.exists() else None
            part = f"{part.resolve()}|{stat.st_size}|{stat.st_mtime_ns}" if stat else f"{part.resolve()}|missing"
        digest.update(part.encode() if isinstance(part, str) else part)
        digest.update(b"\0")
    return converted_root() / f"{name}-{digest.hexdigest()[:16]}{suffix}"


def converted_root() -> Path:
    """The conversion cache: ``DEMOHUB_CONVERTED_CACHE``, else ``demohub-converted`` beside the Hugging Face cache."""
    return Path(os.environ.get("DEMOHUB_CONVERTED_CACHE") or hf_cache_dir().parent / "demohub-converted")


def tensors_digest(tensors: dict) -> str:
    """A digest of ``tensors``' names, dtypes, shapes and values (a key for ``cache_path``)."""
    import torch

    digest = hashlib.sha256()
    for name in sorted(tensors):
        tensor = tensors[name].detach().cpu().contiguous()
        digest.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}".encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy() if tensor.numel() else b"")
    return digest.hexdigest()


def save_safetensors(tensors: dict, target: str | Path, metadata: dict[str, str] | None = None,
                     replaces: str | None = None) -> bool:
    """Write atomically (a temporary file of this writer's own, then a rename). On a read-only or full disk, or
    where the file would leave less than ``DISK_RESERVE_BYTES`` free, log and return False. ``replaces``: a pattern of
    the older files in the target's folder that this one supersedes (removed once it is written)."""
    from safetensors.torch import save_file

    from shared.weights import DISK_RESERVE_BYTES, free_bytes

    target = Path(target)
    # a name of this writer's own: two processes caching the same file at once (replicas starting together) each write
    # a whole one, and the last rename wins, where a shared name would interleave their bytes into one
    tmp = target.with_name(f"{target.name}.{os.getpid()}-{threading.get_ident()}.partial")
    size = sum(v.numel() * v.element_size() for v in tensors.values())
    if free_bytes(target.parent) < size + DISK_RESERVE_BYTES:
        log.warning("Not caching %s (%.1f GB): the disk would keep less than %.0f GB free. Loading stays correct, "
                    "only slower.", target, size / 1e9, DISK_RESERVE_BYTES / 1e9)
        return False
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        save_file({k: v.contiguous() for k, v in tensors.items()}, str(tmp), metadata=metadata)
        os.replace(tmp, target)
    except (OSError, RuntimeError, ValueError) as error:  # the disk, or tensors safetensors refuses (shared memory)
        with contextlib.suppress(OSError):  # the folder itself may be what is unwritable
            tmp.unlink(missing_ok=True)
        reason = {errno.ENOSPC: "the disk is full", errno.EROFS: "the cache is read-only",
                  errno.EACCES: "the cache is not writable"}.get(getattr(error, "errno", None), str(error))
        log.warning("Not caching the converted weights at %s: %s. Loading stays correct, only slower.",
                    target, reason)
        return False
    for older in target.parent.glob(replaces) if replaces else ():
        if older != target and older.suffix == target.suffix:
            with contextlib.suppress(OSError):
                older.unlink()
    return True


def _is_zip(path: Path) -> bool:
    with path.open("rb") as f:
        return f.read(4) == b"PK\x03\x04"


def _corrupt(path: Path) -> str:
    """The visitor's sentence (the library's error is its cause: the log has it under the error id)."""
    return f"{path.name} is truncated or corrupt. Delete it and download it again (`demohub download ...`)."
