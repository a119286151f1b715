"""Where models run: device and dtype choice with env overrides, whether this CPU has native bf16, and the ZeroGPU
shim."""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger("demohub")

_DTYPES = {"float32": "float32", "fp32": "float32", "float16": "float16", "fp16": "float16",
           "half": "float16", "bfloat16": "bfloat16", "bf16": "bfloat16"}
SHORT_NAMES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}
# CPU features that multiply bf16 matrices in hardware, as Linux's /proc/cpuinfo names them: x86 AVX512-BF16 and
# AMX-BF16, Arm's BF16 extension. Without one, oneDNN emulates bf16 with fp32 instructions plus conversions.
NATIVE_BF16_FEATURES = ("avx512_bf16", "amx_bf16", "bf16")
QUANTIZE_MODES = ("none", "int8", "int4")  # DEMOHUB_QUANTIZE: weight-only, on a CPU, for demos that declare it


def quantize_setting() -> str:
    """``DEMOHUB_QUANTIZE`` as one of ``QUANTIZE_MODES`` (unset or empty: "none"; no torch needed); anything else is
    a ValueError whose message says what to set."""
    raw = os.environ.get("DEMOHUB_QUANTIZE", "")
    mode = raw.strip().lower() or "none"
    if mode not in QUANTIZE_MODES:
        raise ValueError(f"DEMOHUB_QUANTIZE={raw!r} is not a quantisation this hub knows: set it to int8 or int4 "
                         "(weight-only, on a CPU), or leave it unset for the demo's own dtype.")
    return mode


def quantize_problem() -> str | None:
    """What is wrong with ``DEMOHUB_QUANTIZE`` here, in a sentence, or None: an unknown value, or a kind this machine's
    PyTorch cannot run (tried on a tiny layer, so torch is imported only when the operator opted in)."""
    try:
        mode = quantize_setting()
    except ValueError as error:
        return str(error)
    if mode == "none":
        return None
    from shared.quantize import unsupported

    why = unsupported(mode)
    return None if why is None else f"DEMOHUB_QUANTIZE={mode} cannot run here: {why}. Unset it, or try the other kind."


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


def _default_dtype(device: str, cpu_dtype: str | None, gpu_dtype: str | None) -> str | None:
    """The dtype name the policy gives a demo on ``device`` without DEMOHUB_DTYPE (no torch needed); None on a CUDA
    GPU without the demo's ``gpu_dtype``, where bf16 or fp16 depends on the GPU."""
    if device.startswith("cuda"):
        return _DTYPES[gpu_dtype] if gpu_dtype else None
    if device.startswith("mps"):
        return "float16"
    return _DTYPES[cpu_dtype] if cpu_dtype else "float32"


def pick_dtype(device: str | None = None, cpu_dtype: str | None = None, gpu_dtype: str | None = None):
    """``DEMOHUB_DTYPE`` if set; else on GPU the demo's ``gpu_dtype`` or bf16 (fp16 where bf16 is unsupported),
    and on CPU fp32 unless the demo asks for ``cpu_dtype`` (a 7B model does not fit in RAM in fp32)."""
    import torch

    forced = os.environ.get("DEMOHUB_DTYPE")
    if forced:
        try:
            dtype = getattr(torch, _DTYPES[forced.lower()])
        except KeyError:
            raise ValueError(f"DEMOHUB_DTYPE={forced!r} is not one of {sorted(_DTYPES)}") from None
        if dtype is torch.bfloat16 and (device or pick_device()).startswith("cpu"):
            _warn_if_bf16_emulated()
        return dtype
    name = _default_dtype(device or pick_device(), cpu_dtype, gpu_dtype)
    if name is None:
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return getattr(torch, name)


