"""Where models run: device and dtype choice with env overrides, and the ZeroGPU shim."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

_DTYPES = {"float32": "float32", "fp32": "float32", "float16": "float16", "fp16": "float16",
           "half": "float16", "bfloat16": "bfloat16", "bf16": "bfloat16"}


def pick_device() -> str:
    """``DEMOHUB_DEVICE`` if set, else cuda > mps > cpu."""
    forced = os.environ.get("DEMOHUB_DEVICE")
    if forced:
        return forced
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def pick_dtype(device: str | None = None, cpu_dtype: str | None = None, gpu_dtype: str | None = None):
    """``DEMOHUB_DTYPE`` if set; else on GPU the demo's ``gpu_dtype`` or bf16 (fp16 where bf16 is unsupported),
    and on CPU fp32 unless the demo asks for ``cpu_dtype`` (a 7B model does not fit in RAM in fp32)."""
    import torch

    forced = os.environ.get("DEMOHUB_DTYPE")
    if forced:
        try:
            return getattr(torch, _DTYPES[forced.lower()])
        except KeyError:
            raise ValueError(f"DEMOHUB_DTYPE={forced!r} is not one of {sorted(_DTYPES)}") from None
    device = device or pick_device()
    if device.startswith("cuda") and gpu_dtype:
        return getattr(torch, _DTYPES[gpu_dtype])
    if device.startswith("cuda"):
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if device.startswith("mps"):
        return torch.float16
    return getattr(torch, _DTYPES[cpu_dtype]) if cpu_dtype else torch.float32


_slots: dict[str, threading.BoundedSemaphore] = {}
_slots_lock = threading.Lock()


def gpu_concurrency() -> int:
    """How many model calls may use one accelerator at once (``DEMOHUB_GPU_CONCURRENCY``, default 1)."""
    return max(1, int(os.environ.get("DEMOHUB_GPU_CONCURRENCY", "1")))


@contextmanager
def device_slot(device: str | None = None) -> Iterator[None]:
    """Hold the accelerator for one model call (``gpu_concurrency()`` calls at once per device).

    On the CPU there is no lock: demos run side by side, each in its own queue. Only compute goes inside the slot;
    loading and downloading happen before it, so they never make another demo wait for the device.
    """
    device = device or pick_device()
    if device == "cpu":
        yield
        return
    with _slots_lock:
        slot = _slots.setdefault(device, threading.BoundedSemaphore(gpu_concurrency()))
    with slot:
        yield


def on_zero_gpu() -> bool:
    return bool(os.environ.get("SPACES_ZERO_GPU"))


def gpu(fn: Callable | None = None, *, duration: int | Callable[..., int] = 60) -> Any:
    """``spaces.GPU(duration=...)`` on ZeroGPU Spaces, the function unchanged everywhere else.

    Usable as ``@gpu`` or ``@gpu(duration=120)``.
    """

    def wrap(f: Callable) -> Callable:
        if not on_zero_gpu():
            return f
        import spaces  # only present on Spaces

        return spaces.GPU(duration=duration)(f)

    return wrap(fn) if fn is not None else wrap
