"""Llama-2 for 3D-MoLM: base weights, embeddings resized for ``[PAD]``/``<mol>``, and the LoRA merged at load.

The checkpoint's LoRA (r=8, alpha=32 on q/k/v/o/gate/up/down) is folded into the base weights as
W += B @ A * alpha / r, so inference needs no peft. The two new embedding rows are random and never saved
upstream (re-drawn at every load); here they are drawn from a seeded generator, N(0, initializer_range) as
transformers 4.35's ``_init_weights`` drew them, so runs are reproducible.
"""

from __future__ import annotations

import re
from pathlib import Path

import torch
from torch import nn

LORA_ALPHA = 32
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
_LORA_KEY = re.compile(r"^(?:base_model\.model\.)?(model\.layers\.\d+\.(?:self_attn|mlp)\.(\w+))\.lora_([AB])"
                       r"(?:\.default)?\.weight$")


def lora_pairs(sd: dict[str, torch.Tensor]) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """``{'model.layers.0.self_attn.q_proj': (A [r, in], B [out, r])}`` from ``llm_model.*`` keys (prefix stripped)."""
    parts: dict[str, dict[str, torch.Tensor]] = {}
    for key, tensor in sd.items():
        match = _LORA_KEY.match(key)
        if match is None:
            raise ValueError(f"unexpected language-model key in the checkpoint: {key}")
        if match.group(2) not in LORA_TARGETS:
            raise ValueError(f"LoRA on an unexpected module: {key}")
        parts.setdefault(match.group(1), {})[match.group(3)] = tensor
    return {name: (p["A"], p["B"]) for name, p in parts.items()}


@torch.no_grad()
def merge_lora(model: nn.Module, pairs: dict[str, tuple[torch.Tensor, torch.Tensor]], alpha: float = LORA_ALPHA) -> int:
    """Fold every LoRA pair into its Linear weight (computed in fp32); returns how many were merged."""
    modules = dict(model.named_modules())
    for name, (a, b) in pairs.items():
        linear = modules[name]
        scale = alpha / a.shape[0]
        delta = (b.float().to(linear.weight.device) @ a.float().to(linear.weight.device)) * scale
        linear.weight.copy_((linear.weight.float() + delta).to(linear.weight.dtype))
    return len(pairs)


@torch.no_grad()
def resize_for_molm(model, new_size: int, seed: int = 0) -> None:
    """Add the ``[PAD]``/``<mol>`` rows to the input and output embeddings, drawn from a seeded N(0, std)."""
    old = model.get_input_embeddings().weight.shape[0]
    model.resize_token_embeddings(new_size, mean_resizing=False)
    std = getattr(model.config, "initializer_range", 0.02)
    gen = torch.Generator().manual_seed(seed)
    tables = (model.get_input_embeddings().weight, model.get_output_embeddings().weight)
    for weight in {id(w): w for w in tables}.values():  # once if tied
        rows = torch.randn(new_size - old, weight.shape[1], generator=gen) * std
        weight[old:] = rows.to(weight.dtype)


def load_llama(folder: str | Path, lora: dict[str, torch.Tensor], vocab_size: int, device: str, dtype: torch.dtype,
               quantization: str | None = None, seed: int = 0):
    """LlamaForCausalLM from the official folder (``.bin`` shards read with ``weights_only=True``), LoRA merged, then,
    with ``quantization`` ("int8" or "int4", on a CPU), every Linear's weights quantised (``shared.quantize``)."""
    from transformers import LlamaForCausalLM

    from shared.quantize import quantize_linears

    if quantization and device != "cpu":
        raise ValueError(f"quantization={quantization!r} runs on a CPU; a GPU runs the model in {dtype}")
    model = LlamaForCausalLM.from_pretrained(str(folder), dtype=dtype, weights_only=True, low_cpu_mem_usage=True)
    resize_for_molm(model, vocab_size, seed)
    merged = merge_lora(model, lora_pairs(lora))
    if merged and merged != len(LORA_TARGETS) * model.config.num_hidden_layers:
        raise ValueError(f"the checkpoint holds LoRA for {merged} modules, expected "
                         f"{len(LORA_TARGETS) * model.config.num_hidden_layers}")
    if quantization:
        quantize_linears(model, quantization)  # after the merge: the LoRA is in the quantised weights
    model.to(device)
    return model.eval()
