"""Opt-in weight-only quantisation of a model's Linear layers on a CPU: ``DEMOHUB_QUANTIZE=int8`` or ``int4``.

PyTorch's own CPU kernels do the work (no new dependency): ``int8`` keeps one int8 per weight and a scale per output
channel (symmetric), ``int4`` a 4-bit code per weight and a scale and zero per group of 128 inputs (64 or 32 where the
width needs), packed for PyTorch's int4 CPU kernel. Activations keep their dtype (weight-only): large activation
features, which Llama-sized models have and which int8 activations would clip, pass untouched.

Decoding reads every weight once per new token for a few rows (one per beam), so it is bound by the bytes read: the
packed kernels read 2x (int8) or 4x (int4) fewer than bf16. A long prompt (many rows) is bound by arithmetic, where the
packed kernels are slower than bf16's: there a layer widens its weight to the activations' dtype a tile at a time,
into a buffer its thread reuses, and multiplies in that dtype (int8: 1.1-1.2x bf16's time; int4, which unpacks two
codes a byte and applies a scale and a zero per group, about 16 ms more per Llama-2-7B MLP weight, 2.0x bf16's time
at 62 rows, where its kernel takes 2.2x and 2.4x at 150). BENCHMARKS.md ("Quantised layers on a CPU, by rows")
measures both on Llama-2-7B's shape: bf16 there runs near this CPU's best arithmetic rate, so no unpacking comes free.

int4 may be calibrated (``statistics``: each layer's inputs over a short calibration text, ``input_statistics``), as
AWQ does: a weight column whose input channel is large is scaled up before rounding (by ``rms(x) ** 0.5``) and the
input divided by the same factor at run time, so the channels that matter most lose least, and each group's range is
the one among ``CLIP_RATIOS`` of its extremes whose rounding costs the layer's output least (errors weighted by each
channel's mean square). BENCHMARKS.md ("on a trained Llama") measures each choice.

Quantising a 7B model takes minutes (calibrated int4: about 7.5 on two cores), so a loader may cache the result
(``save_quantized``: the codes, scales and every other tensor, and the calibration's statistics, as one safetensors file
in the conversion cache) and fill the next load's empty model from it (``read_quantized``): no pickle, no code. The
file's name carries what it was made from (``shared.checkpoints.cache_path``), ``CACHE_FORMAT`` and PyTorch's version
(which decides the int4 packing), so a change to any of them quantises again.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

import torch
from torch import nn

from shared.checkpoints import load_safetensors, save_safetensors
from shared.device import QUANTIZE_MODES as MODES
from shared.pool import trim_heap

PACKED_ROWS = 16  # up to this many rows (tokens x beams) an int8 layer runs the packed kernel, beyond them it widens
# its weight a tile at a time (WIDEN_ROWS) and multiplies in the activations' dtype: across a Llama-2-7B layer's seven
# weights (2-core AMD EPYC) widening wins from about 14 rows (BENCHMARKS.md, "Quantised layers on a CPU, by rows",
# `python benchmarks/quantize_layers.py`)
AWQ_POWER = 0.5  # int4's scale per input channel: rms(x) ** 0.5, normalised (AWQ's usual optimum)
CLIP_RATIOS = (1.0, 0.95, 0.9, 0.85, 0.8)  # int4: each group's range shrunk by these, the least costly kept
ROUND_ROWS = 1024  # int8 and int4 round (int4 calibrated: search each group's range for) this many output rows at a
# time: a layer's float copies are never made whole (a 7B output layer's int8 rounding peaked 1.05 GB above the layer)
WIDEN_ROWS = 1024  # a long prompt widens an int8 weight this many output rows at a time, into a buffer each thread
# keeps: a Llama-2-7B MLP weight for 150 rows then costs 35.5 ms against bf16's 32.9 (widening it whole into new
# memory, 61 ms: allocating and first touching 90 MB costs more than the conversion)
INT4_GROUPS = (128, 64, 32)  # group sizes the int4 kernel takes, the largest that divides a layer's width wins
INT4_PACKED_ROWS = 56  # up to this many rows an int4 layer runs its kernel, beyond them it widens its weight: on a
# Llama-2-7B MLP weight 48 rows take 25.1 ms in the kernel against 28.7 widened, 62 rows 33.4 against 31.4, 150 rows
# 79.2 against 51.3 (bf16: 12.7, 15.4, 32.5 ms; the same benchmark)
CACHE_FORMAT = "int8 per channel, int4 AWQ (2026-12-06)"  # what a cached quantised model holds: change it with the
# layouts or the calibration above, and no cache made before is read
STATISTICS = "input_statistics."  # the names of the calibration's statistics in a cached quantised model start so
INT4_BLOCK = 64  # PyTorch's int4 CPU packing: 64 outputs a block, for each input 32 bytes, byte i holding output i in
# its low nibble and output 32 + i in its high one (``_int4_layout_known`` checks that this PyTorch packs so)


def unsupported(mode: str) -> str | None:
    """Why this machine's PyTorch cannot run ``mode`` (None when it can), found by running one tiny layer of it."""
    if mode == "none":
        return None
    try:
        layer = nn.Linear(64, INT4_BLOCK, bias=True).to(torch.bfloat16)
        quantized = quantize_linear(layer, mode)
        x = torch.ones(max(PACKED_ROWS, INT4_PACKED_ROWS) + 1, 64, dtype=torch.bfloat16)
        for rows in (x[:1], x):  # both paths: the packed kernel, and a long prompt's
            if quantized is None or not torch.isfinite(quantized(rows)).all():
                return f"{mode} gives no finite result on this CPU"
    except (RuntimeError, NotImplementedError, AttributeError) as error:
        return f"this PyTorch ({torch.__version__}) has no {mode} CPU kernel for it ({type(error).__name__}: {error})"
    return None


