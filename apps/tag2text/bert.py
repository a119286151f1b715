"""The BLIP-style BERT ("med") Tag2Text uses, with module names as in the official state_dict.

Differs from stock BERT: no token-type embeddings; cross-attention keys/values project from ``encoder_width``
(1024 for image tokens, 768 for tag tokens); layers may lack self-attention (the tagging head). The decoder
self-attention keeps a KV cache, and cross-attention keys/values are computed once per caption.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from apps.tag2text.config import BertSize

# The official code adds -10000 at masked positions; kept so padded tags behave the same.
MASKED = -10000.0


def padding_bias(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """(B, T) 1/0 mask -> (B, 1, 1, T) additive attention bias."""
    return (1.0 - mask[:, None, None, :].to(dtype)) * MASKED


class BertEmbeddings(nn.Module):
    def __init__(self, cfg: BertSize):
        super().__init__()
        self.word_embeddings = nn.Embedding(cfg.vocab_size, cfg.hidden_size, padding_idx=cfg.pad_token_id)
        self.position_embeddings = nn.Embedding(cfg.max_position_embeddings, cfg.hidden_size)
        self.LayerNorm = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)
        self.register_buffer("position_ids", torch.arange(cfg.max_position_embeddings).unsqueeze(0))

    def reset_buffers(self) -> None:
        n = self.position_embeddings.num_embeddings
        self.position_ids = torch.arange(n, device=self.word_embeddings.weight.device).unsqueeze(0)

    def forward(self, input_ids: torch.Tensor, past_length: int = 0) -> torch.Tensor:
        positions = self.position_ids[:, past_length:past_length + input_ids.shape[1]]
        return self.LayerNorm(self.word_embeddings(input_ids) + self.position_embeddings(positions))


class BertSelfAttention(nn.Module):
    def __init__(self, cfg: BertSize, kv_width: int | None = None):
        super().__init__()
        self.num_heads = cfg.num_attention_heads
        self.head_size = cfg.hidden_size // cfg.num_attention_heads
        kv_width = kv_width or cfg.hidden_size
        self.query = nn.Linear(cfg.hidden_size, cfg.hidden_size)
        self.key = nn.Linear(kv_width, cfg.hidden_size)
        self.value = nn.Linear(kv_width, cfg.hidden_size)

    def heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, hidden) -> (B, heads, T, head_size)."""
        return x.view(x.shape[0], x.shape[1], self.num_heads, self.head_size).transpose(1, 2)

    def key_value(self, source: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, S, kv_width) -> keys and values, each (B, heads, S, head_size)."""
        return self.heads(self.key(source)), self.heads(self.value(source))

    def forward(self, hidden, bias=None, kv_source=None, past=None, kv=None):
        """Attend from ``hidden`` to ``kv_source`` (itself when None) or to precomputed ``kv``.

        Shapes: ``hidden`` (B, T, hidden); ``kv_source`` (B, S, kv_width); ``past`` and ``kv`` hold (B, heads, S,
        head_size) pairs; ``bias`` broadcasts to (B, heads, T, S). Returns (context (B, T, hidden), (keys, values));
        with ``past`` the new keys/values are appended to it along S.
        """
        if kv is None:
            k, v = self.key_value(hidden if kv_source is None else kv_source)  # (B, heads, S, head_size)
            if past is not None:
                k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)  # S = past + T
        else:
            k, v = kv
        q = self.heads(self.query(hidden))  # (B, heads, T, head_size)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_size)  # (B, heads, T, S)
        if bias is not None:
            scores = scores + bias
        ctx = scores.softmax(-1) @ v  # (B, heads, T, head_size)
        return ctx.transpose(1, 2).reshape(hidden.shape[0], hidden.shape[1], -1), (k, v)  # (B, T, hidden)


class BertSelfOutput(nn.Module):
    def __init__(self, cfg: BertSize):
        super().__init__()
        self.dense = nn.Linear(cfg.hidden_size, cfg.hidden_size)
        self.LayerNorm = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)

    def forward(self, hidden: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dense(hidden) + residual)


class BertAttention(nn.Module):
    def __init__(self, cfg: BertSize, kv_width: int | None = None):
        super().__init__()
        self.self = BertSelfAttention(cfg, kv_width)
        self.output = BertSelfOutput(cfg)

    def forward(self, hidden, bias=None, kv_source=None, past=None, kv=None):
        ctx, present = self.self(hidden, bias, kv_source, past, kv)
        return self.output(ctx, hidden), present


class BertIntermediate(nn.Module):
    def __init__(self, cfg: BertSize):
        super().__init__()
        self.dense = nn.Linear(cfg.hidden_size, cfg.intermediate_size)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.dense(hidden))


class BertOutput(nn.Module):
    def __init__(self, cfg: BertSize):
        super().__init__()
        self.dense = nn.Linear(cfg.intermediate_size, cfg.hidden_size)
        self.LayerNorm = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)

    def forward(self, hidden: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dense(hidden) + residual)


class BertLayer(nn.Module):
    """[self-attention] -> cross-attention -> feed-forward. The tagging head has no self-attention."""

    def __init__(self, cfg: BertSize, encoder_width: int, self_attention: bool = True):
        super().__init__()
        if self_attention:
            self.attention = BertAttention(cfg)
        self.crossattention = BertAttention(cfg, kv_width=encoder_width)
        self.intermediate = BertIntermediate(cfg)
        self.output = BertOutput(cfg)

    def forward(self, hidden, self_bias=None, encoder_states=None, encoder_bias=None, past=None, cross_kv=None):
        present = None
        if hasattr(self, "attention"):
            hidden, present = self.attention(hidden, self_bias, past=past)
        hidden, _ = self.crossattention(hidden, encoder_bias, kv_source=encoder_states, kv=cross_kv)
        return self.output(self.intermediate(hidden), hidden), present


class BertEncoder(nn.Module):
    def __init__(self, cfg: BertSize, encoder_width: int, self_attention: bool = True):
        super().__init__()
        self.layer = nn.ModuleList(BertLayer(cfg, encoder_width, self_attention) for _ in range(cfg.num_hidden_layers))

    def forward(self, hidden, self_bias=None, encoder_states=None, encoder_bias=None, past=None, cross_kv=None):
        presents = []
        for i, layer in enumerate(self.layer):
            hidden, present = layer(hidden, self_bias, encoder_states, encoder_bias,
                                    None if past is None else past[i], None if cross_kv is None else cross_kv[i])
            presents.append(present)
        return hidden, presents


class BertModel(nn.Module):
    """Token embeddings + encoder; no pooler (the official model has none)."""

    def __init__(self, cfg: BertSize, encoder_width: int):
        super().__init__()
        self.embeddings = BertEmbeddings(cfg)
        self.encoder = BertEncoder(cfg, encoder_width)

    def forward(self, input_ids, attention_mask, encoder_states, encoder_mask=None):
        """Bidirectional text encoding that cross-attends to ``encoder_states`` (the tag encoder)."""
        hidden = self.embeddings(input_ids)
        encoder_bias = None if encoder_mask is None else padding_bias(encoder_mask, hidden.dtype)
        hidden, _ = self.encoder(hidden, padding_bias(attention_mask, hidden.dtype), encoder_states, encoder_bias)
        return hidden


class TaggingHead(nn.Module):
    """The recognition decoder: label queries cross-attend to image tokens (no embeddings, no self-attention)."""

    def __init__(self, cfg: BertSize, encoder_width: int):
        super().__init__()
        self.encoder = BertEncoder(cfg, encoder_width, self_attention=False)

    def forward(self, queries: torch.Tensor, image_embeds: torch.Tensor) -> torch.Tensor:
        """(B, num_tags, hidden) label queries, (B, T, vision_width) image tokens -> (B, num_tags, hidden)."""
        return self.encoder(queries, encoder_states=image_embeds)[0]


class BertPredictionHeadTransform(nn.Module):
    def __init__(self, cfg: BertSize):
        super().__init__()
        self.dense = nn.Linear(cfg.hidden_size, cfg.hidden_size)
        self.LayerNorm = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(F.gelu(self.dense(hidden)))


class BertLMPredictionHead(nn.Module):
    def __init__(self, cfg: BertSize):
        super().__init__()
        self.transform = BertPredictionHeadTransform(cfg)
        self.decoder = nn.Linear(cfg.hidden_size, cfg.vocab_size)
        self.bias = self.decoder.bias  # one tensor under two official keys

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        hidden = self.transform(hidden)
        if hidden.dim() == 2 and hidden.shape[0] <= 32 and hidden.device.type == "cpu":
            # A beam-search step has a few rows: weight-major addmm reads the 30k-row matrix ~4x faster than linear.
            return torch.addmm(self.decoder.bias.unsqueeze(1), self.decoder.weight, hidden.t()).t()
        return self.decoder(hidden)


class BertOnlyMLMHead(nn.Module):
    def __init__(self, cfg: BertSize):
        super().__init__()
        self.predictions = BertLMPredictionHead(cfg)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.predictions(hidden)


class BertLMHeadModel(nn.Module):
    """The caption decoder: causal self-attention with a KV cache, cross-attention to the tag encoder output."""

    def __init__(self, cfg: BertSize, encoder_width: int):
        super().__init__()
        self.bert = BertModel(cfg, encoder_width)
        self.cls = BertOnlyMLMHead(cfg)
        self.tie_weights()

    def tie_weights(self) -> None:
        self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight
        self.cls.predictions.bias = self.cls.predictions.decoder.bias

    def cross_key_values(self, encoder_states: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Per-layer cross-attention keys/values: they depend only on the tag encoding, so compute them once."""
        return [layer.crossattention.self.key_value(encoder_states) for layer in self.bert.encoder.layer]

    def forward(self, input_ids, cross_kv=None, past=None, encoder_states=None):
        """Next-token logits for the last position, and the new self-attention keys/values.

        Cross-attention uses ``cross_kv`` (cached) or projects ``encoder_states`` afresh; ``past=None`` runs the whole
        prefix.
        """
        past_length = 0 if past is None else past[0][0].shape[2]  # past: per layer (B, heads, P, head_size) pairs
        hidden = self.bert.embeddings(input_ids, past_length)  # (B, T, hidden)
        t = input_ids.shape[1]
        bias = None
        if t > 1:  # causal mask over the new positions (a single new token may see everything before it)
            causal = torch.ones(t, past_length + t, dtype=torch.bool, device=input_ids.device).tril(past_length)
            bias = torch.zeros(causal.shape, dtype=hidden.dtype, device=hidden.device).masked_fill(~causal, MASKED)
        hidden, presents = self.bert.encoder(hidden, bias, encoder_states, past=past, cross_kv=cross_kv)
        return self.cls(hidden[:, -1]), presents  # (B, vocab) logits of the last position
