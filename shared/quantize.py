"""Opt-in weight-only quantisation of a model's Linear layers on a CPU: ``DEMOHUB_QUANTIZE=int8`` or ``int4``.

PyTorch's own CPU kernels do the work (no new dependency): ``int8`` keeps one int8 per weight and a scale per output
channel (symmetric), ``int4`` a 4-bit code per weight and a scale and zero per group of 128 inputs (64 or 32 where the
width needs), packed for PyTorch's int4 CPU kernel. Activations keep their dtype (weight-only): large activation
features, which Llama-sized models have and which int8 activations would clip, pass untouched.

Decoding reads every weight once per new token for a few rows (one per beam), so it is bound by the bytes read: the
packed kernels read 2x (int8) or 4x (int4) fewer than bf16. A long prompt (many rows) is bound by arithmetic, where the
packed kernels are slower than bf16's: there an int8 layer widens its weight to the activations' dtype for the call,
and an int4 layer still runs its kernel (unpacking costs as much). BENCHMARKS.md measures both on Llama-2-7B's shape.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch import nn

from shared.device import QUANTIZE_MODES as MODES

PACKED_ROWS = 64  # up to this many rows (tokens x beams) an int8 layer runs the packed kernel: widening a
# Llama-2-7B MLP weight to bf16 costs ~30 ms a call, the kernel ~0.65 ms a row (2-core AMD EPYC: 16 rows 11 ms against
# 35 ms widened, 40 rows 27 against 40, 160 rows 107 against 65), so a prompt after its stored start takes the kernel
INT4_GROUPS = (128, 64, 32)  # group sizes the int4 kernel takes, the largest that divides a layer's width wins


def unsupported(mode: str) -> str | None:
    """Why this machine's PyTorch cannot run ``mode`` (None when it can), found by running one tiny layer of it."""
    if mode == "none":
        return None
    try:
        layer = nn.Linear(64, 32, bias=True).to(torch.bfloat16)
        quantized = quantize_linear(layer, mode)
        x = torch.ones(PACKED_ROWS + 1, 64, dtype=torch.bfloat16)
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
        scale = weight.float().abs().amax(dim=1).clamp(min=1e-12) / 127
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.register_buffer("weight_int8", torch.round(weight.float() / scale[:, None]).clamp(-127, 127)
                             .to(torch.int8))
        self.register_buffer("scale", scale.to(weight.dtype))
        self.bias = linear.bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, self.in_features)
        if rows.shape[0] <= PACKED_ROWS:
            y = torch._weight_int8pack_mm(rows, self.weight_int8, self.scale.to(x.dtype))
        else:
            y = nn.functional.linear(rows, self.weight_int8.to(x.dtype)) * self.scale.to(x.dtype)
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*x.shape[:-1], self.out_features)

    def dequantized(self) -> torch.Tensor:
        return self.weight_int8.float() * self.scale.float()[:, None]


class Int4Linear(nn.Module):
    """A Linear with 4-bit weights in groups of ``group`` inputs, each with a scale and a zero (asymmetric), packed for
    PyTorch's int4 CPU kernel: weight = (code - 8) * scale + zero, where zero is the group's midpoint."""

    def __init__(self, linear: nn.Linear, group: int):
        super().__init__()
        weight = linear.weight.detach()
        n, k = weight.shape
        self.in_features, self.out_features, self.group = k, n, group
        grouped = weight.float().reshape(n, k // group, group)
        low, high = grouped.amin(dim=-1, keepdim=True), grouped.amax(dim=-1, keepdim=True)
        scale = ((high - low) / 15).clamp(min=1e-12)
        codes = torch.round((grouped - low) / scale).clamp(0, 15).to(torch.int32).reshape(n, k)
        self.register_buffer("weight_int4", torch._convert_weight_to_int4pack_for_cpu(codes, 1))
        scales_and_zeros = torch.stack([scale[..., 0], (low + 8 * scale)[..., 0]], dim=-1)  # [n, groups, 2]
        self.register_buffer("scales_and_zeros", scales_and_zeros.transpose(0, 1).contiguous().to(weight.dtype))
        self.bias = linear.bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, self.in_features)
        y = torch._weight_int4pack_mm_for_cpu(rows, self.weight_int4, self.group, self.scales_and_zeros.to(x.dtype))
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*x.shape[:-1], self.out_features)


def quantize_linear(linear: nn.Linear, mode: str) -> nn.Module | None:
    """``linear`` in ``mode`` ("int8" or "int4"), or None where its shape does not fit the kernel (it stays as is)."""
    if mode == "int8":
        return Int8Linear(linear)
    if mode == "int4":
        group = next((g for g in INT4_GROUPS if linear.in_features % g == 0), None)
        if group is None or linear.out_features % 16:  # the kernel packs 16 outputs at a time
            return None
        return Int4Linear(linear, group)
    raise ValueError(f"mode must be one of {MODES[1:]}, not {mode!r}")


def quantize_linears(model: nn.Module, mode: str) -> int:
    """Replace every ``nn.Linear`` of ``model`` by its ``mode`` form, in place, one at a time (each layer's
    full-precision weight is freed as it goes); returns how many were replaced. A Linear whose weight another module
    shares (tied embeddings) stays as it is: quantising it would untie, and store, a second copy."""
    if mode == "none":
        return 0
    counts = _uses(model)
    # (parent, name) pairs, not the Linears themselves: a list holding them would keep every full-precision weight
    # alive until the end (a 7B model's bf16 and int8 copies at once: 19 GiB instead of 14)
    places = [(parent, name) for parent in model.modules() for name, child in parent.named_children()
              if type(child) is nn.Linear and counts.get(id(child.weight), 0) == 1]
    replaced = 0
    for parent, name in places:
        quantized = quantize_linear(getattr(parent, name), mode)
        if quantized is not None:
            setattr(parent, name, quantized)
            replaced += 1
    return replaced


@torch.no_grad()
def fill_quantized(model: nn.Module, tensors: Iterable[tuple[str, torch.Tensor]], mode: str, dtype: torch.dtype,
                   prepare: Callable[[str, torch.Tensor], torch.Tensor] | None = None) -> None:
    """Fill ``model``, built with its parameters on the meta device, from a checkpoint's ``(name, tensor)`` pairs,
    quantising each Linear to ``mode`` as soon as its weights are in: memory holds the quantised model plus one layer
    in ``dtype``, never the whole model in ``dtype`` (a 7B Llama: 13 GB in bf16, about 4 GB quantised to int4).

    ``prepare(name, tensor)`` may change a tensor (in ``dtype``, already a copy of the checkpoint's) before it is
    placed, e.g. merge a LoRA into a weight. The output layer stays in ``dtype`` (a caller may resize it first, then
    ``quantize_linears``), as does a Linear whose weight another module shares. A key the model has no parameter
    for is refused, except a buffer the model computes itself (old Llama checkpoints hold ``rotary_emb.inv_freq`` in
    every layer, where today's transformers compute one for the model);
    a parameter no key fills is refused after the last tensor."""
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
            quantized = quantize_linear(owner, mode)
            if quantized is not None:
                parent_name, _, child = owner_name.rpartition(".")
                setattr(model.get_submodule(parent_name), child, quantized)
    if getattr(getattr(model, "config", None), "tie_word_embeddings", False):
        model.tie_weights()
    missing = [name for name, p in model.named_parameters() if p.is_meta]
    if missing:
        raise ValueError(f"the checkpoint has no values for {len(missing)} parameters, e.g. {missing[:3]}")


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