class Int8Linear(nn.Module):
    """A Linear with int8 weights, one scale per output channel: ``y = (x @ q.T) * scale + bias``."""

    def __init__(self, linear: nn.Linear):
        super().__init__()
        weight = linear.weight.detach()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        codes = torch.empty(weight.shape, dtype=torch.int8, device=weight.device)
        scale = torch.empty(weight.shape[0], dtype=torch.float32, device=weight.device)
        # ROUND_ROWS rows at a time: a 7B output layer's float copies (1 GB) are never made whole
        for start in range(0, weight.shape[0], ROUND_ROWS):
            block = weight[start:start + ROUND_ROWS].to(torch.float32, copy=True)  # rounded in place below
            rows = slice(start, start + block.shape[0])
            scale[rows] = block.abs().amax(dim=1).clamp(min=1e-12) / 127
            codes[rows] = block.div_(scale[rows, None]).round_().clamp_(-127, 127).to(torch.int8)
        self.register_buffer("weight_int8", codes)
        self.register_buffer("scale", scale.to(weight.dtype))
        self.bias = linear.bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, self.in_features)
        if rows.shape[0] <= PACKED_ROWS:
            y = torch._weight_int8pack_mm(rows, self.weight_int8, self.scale.to(x.dtype))
        else:
            y = _widened_mm(rows, self.weight_int8) * self.scale.to(x.dtype)
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*x.shape[:-1], self.out_features)

    def dequantized(self) -> torch.Tensor:
        return self.weight_int8.float() * self.scale.float()[:, None]


