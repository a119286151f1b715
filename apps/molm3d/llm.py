"""Llama-2 for 3D-MoLM: base weights, embeddings resized for ``[PAD]``/``<mol>``, and the LoRA merged at load.

The checkpoint's LoRA (r=8, alpha=32 on q/k/v/o/gate/up/down) is folded into the base weights as
W += B @ A * alpha / r, so inference needs no peft. The two new embedding rows are random and never saved
upstream (re-drawn at every load); here they are drawn from a seeded generator, N(0, initializer_range) as
transformers 4.35's ``_init_weights`` drew them, so runs are reproducible.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

log = logging.getLogger(__name__)

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
               calibrate: Callable[[nn.Module], dict[str, torch.Tensor]] | None = None, calibration: str = ""):
    """LlamaForCausalLM from the official folder (``.bin`` shards read with ``weights_only=True``), LoRA merged.

    With ``quantization`` ("int8" or "int4", on a CPU) the shards stream into a model without weights, each Linear
    merged and quantised as soon as it is read (``shared.quantize.fill_quantized``): loading never holds the whole
    model in ``dtype`` (issue #28: 13 GB for Llama-2-7B in bf16, against about 4 GB quantised to int4). int4 with
    ``calibrate`` streams the shards twice: ``calibrate(model)`` runs a few prompts through the model quantised to
    nearest (embeddings resized) and answers what each layer's inputs are (``shared.quantize.input_statistics``),
    then each of its layers is quantised again, in place, with those statistics as AWQ does (BENCHMARKS.md: it keeps
    more of the answers), memory holding one model and one layer.

    The quantised model is cached (``quantized_cache``: keyed by the shards, the LoRA, ``calibration``, which names
    what ``calibrate`` reads, and the settings) and the next load with the same inputs reads it in seconds instead of
    quantising again; a cache that cannot be read is logged and quantised anew. A calibrated load whose
    ``calibration`` is not named is not cached (its key could not tell one calibration from another)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    if quantization and device != "cpu":
        raise ValueError(f"quantization={quantization!r} runs on a CPU; a GPU runs the model in {dtype}")
    folder, pairs = Path(folder), lora_pairs(lora)
    layers = LlamaConfig.from_pretrained(folder).num_hidden_layers
    if pairs and len(pairs) != len(LORA_TARGETS) * layers:
        raise ValueError(f"the checkpoint holds LoRA for {len(pairs)} modules, expected {len(LORA_TARGETS) * layers}")
    if not quantization:
        model = LlamaForCausalLM.from_pretrained(str(folder), dtype=dtype, weights_only=True, low_cpu_mem_usage=True)
        merge_lora(model, pairs)
        resize_for_molm(model, vocab_size, seed)
        return model.to(device).eval()
    from shared.quantize import quantize_linears, save_quantized

    calibrated = quantization == "int4" and calibrate is not None
    cached = None if calibrated and not calibration else quantized_cache(  # unnamed calibration inputs: no cache
        folder, lora, quantization, dtype, vocab_size, seed, calibration if calibrated else "")
    model, statistics = _read_cached(folder, cached, vocab_size) if cached and cached.is_file() else (None, None)
    if model is None:
        model = _load_quantized(folder, pairs, dtype, quantization)
        resize_for_molm(model, vocab_size, seed)
        if calibrated:
            from shared.pool import release_memory

            statistics = calibrate(model)
            release_memory()  # the calibration's activations
            _load_quantized(folder, pairs, dtype, quantization, statistics, into=model)
        if cached:
            save_quantized(model, cached, statistics, replaces=cached.name.rsplit("-", 1)[0] + "-*")
    quantize_linears(model, quantization, statistics)  # the output layer, with the two new rows (int8; int4 packs 16)
    return model.eval()


def quantized_cache(folder: Path, lora: dict[str, torch.Tensor], mode: str, dtype: torch.dtype, vocab_size: int,
                    seed: int, calibration: str) -> Path:
    """Where ``load_llama`` caches the Llama of ``folder`` quantised to ``mode``: named by the folder and ``mode``, and
    keyed by everything the quantised model is made of (the shards and config as files, the LoRA's values, the
    resized vocabulary and its seed, ``calibration``, the dtype, ``shared.quantize.CACHE_FORMAT`` and PyTorch's
    version); a new key's file replaces the folder's older one."""
    from shared.checkpoints import cache_path, tensors_digest
    from shared.quantize import CACHE_FORMAT

    place = hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:8]
    return cache_path(f"llama-{mode}-{place}", *_shards(folder), folder / "config.json", tensors_digest(lora), mode,
                      str(dtype), str(vocab_size), str(seed), calibration, CACHE_FORMAT, torch.__version__)


def _read_cached(folder: Path, cached: Path, vocab_size: int):
    """The quantised Llama and its statistics from ``load_llama``'s cache, or ``(None, None)`` (logged) where the file
    cannot be read or does not fit the model."""
    from shared.errors import CheckpointError
    from shared.quantize import read_quantized

    model = _empty_llama(folder, vocab_size)
    try:
        statistics = read_quantized(model, cached)
    except (ValueError, CheckpointError) as error:
        log.warning("Quantising %s again: its cached quantised form %s could not be used (%s).", folder, cached, error)
        return None, None
    return model, statistics or None


def _empty_llama(folder: Path, vocab_size: int | None = None):
    """The Llama of ``folder``'s config (its vocabulary ``vocab_size`` rows if given), its parameters on the meta device
    and its buffers (rotary frequencies) computed as usual, with the folder's generation config."""
    from accelerate import init_empty_weights
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    config = LlamaConfig.from_pretrained(folder)
    if vocab_size is not None:
        config.vocab_size = vocab_size
    with init_empty_weights():
        model = LlamaForCausalLM(config)
    if (folder / "generation_config.json").is_file():
        model.generation_config = GenerationConfig.from_pretrained(folder)
    return model


def _load_quantized(folder: Path, pairs: dict[str, tuple[torch.Tensor, torch.Tensor]], dtype: torch.dtype,
                    mode: str, statistics: dict[str, torch.Tensor] | None = None, into=None):
    """The Llama of ``folder`` with every Linear but the output layer in ``mode`` (calibrated by ``statistics``), the
    LoRA in its weights, loaded shard by shard and tensor by tensor (``shared.checkpoints.stream_torch_state``);
    ``into``: a model loaded so before, whose layers are quantised again in place (``shared.quantize.requantize``)."""
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
        model = _empty_llama(folder)
        fill_quantized(model, tensors, mode, dtype, merge, statistics)
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
