"""Llama-2 for 3D-MoLM: base weights, embeddings resized for ``[PAD]``/``<mol>``, and the LoRA merged at load.

The checkpoint's LoRA (r=8, alpha=32 on q/k/v/o/gate/up/down) is folded into the base weights as
W += B @ A * alpha / r, so inference needs no peft. The two new embedding rows are random and never saved
upstream (re-drawn at every load); here they are drawn from a seeded generator, N(0, initializer_range) as
transformers 4.35's ``_init_weights`` drew them, so runs are reproducible.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

LORA_ALPHA = 32
MERGE_ROWS = 1024
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
        linear.weight.copy_(lora_merged(linear.weight, a, b, alpha))
    return len(pairs)


def lora_merged(weight: torch.Tensor, a: torch.Tensor, b: torch.Tensor, alpha: float = LORA_ALPHA) -> torch.Tensor:
    """``weight + B @ A * alpha / r``, computed in fp32, in ``weight``'s dtype, ``MERGE_ROWS`` rows at a time (a 7B
    MLP weight's fp32 copies, 540 MB whole, are never made: the quantised load's peak)."""
    a, b = a.float().to(weight.device), b.float().to(weight.device)
    merged = torch.empty_like(weight)
    for start in range(0, weight.shape[0], MERGE_ROWS):
        rows = slice(start, start + MERGE_ROWS)
        merged[rows] = (weight[rows].float() + (b[rows] @ a) * (alpha / a.shape[0])).to(weight.dtype)
    return merged


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
               quantization: str | None = None, seed: int = 0,
               calibrate: Callable[[nn.Module], dict[str, torch.Tensor]] | None = None):
    """LlamaForCausalLM from the official folder (``.bin`` shards read with ``weights_only=True``), LoRA merged.

    With ``quantization`` ("int8" or "int4", on a CPU) the shards stream into a model without weights, each Linear
    merged and quantised as soon as it is read (``shared.quantize.fill_quantized``): loading never holds the whole
    model in ``dtype`` (issue #28: 13 GB for Llama-2-7B in bf16, against about 4 GB quantised to int4). int4 with
    ``calibrate`` streams the shards twice: ``calibrate(model)`` runs a few prompts through the model quantised to
    nearest (embeddings resized) and answers what each layer's inputs are (``shared.quantize.input_statistics``),
    then each of its layers is quantised again, in place, with those statistics as AWQ does (BENCHMARKS.md: it keeps
    more of the answers), memory holding one model and one layer."""
    from transformers import LlamaForCausalLM

    if quantization and device != "cpu":
        raise ValueError(f"quantization={quantization!r} runs on a CPU; a GPU runs the model in {dtype}")
    pairs = lora_pairs(lora)
    statistics = None
    if quantization:
        model = _load_quantized(Path(folder), pairs, dtype, quantization)
        if quantization == "int4" and calibrate is not None:
            from shared.pool import release_memory

            resize_for_molm(model, vocab_size, seed)
            statistics = calibrate(model)
            release_memory()  # the calibration's activations
            _load_quantized(Path(folder), pairs, dtype, quantization, statistics, into=model)
        merged = len(pairs)
    else:
        model = LlamaForCausalLM.from_pretrained(str(folder), dtype=dtype, weights_only=True, low_cpu_mem_usage=True)
        merged = merge_lora(model, pairs)
    if merged and merged != len(LORA_TARGETS) * model.config.num_hidden_layers:
        raise ValueError(f"the checkpoint holds LoRA for {merged} modules, expected "
                         f"{len(LORA_TARGETS) * model.config.num_hidden_layers}")
    resize_for_molm(model, vocab_size, seed)
    if quantization:
        from shared.quantize import quantize_linears

        quantize_linears(model, quantization, statistics)  # the output layer, now with the two new rows
    model.to(device)
    return model.eval()


def _load_quantized(folder: Path, pairs: dict[str, tuple[torch.Tensor, torch.Tensor]], dtype: torch.dtype,
                    mode: str, statistics: dict[str, torch.Tensor] | None = None, into=None):
    """The Llama of ``folder`` with every Linear but the output layer in ``mode`` (calibrated by ``statistics``), the
    LoRA in its weights, loaded shard by shard and tensor by tensor (``shared.checkpoints.stream_torch_state``);
    ``into``: a model loaded so before, whose layers are quantised again in place (``shared.quantize.requantize``)."""
    from accelerate import init_empty_weights
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    from shared.checkpoints import stream_torch_state
    from shared.quantize import fill_quantized, requantize

    unused = set(pairs)

    def merge(name: str, tensor: torch.Tensor) -> torch.Tensor:
        module = name.removesuffix(".weight")
        if module not in pairs:
            return tensor
        unused.discard(module)
        return lora_merged(tensor, *pairs[module])

    tensors = (item for shard in _shards(folder) for item in stream_torch_state(shard))
    if into is not None:
        requantize(into, tensors, mode, dtype, merge, statistics)
        model = into
    else:
        with init_empty_weights():  # parameters on the meta device, buffers (rotary frequencies) computed as usual
            model = LlamaForCausalLM(LlamaConfig.from_pretrained(folder))
        fill_quantized(model, tensors, mode, dtype, merge, statistics)
        if (folder / "generation_config.json").is_file():
            model.generation_config = GenerationConfig.from_pretrained(folder)
    if unused:
        raise ValueError(f"LoRA for modules the language model does not have: {sorted(unused)[:3]}")
    return model


def _shards(folder: Path) -> list[Path]:
    """The ``.bin`` files of a Hugging Face checkpoint folder, in the order its index names them."""
    index = folder / "pytorch_model.bin.index.json"
    if index.is_file():
        names = json.loads(index.read_text())["weight_map"].values()
        return [folder / name for name in dict.fromkeys(sorted(names))]
    return [folder / "pytorch_model.bin"]
