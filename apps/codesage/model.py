"""The official CodeSage encoder, loaded from its released files unchanged, without ``trust_remote_code``.

``codesage/codesage-small`` (and -base, -large) ship remote code (``modeling_codesage.py``, ``config_codesage.py``)
that imports ``Conv1D`` from ``transformers.modeling_utils`` and no longer loads on today's transformers. Its
``CodeSageModel`` is a bidirectional GPT-2-style encoder, written here from the released code's structure:

- token (``wte``) and learned absolute position (``wpe``) embeddings, summed;
- ``num_hidden_layers`` pre-LayerNorm blocks ``h.{i}``: ``ln_1``, self-attention over every token (no causal mask;
  padded keys get ``-10000`` added, as the official ``(1 - mask) * -10000``), its fused ``c_attn`` (query, key,
  value) and ``c_proj`` stored as GPT-2's ``Conv1D`` (weight ``[in, out]``), a residual; ``ln_2``, the MLP
  ``c_fc`` -> ``gelu_new`` (tanh GELU) -> ``c_proj``, a residual;
- ``ln_f``; the sequence embedding (the official ``pooler_output``) is the mean of the last hidden states over the
  tokens the attention mask keeps.

The checkpoint's keys are the module's own (``wte.weight``, ``h.0.attn.c_attn.weight``, ...); a checkpoint saved
from ``CodeSageForMaskedLM`` carries them under ``transformer.`` and an ``lm_head.weight``, which is not used for
embeddings (transformers' loading rules for ``base_model_prefix = "transformer"``). Any other unknown or missing key
is an error naming it. Dropout is off (inference only).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

from shared.checkpoints import load_safetensors, load_torch_state
from shared.errors import CheckpointError

CONFIG_NAME = "config.json"
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")  # the first present is read
PREFIX, HEAD_KEY = "transformer.", "lm_head.weight"
MASKED = -10000.0  # the official additive mask for padded keys


@dataclass(frozen=True)
class CodeSageConfig:
    """The config.json fields the forward pass reads (the official ``CodeSageConfig``'s names and defaults)."""

    vocab_size: int = 50257
    max_position_embeddings: int = 1024
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int | None = 3072
    activation_function: str = "gelu_new"
    layer_norm_epsilon: float = 1e-5
    pad_token_id: int = 49153
    eos_token_id: int = 0

    @classmethod
    def from_file(cls, path: Path) -> CodeSageConfig:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("model_type", "codesage") != "codesage":
            raise ValueError(f"{path.name} describes a {data['model_type']!r} model, not CodeSage")
        if data.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError(f"{path.name}: position_embedding_type {data['position_embedding_type']!r} is not the "
                             "released absolute positions")
        fields = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        config = cls(**fields)
        if config.hidden_size % config.num_attention_heads:
            raise ValueError(f"{path.name}: hidden_size {config.hidden_size} is not divisible by "
                             f"num_attention_heads {config.num_attention_heads}")
        if config.activation_function not in ACTIVATIONS:
            raise ValueError(f"{path.name}: activation_function {config.activation_function!r} is not one of "
                             f"{', '.join(ACTIVATIONS)}")
        return config

    @property
    def inner_size(self) -> int:
        return self.intermediate_size or 4 * self.hidden_size


ACTIVATIONS = {  # transformers' ACT2FN names the official code accepts (its config asserts "gelu" in the name)
    "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "gelu": F.gelu,
}


class Conv1D(nn.Module):
    """GPT-2's linear layer as stored in the checkpoint: ``weight`` is ``[in, out]``."""

    def __init__(self, n_in: int, n_out: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_in, n_out))
        self.bias = nn.Parameter(torch.zeros(n_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).view(*x.shape[:-1], -1)


class Attention(nn.Module):
    def __init__(self, config: CodeSageConfig):
        super().__init__()
        self.heads = config.num_attention_heads
        self.c_attn = Conv1D(config.hidden_size, 3 * config.hidden_size)
        self.c_proj = Conv1D(config.hidden_size, config.hidden_size)

    def forward(self, x: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        batch, length, width = x.shape
        q, k, v = (t.view(batch, length, self.heads, -1).transpose(1, 2)
                   for t in self.c_attn(x).split(width, dim=2))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=1 / math.sqrt(width // self.heads))
        return self.c_proj(out.transpose(1, 2).reshape(batch, length, width))


class MLP(nn.Module):
    def __init__(self, config: CodeSageConfig):
        super().__init__()
        self.c_fc = Conv1D(config.hidden_size, config.inner_size)
        self.c_proj = Conv1D(config.inner_size, config.hidden_size)
        self.act = ACTIVATIONS[config.activation_function]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(self.act(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, config: CodeSageConfig):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_epsilon)
        self.attn = Attention(config)
        self.ln_2 = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_epsilon)
        self.mlp = MLP(config)

    def forward(self, x: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x), bias)
        return x + self.mlp(self.ln_2(x))


class CodeSageEncoder(nn.Module):
    """``CodeSageModel``'s forward pass; ``forward`` returns the last hidden states, ``embed`` the pooled output."""

    def __init__(self, config: CodeSageConfig):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.hidden_size)
        self.wpe = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.h = nn.ModuleList(Block(config) for _ in range(config.num_hidden_layers))
        self.ln_f = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_epsilon)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        positions = torch.arange(input_ids.shape[-1], device=input_ids.device)
        x = self.wte(input_ids) + self.wpe(positions)
        bias = None
        if attention_mask is not None:  # [batch, 1, 1, keys], as the official extended mask
            bias = ((1.0 - attention_mask[:, None, None, :].to(x.dtype)) * MASKED)
        for block in self.h:
            x = block(x, bias)
        return self.ln_f(x)

    def embed(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """The official ``pooler_output``: the mean of the last hidden states over the kept tokens."""
        hidden = self(input_ids, attention_mask)
        mask = attention_mask.to(hidden.dtype)
        return (hidden * mask[:, :, None]).sum(1) / mask.sum(1)[:, None]


def read_state(folder: Path) -> dict[str, torch.Tensor]:
    """The first of ``WEIGHT_FILES`` in ``folder``, its keys as ``CodeSageEncoder`` names them."""
    path = next((folder / name for name in WEIGHT_FILES if (folder / name).is_file()), None)
    if path is None:
        raise CheckpointError(f"Neither {' nor '.join(WEIGHT_FILES)} is in the weights folder; re-download the "
                              "weights.")
    state = load_safetensors(path) if path.suffix == ".safetensors" else load_torch_state(path)
    return {key.removeprefix(PREFIX): value for key, value in state.items() if key != HEAD_KEY}


def load_encoder(folder: str | Path, dtype: torch.dtype = torch.float32) -> CodeSageEncoder:
    """The encoder of a released CodeSage folder (config.json and its weights), unknown or missing keys refused."""
    folder = Path(folder)
    config = CodeSageConfig.from_file(folder / CONFIG_NAME)
    with torch.device("meta"):
        model = CodeSageEncoder(config)
    state = read_state(folder)
    expected = model.state_dict()
    wrong = [f"unknown key {k}" for k in sorted(set(state) - set(expected))]
    wrong += [f"missing key {k}" for k in sorted(set(expected) - set(state))]
    if wrong:
        more = f" (and {len(wrong) - 1} more)" if len(wrong) > 1 else ""
        raise CheckpointError(f"The CodeSage weights do not match config.json: {wrong[0]}{more}.")
    for key, value in state.items():
        if tuple(value.shape) != tuple(expected[key].shape):
            raise CheckpointError(f"The CodeSage weights do not match config.json: {key} has shape "
                                  f"{tuple(value.shape)}, config.json gives {tuple(expected[key].shape)}.")
    model.load_state_dict({k: v.to(dtype) for k, v in state.items()}, assign=True)
    return model.eval().requires_grad_(False)


BATCH_TOKENS = 8192  # padded tokens per forward pass (sequences sorted by length, so little of it is padding)


@torch.inference_mode()
def embed_sequences(encoder: CodeSageEncoder, sequences: list[tuple[int, ...]], pad_id: int,
                    batch_tokens: int = BATCH_TOKENS, callback=None) -> torch.Tensor:
    """Unit-length embeddings of token sequences (each ending with the end-of-sequence token), in their order.

    As the paper's evaluation: each padded with ``pad_id`` and masked where a token is ``pad_id`` (also the pad token
    a text spells out, as the evaluation's ``ids != pad_token_id`` does), the ``pooler_output`` L2-normalised.
    Unlike it, sequences go through the encoder sorted by length, in batches of at most ``batch_tokens`` padded
    tokens, so a short snippet is not padded to the longest (the official script pads every one to
    ``code_length``)."""
    device = next(encoder.parameters()).device
    order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))
    out = torch.empty(len(sequences), encoder.config.hidden_size)
    start = 0
    while start < len(order):
        end = start + 1
        while end < len(order) and (end - start + 1) * len(sequences[order[end]]) <= batch_tokens:
            end += 1
        longest = len(sequences[order[end - 1]])
        ids = torch.full((end - start, longest), pad_id, dtype=torch.long)
        mask = torch.zeros((end - start, longest), dtype=torch.long)
        for row, index in enumerate(order[start:end]):
            sequence = torch.tensor(sequences[index])
            ids[row, : len(sequence)] = sequence
            mask[row, : len(sequence)] = sequence != pad_id  # as the official mask: a "<pad>" typed in is left out
        pooled = encoder.embed(ids.to(device), mask.to(device)).float()
        out[order[start:end]] = F.normalize(pooled, p=2, dim=1).cpu()
        if callback is not None:
            callback(end, len(order))
        start = end
    return out