def dtype_plan(cpu_dtype: str | None = None, gpu_dtype: str | None = None) -> str:
    """What ``pick_dtype`` will choose for a demo, in words, without importing torch (pages are built before any model
    loads, and the hub starts without torch): e.g. "bf16 (DEMOHUB_DTYPE=bf16)", or "fp32 on the CPU; bf16 (fp16 where
    unsupported) on a GPU" where neither DEMOHUB_DTYPE nor DEMOHUB_DEVICE settles it."""
    forced = os.environ.get("DEMOHUB_DTYPE", "")
    if forced.lower() in _DTYPES:
        return f"{SHORT_NAMES[_DTYPES[forced.lower()]]} (DEMOHUB_DTYPE={forced})"
    on_cpu = f"{SHORT_NAMES[_default_dtype('cpu', cpu_dtype, gpu_dtype)]} on the CPU"
    gpu_name = _default_dtype("cuda", cpu_dtype, gpu_dtype)
    on_gpu = f"{SHORT_NAMES[gpu_name] if gpu_name else 'bf16 (fp16 where unsupported)'} on a GPU"
    device = os.environ.get("DEMOHUB_DEVICE", "")
    if device.startswith("cpu"):
        return on_cpu
    if device.startswith("cuda"):
        return on_gpu
    if device.startswith("mps"):
        return f"{SHORT_NAMES[_default_dtype('mps', cpu_dtype, gpu_dtype)]} on Apple's GPU (MPS)"
    return f"{on_cpu}; {on_gpu}"


@dataclass(frozen=True)
class Bf16Support:
    """Whether this CPU multiplies bf16 matrices in hardware: ``features`` names the instructions that do (empty: bf16
    is emulated, slower than fp32)."""

    features: tuple[str, ...]

    @property
    def native(self) -> bool:
        return bool(self.features)

    def summary(self, in_use: bool = False) -> str:
        """One line for ``demohub doctor``; ``in_use``: the CPU runs bf16 now (DEMOHUB_DTYPE=bf16)."""
        if self.native:
            advice = "in use (DEMOHUB_DTYPE=bf16)" if in_use else "opt in with DEMOHUB_DTYPE=bf16"
            return f"native ({', '.join(self.features)}): {advice}"
        advice = "DEMOHUB_DTYPE=bf16 is set: unset it" if in_use else "keep fp32"
        return f"emulated (no AVX512-BF16, AMX-BF16 or Arm BF16): slower than fp32, {advice}"


def native_bf16_features(flags: Iterable[str]) -> tuple[str, ...]:
    """The native-bf16 features among a CPU's feature flags, in ``NATIVE_BF16_FEATURES`` order."""
    present = {flag.lower() for flag in flags}
    return tuple(feature for feature in NATIVE_BF16_FEATURES if feature in present)


def cpu_flags(cpuinfo: str | os.PathLike = "/proc/cpuinfo") -> set[str]:
    """The CPU's feature flags as Linux lists them (x86 ``flags``, Arm ``Features``); empty without that file."""
    try:
        text = Path(cpuinfo).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() in ("flags", "features"):
            return set(value.split())
    return set()


def _torch_cpu_flags() -> set[str]:
    """Native-bf16 flags from torch's own CPU probe, for systems without /proc/cpuinfo (every AMX CPU so far has
    AMX-BF16, so AMX tiles count as such). These helpers are private (``torch.cpu._is_*``), so each is looked up and
    tried defensively. ``torch.ops.mkldnn._is_mkldnn_bf16_supported()`` does not tell: it is also true on AVX-512 CPUs
    where oneDNN emulates bf16."""
    try:
        import torch.cpu
    except ImportError:
        return set()
    found = set()
    for flag, probe in (("avx512_bf16", "_is_avx512_bf16_supported"), ("amx_bf16", "_is_amx_tile_supported")):
        try:
            if getattr(torch.cpu, probe, lambda: False)():
                found.add(flag)
        except Exception:  # a probe that exists but cannot run on this build says nothing either way
            continue
    return found


@functools.cache
def cpu_bf16_support() -> Bf16Support:
    """This machine's ``Bf16Support``: /proc/cpuinfo's flags on Linux, torch's CPU probe elsewhere."""
    return Bf16Support(native_bf16_features(cpu_flags() or _torch_cpu_flags()))


@functools.cache
def _warn_if_bf16_emulated() -> None:
    """Log once per process when the operator forces bf16 on a CPU that emulates it (it still runs, only slower)."""
    if not cpu_bf16_support().native:
        log.warning("DEMOHUB_DTYPE=bf16 on a CPU without native bf16 (no AVX512-BF16, AMX-BF16 or Arm BF16): bf16 "
                    "is emulated here and slower than fp32; unset DEMOHUB_DTYPE to run in fp32.")


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