class Int4Linear(nn.Module):
    """A Linear with 4-bit weights in groups of ``group`` inputs, each with a scale and a zero (asymmetric), packed for
    PyTorch's int4 CPU kernel: weight = (code - 8) * scale + zero, where zero is the group's midpoint. Calibrated
    (``statistics``), AWQ's: the columns scaled by ``s`` before rounding, the input divided by ``s``, and each group's
    range clipped where that costs the output least (see the module's docstring)."""

    def __init__(self, linear: nn.Linear, group: int, statistics: torch.Tensor | None = None):
        super().__init__()
        weight = linear.weight.detach()
        n, k = weight.shape
        dtype = linear.weight.dtype
        self.in_features, self.out_features, self.group = k, n, group
        scale_in, importance = None, None
        if statistics is not None:
            mean_square = statistics.to(weight.device).float().clamp(min=1e-10)
            scale_in = mean_square ** (AWQ_POWER / 2)
            scale_in = scale_in / (scale_in.max() * scale_in.min()).sqrt()
            importance = (mean_square / scale_in ** 2).reshape(1, k // group, group)  # of the scaled weight's error
        packed = torch.empty(n, k // 2, dtype=torch.uint8, device=weight.device)
        scales_and_zeros = torch.empty(k // group, n, 2, dtype=dtype, device=weight.device)
        # ROUND_ROWS rows at a time, each block packed on its own (PyTorch packs 64 rows a block): a 7B MLP weight's
        # float copy and int32 codes (360 MB) are never made whole
        for start in range(0, n, ROUND_ROWS):
            block = weight[start:start + ROUND_ROWS].float()
            if scale_in is not None:
                block = block * scale_in
            codes, scale, low = _round_int4(block.reshape(-1, k // group, group), importance)
            packed[start:start + block.shape[0]] = torch._convert_weight_to_int4pack_for_cpu(
                codes.reshape(block.shape), 1)
            scales_and_zeros[:, start:start + block.shape[0]] = torch.cat([scale, low + 8 * scale], dim=-1)\
                .transpose(0, 1).to(dtype)
        self.register_buffer("weight_int4", packed)
        self.register_buffer("scales_and_zeros", scales_and_zeros)
        self.register_buffer("input_scale", None if scale_in is None else (1 / scale_in).to(dtype))
        self.bias = linear.bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, self.in_features)
        if self.input_scale is not None:
            rows = rows * self.input_scale.to(x.dtype)
        if rows.shape[0] > INT4_PACKED_ROWS and self.out_features % INT4_BLOCK == 0 and _int4_layout_known():
            y = _widened_int4_mm(rows, self.weight_int4, self.scales_and_zeros, self.group)
        else:
            y = torch._weight_int4pack_mm_for_cpu(rows, self.weight_int4, self.group,
                                                  self.scales_and_zeros.to(x.dtype))
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*x.shape[:-1], self.out_features)


_scratch = threading.local()  # per thread: requests may run the model in threads of their own


def _buffer(name: str, numel: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """A flat buffer of ``numel`` elements that this thread keeps between calls (grown when a call needs more)."""
    buffer = getattr(_scratch, name, None)
    if buffer is None or buffer.numel() < numel or buffer.dtype != dtype or buffer.device != device:
        kept = 0 if buffer is None or buffer.dtype != dtype else buffer.numel()
        with torch.inference_mode(False):  # a plain tensor, which calls in and out of inference mode may both fill
            buffer = torch.empty(max(numel, kept), dtype=dtype, device=device)
        setattr(_scratch, name, buffer)
    return buffer[:numel]


def _widened_mm(rows: torch.Tensor, weight_int8: torch.Tensor) -> torch.Tensor:
    """``rows @ weight_int8.T`` in ``rows``' dtype, the weight widened ``WIDEN_ROWS`` output rows at a time into a
    buffer this thread keeps (see ``WIDEN_ROWS``)."""
    n, k = weight_int8.shape
    buffer = _buffer("widened", min(n, WIDEN_ROWS) * k, rows.dtype, rows.device)
    out = torch.empty(rows.shape[0], n, dtype=rows.dtype, device=rows.device)
    for start in range(0, n, WIDEN_ROWS):
        tile = weight_int8[start:start + WIDEN_ROWS]
        widened = buffer[:tile.numel()].view(tile.shape)
        widened.copy_(tile)
        torch.mm(rows, widened.t(), out=out[:, start:start + tile.shape[0]])
    return out


def _widened_int4_mm(rows: torch.Tensor, packed: torch.Tensor, scales_and_zeros: torch.Tensor,
                     group: int) -> torch.Tensor:
    """``rows @ W.T`` in ``rows``' dtype for an int4 layer's ``packed`` weight (``INT4_BLOCK``'s layout), ``W.T``
    widened ``WIDEN_ROWS`` output columns at a time into buffers this thread keeps: each half byte's codes copied to
    their place, then ``code * scale + (zero - 8 * scale)`` per group (as the kernel computes them)."""
    n, k = packed.shape[0], packed.shape[1] * 2
    widened_all = _buffer("widened", min(n, WIDEN_ROWS) * k, rows.dtype, rows.device)
    codes_all = _buffer("codes", min(n, WIDEN_ROWS) * k // 2, torch.uint8, rows.device)
    out = torch.empty(rows.shape[0], n, dtype=rows.dtype, device=rows.device)
    for start in range(0, n, WIDEN_ROWS):
        width = min(WIDEN_ROWS, n - start)
        blocks = packed[start:start + width].view(width // INT4_BLOCK, k, INT4_BLOCK // 2)
        codes = codes_all[:blocks.numel()].view(blocks.shape)
        widened = widened_all[:width * k].view(k, width)  # W.T's columns start .. start + width
        halves = widened.view(k, width // INT4_BLOCK, 2, INT4_BLOCK // 2)
        torch.bitwise_and(blocks, 15, out=codes)
        halves[:, :, 0].copy_(codes.permute(1, 0, 2))
        torch.bitwise_right_shift(blocks, 4, out=codes)
        halves[:, :, 1].copy_(codes.permute(1, 0, 2))
        part = scales_and_zeros[:, start:start + width].to(rows.dtype)  # [groups, width, 2]
        scale = part[..., 0].contiguous()
        grouped = widened.view(k // group, group, width)
        torch.addcmul((part[..., 1] - 8 * scale)[:, None], grouped, scale[:, None], out=grouped)
        torch.mm(rows, widened, out=out[:, start:start + width])
    return out


@functools.cache
def _int4_layout_known() -> bool:
    """Whether this PyTorch packs int4 weights as ``INT4_BLOCK`` says, so that ``_widened_int4_mm`` reads them right:
    a packed 128 x 64 layer of known codes, widened through the identity, must give its codes back (else int4 layers
    always run the kernel)."""
    codes = torch.randint(0, 16, (128, 64), dtype=torch.int32, generator=torch.Generator().manual_seed(0))
    packed = torch._convert_weight_to_int4pack_for_cpu(codes, 1)
    identity = torch.eye(64, dtype=torch.bfloat16)
    scales_and_zeros = torch.tensor([1.0, 8.0], dtype=torch.bfloat16).expand(1, 128, 2)  # weight = code
    try:
        widened = _widened_int4_mm(identity, packed, scales_and_zeros, 64)
    except RuntimeError:  # another shape of packed tensor
        return False
    return torch.equal(widened.t().to(torch.int32), codes)


def _round_int4(grouped: torch.Tensor, importance: torch.Tensor | None) -> tuple[torch.Tensor, ...]:
    """4-bit codes, scales and lows of ``grouped`` weights ``[rows, groups, group]``: each group's full range, or,
    with ``importance`` (per input, ``[1, groups, group]``), the range among ``CLIP_RATIOS`` of it whose rounding
    error, weighted by importance, is least."""
    low, high = grouped.amin(dim=-1, keepdim=True), grouped.amax(dim=-1, keepdim=True)
    best = None
    for ratio in CLIP_RATIOS if importance is not None else (1.0,):
        scale, lowest = ((high - low) * ratio / 15).clamp(min=1e-12), low * ratio
        codes = torch.round((grouped - lowest) / scale).clamp(0, 15)
        if importance is None:
            return codes.to(torch.int32), scale, lowest
        error = (((codes * scale + lowest - grouped) ** 2) * importance).sum(dim=-1, keepdim=True)
        if best is None:
            best = [codes, scale, lowest, error]
            continue
        better = error < best[3]
        for i, value in enumerate((codes, scale, lowest, error)):
            best[i] = torch.where(better, value, best[i])
    return best[0].to(torch.int32), best[1], best[2]


def quantize_linear(linear: nn.Linear, mode: str, statistics: torch.Tensor | None = None) -> nn.Module | None:
    """``linear`` in ``mode`` ("int8" or "int4"), or None where its shape does not fit the kernel (it stays as is);
    int4 calibrated where ``statistics`` (its inputs' mean square per channel) are given (int8 takes
    none: SmoothQuant's scales lost answers, BENCHMARKS.md)."""
    if mode == "int8":
        quantized = Int8Linear(linear)
    elif mode == "int4":
        group = next((g for g in INT4_GROUPS if linear.in_features % g == 0), None)
        if group is None or linear.out_features % 16:  # the kernel packs 16 outputs at a time
            return None
        quantized = Int4Linear(linear, group, statistics)
    else:
        raise ValueError(f"mode must be one of {MODES[1:]}, not {mode!r}")
    # the rounding's row blocks, freed now, sit in the heap between the codes kept: given back to the system, or a 7B
    # int8 load kept 3 GB of them (12.6 GB at most against 9.5)
    trim_heap()
    return quantized


def quantize_linears(model: nn.Module, mode: str, statistics: dict[str, torch.Tensor] | None = None) -> int:
    """Replace every ``nn.Linear`` of ``model`` by its ``mode`` form, in place, one at a time (each layer's
    full-precision weight is freed as it goes); returns how many were replaced. A Linear whose weight another module
    shares (tied embeddings) stays as it is: quantising it would untie, and store, a second copy. ``statistics``
    (``input_statistics``' answer, by module name) calibrate the layers they name."""
    if mode == "none":
        return 0
    counts = _uses(model)
    statistics = statistics or {}
    # (parent, name) pairs, not the Linears themselves: a list holding them would keep every full-precision weight
    # alive until the end (a 7B model's bf16 and int8 copies at once: 19 GiB instead of 14)
    places = [(parent_name, parent, name) for parent_name, parent in model.named_modules()
              for name, child in parent.named_children()
              if type(child) is nn.Linear and counts.get(id(child.weight), 0) == 1]
    replaced = 0
    for parent_name, parent, name in places:
        found = statistics.get(f"{parent_name}.{name}" if parent_name else name)
        quantized = quantize_linear(getattr(parent, name), mode, found)
        if quantized is not None:
            setattr(parent, name, quantized)
            replaced += 1
    return replaced


@torch.no_grad()
def input_statistics(model: nn.Module, run: Callable[[nn.Module], object]) -> dict[str, torch.Tensor]:
    """What each Linear of ``model`` (quantised or not) sees while ``run(model)`` runs a calibration text: by module
    name, the mean square of every input channel, float32 ``[in_features]``. Taken from a quantised model they are
    close to its full-precision model's (the large channels are the same); ``fill_quantized`` and
    ``quantize_linears`` calibrate int4 with them."""
    found: dict[str, tuple[torch.Tensor, int]] = {}

    def record(name: str):
        def hook(module: nn.Module, args: tuple, output: torch.Tensor) -> None:
            x = args[0].detach().float().reshape(-1, args[0].shape[-1])
            total, rows = found.get(name, (0, 0))
            found[name] = (total + (x * x).sum(dim=0), rows + x.shape[0])
        return hook

    hooks = [module.register_forward_hook(record(name)) for name, module in model.named_modules()
             if isinstance(module, (nn.Linear, Int8Linear, Int4Linear))]
    try:
        run(model)
    finally:
        for hook in hooks:
            hook.remove()
    return {name: total / rows for name, (total, rows) in found.items()}


@torch.no_grad()
def fill_quantized(model: nn.Module, tensors: Iterable[tuple[str, torch.Tensor]], mode: str, dtype: torch.dtype,
                   prepare: Callable[[str, torch.Tensor], torch.Tensor] | None = None,
                   statistics: dict[str, torch.Tensor] | None = None) -> None:
    """Fill ``model``, built with its parameters on the meta device, from a checkpoint's ``(name, tensor)`` pairs,
    quantising each Linear to ``mode`` as soon as its weights are in: memory holds the quantised model plus one layer
    in ``dtype``, never the whole model in ``dtype`` (a 7B Llama: 13 GB in bf16, about 4 GB quantised to int4).

    ``prepare(name, tensor)`` may change a tensor (in ``dtype``, already a copy of the checkpoint's) before it is
    placed, e.g. merge a LoRA into a weight. The output layer stays in ``dtype`` (a caller may resize it first, then
    ``quantize_linears``), as does a Linear whose weight another module shares. A key the model has no parameter
    for is refused, except a buffer the model computes itself (old Llama checkpoints hold ``rotary_emb.inv_freq`` in
    every layer, where today's transformers compute one for the model);
    a parameter no key fills is refused after the last tensor. ``statistics`` (``input_statistics``' answer)
    calibrate the Linears they name."""
    statistics = statistics or {}
    output = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    parameters = dict(model.named_parameters(remove_duplicate=False))
    counts = _uses(model)
    computed = {_tail(name) for name, _ in model.named_buffers()}  # e.g. rotary_emb.inv_freq
    for name, tensor in tensors:
        if name not in parameters:
            if _tail(name) in computed:  # wherever it sat in the checkpoint (transformers moved Llama's)
                continue
            raise ValueError(f"the checkpoint holds {name}, which the model has no parameter for")
        owner_name, _, attr = name.rpartition(".")
        owner = model.get_submodule(owner_name)
        shared = counts[id(parameters[name])] > 1
        value = tensor.to(dtype=dtype, copy=True) if tensor.is_floating_point() else tensor.clone()
        if prepare is not None:
            value = prepare(name, value)
        setattr(owner, attr, nn.Parameter(value, requires_grad=False))
        if (type(owner) is nn.Linear and owner is not output and not shared
                and not any(p.is_meta for p in owner.parameters())):
            quantized = quantize_linear(owner, mode, statistics.get(owner_name))
            if quantized is not None:
                parent_name, _, child = owner_name.rpartition(".")
                setattr(model.get_submodule(parent_name), child, quantized)
    if getattr(getattr(model, "config", None), "tie_word_embeddings", False):
        model.tie_weights()
    missing = [name for name, p in model.named_parameters() if p.is_meta]
    if missing:
        raise ValueError(f"the checkpoint has no values for {len(missing)} parameters, e.g. {missing[:3]}")


@torch.no_grad()
def requantize(model: nn.Module, tensors: Iterable[tuple[str, torch.Tensor]], mode: str, dtype: torch.dtype,
               prepare: Callable[[str, torch.Tensor], torch.Tensor] | None = None,
               statistics: dict[str, torch.Tensor] | None = None) -> int:
    """Quantise ``model``'s quantised Linears again, in place, from the checkpoint it was filled from (the same
    ``(name, tensor)`` pairs and ``prepare`` as ``fill_quantized``), now calibrated by ``statistics``: each layer's new
    form replaces its old one as its weight arrives, its codes written into the old one's buffers, so memory holds
    the model plus one layer (a second model, or new buffers beside the old ones, would leave the freed memory in holes
    the heap seldom reuses: BENCHMARKS.md, the int4 peak).
    Every other tensor is passed over: the model keeps its norms, embeddings and output layer as they are (resized,
    say). Returns how many layers were replaced."""
    statistics = statistics or {}
    modules = dict(model.named_modules())
    replaced = 0
    for name, tensor in tensors:
        owner_name, _, attr = name.rpartition(".")
        if attr != "weight" or not isinstance(modules.get(owner_name), (Int8Linear, Int4Linear)):
            continue
        value = tensor.to(dtype=dtype, copy=True)
        if prepare is not None:
            value = prepare(name, value)
        old = modules[owner_name]
        linear = nn.Linear(old.in_features, old.out_features, bias=False, device="meta")
        linear.weight = nn.Parameter(value, requires_grad=False)
        linear.bias = old.bias
        quantized = quantize_linear(linear, mode, statistics.get(owner_name))
        del linear, value
        for key, buffer in list(quantized.named_buffers(recurse=False)):
            kept = getattr(old, key, None)
            if isinstance(kept, torch.Tensor) and kept.shape == buffer.shape and kept.dtype == buffer.dtype:
                # the new codes into the old layer's memory: new memory beside it, the old freed after, would leave
                # holes the heap seldom reuses (a 7B int4 load peaked at 6.8 GiB that way, 4.9 GiB this way)
                setattr(quantized, key, kept.copy_(buffer))
        del old
        parent_name, _, child = owner_name.rpartition(".")
        setattr(modules[parent_name], child, quantized)
        modules[owner_name] = quantized
        replaced += 1
    return replaced


def save_quantized(model: nn.Module, target: Path, statistics: dict[str, torch.Tensor] | None = None,
                   replaces: str | None = None) -> bool:
    """Cache ``model`` (its quantised layers' codes and scales, every other parameter and buffer it saves) and the
    ``statistics`` that calibrated it in one safetensors file (``shared.checkpoints.save_safetensors``: written
    whole or not at all, skipped with a log on a full or read-only disk; ``replaces`` names the older files it
    supersedes). Returns whether it was written."""
    tensors, seen = {}, set()
    for name, tensor in model.state_dict().items():
        if not tensor.numel() or tensor.data_ptr() not in seen:  # a tied weight once (``read_quantized`` ties it)
            seen.add(tensor.data_ptr())
            tensors[name] = tensor
    tensors.update({STATISTICS + name: value.contiguous() for name, value in (statistics or {}).items()})
    return save_safetensors(tensors, target, {"format": CACHE_FORMAT, "torch": torch.__version__}, replaces)


def read_quantized(model: nn.Module, source: Path) -> dict[str, torch.Tensor]:
    """Fill ``model``, built with its parameters on the meta device, from ``save_quantized``'s file: each Linear whose
    codes the file holds becomes its quantised form, of the shapes and dtypes its width asks for, and every tensor is
    placed, copied out of the file into aligned memory (``load_safetensors(owned=True)``). Returns the statistics the
    file holds. A file that does not fit the model raises ``ValueError`` (``CheckpointError`` if it cannot be read);
    the model is then half-filled, so the caller builds it anew."""
    tensors = load_safetensors(source, owned=True)
    for name, module in list(model.named_modules()):
        if type(module) is nn.Linear and (quantized := _quantized_from(name, module, tensors)) is not None:
            parent_name, _, child = name.rpartition(".")
            setattr(model.get_submodule(parent_name), child, quantized)
    statistics = {name[len(STATISTICS):]: tensors.pop(name) for name in list(tensors) if name.startswith(STATISTICS)}
    try:
        _, unexpected = model.load_state_dict(tensors, strict=False, assign=True)
    except RuntimeError as error:  # a tensor of another shape
        raise ValueError(f"{source.name} does not fit the model: {error}") from error
    if getattr(getattr(model, "config", None), "tie_word_embeddings", False):
        model.tie_weights()
    missing = [name for name, tensor in (*model.named_parameters(), *model.named_buffers()) if tensor.is_meta]
    if unexpected or missing:
        raise ValueError(f"{source.name} does not fit the model: {len(unexpected)} tensors it has no place for "
                         f"(e.g. {unexpected[:2]}), {len(missing)} it leaves empty (e.g. {missing[:2]})")
    return statistics


def _quantized_from(name: str, linear: nn.Linear, tensors: dict[str, torch.Tensor]) -> nn.Module | None:
    """The quantised form of ``linear`` whose buffers ``tensors`` hold under ``name`` (None: it stays a Linear),
    checked against the shapes and dtypes its width gives; its bias stays ``linear``'s, to be filled."""
    n, k = linear.out_features, linear.in_features
    if f"{name}.weight_int8" in tensors:
        kind, wanted = Int8Linear, {"weight_int8": ((n, k), torch.int8), "scale": ((n,), None)}
    elif f"{name}.weight_int4" in tensors:
        groups = tensors.get(f"{name}.scales_and_zeros", torch.empty(0)).shape[0]
        group = k // groups if groups else 0
        if group not in INT4_GROUPS or group * groups != k:
            raise ValueError(f"{name}: a cached int4 layer of {groups} groups does not fit {k} inputs")
        kind, wanted = Int4Linear, {"weight_int4": ((n, k // 2), torch.uint8),
                                    "scales_and_zeros": ((groups, n, 2), None),
                                    "input_scale": ((k,), None) if f"{name}.input_scale" in tensors else None}
    else:
        return None
    module = kind.__new__(kind)
    nn.Module.__init__(module)
    module.in_features, module.out_features = k, n
    if kind is Int4Linear:
        module.group = group
    for key, spec in wanted.items():
        value = None if spec is None else tensors.get(f"{name}.{key}")
        if spec is not None and (value is None or tuple(value.shape) != spec[0]
                                 or spec[1] is not None and value.dtype != spec[1]):
            raise ValueError(f"{name}.{key}: the cache holds {None if value is None else tuple(value.shape)}, the "
                             f"model wants {spec[0]}")
        module.register_buffer(key, value)
    module.bias = linear.bias
    return module


def _uses(model: nn.Module) -> dict[int, int]:
    """How many modules hold each parameter (by ``id``): more than one for a tied weight."""
    counts: dict[int, int] = {}
    for module in model.modules():
        for tensor in module.parameters(recurse=False):
            counts[id(tensor)] = counts.get(id(tensor), 0) + 1
    return counts


def _tail(name: str) -> str:
    """A state-dict key's module and attribute names, without the path: ``rotary_emb.inv_freq``."""
    return ".".join(name.split(".")[-2:])
