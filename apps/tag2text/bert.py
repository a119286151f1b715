"""The BLIP-style BERT ("med") Tag2Text uses, with module names as in the official state_dict.

Differs from stock BERT: no token-type embeddings; cross-attention keys/values project from ``encoder_width``
(1024 for image tokens, 768 for tag tokens); layers may lack self-attention (the tagging head). The decoder
self-attention keeps a KV cache, and cross-attention keys/values are computed once per caption.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from apps.tag2text.config import BertSize
from apps.tag2text.reuse import derived, gelu_

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


class LayerCache:
    """One decoder layer's slice of a ``KVCache``: appends new keys/values and returns all of them so far."""

    def __init__(self, cache: KVCache, index: int):
        self.cache, self.index = cache, index

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """New (B, heads, T, head_size) keys/values -> all of them, (B, heads, past + T, head_size) views."""
        c = self.cache
        end = c.length + k.shape[2]
        c.reserve(end)
        c.keys[self.index, :, :, c.length:end] = k
        c.values[self.index, :, :, c.length:end] = v
        return c.keys[self.index, :, :, :end], c.values[self.index, :, :, :end]


class KVCache:
    """Self-attention keys/values of every decoder layer in two preallocated tensors, (layers, B, heads, capacity,
    head_size): a step writes its one new position in place instead of concatenating a new tensor per layer."""

    def __init__(self, layers: int, rows: int, heads: int, head_size: int, capacity: int, like: torch.Tensor):
        shape = (layers, rows, heads, capacity, head_size)
        self.keys = torch.empty(shape, dtype=like.dtype, device=like.device)
        self.values = torch.empty(shape, dtype=like.dtype, device=like.device)
        self.length = 0  # positions filled (the same for every layer once a forward pass is done)
        self.layers = [LayerCache(self, i) for i in range(layers)]

    def reserve(self, length: int) -> None:
        """Make room for ``length`` positions (doubling), keeping what is there."""
        capacity = self.keys.shape[3]
        if length <= capacity:
            return
        grown = max(length, 2 * capacity)
        for name in ("keys", "values"):
            old = getattr(self, name)
            new = old.new_empty((*old.shape[:3], grown, old.shape[4]))
            new[:, :, :, :self.length] = old[:, :, :, :self.length]
            setattr(self, name, new)

    def reorder(self, rows: list[int]) -> None:
        """Row i takes the keys/values of row ``rows[i]`` (beam search keeps some beams and drops others); rows that
        keep their own are not copied."""
        moved = [i for i, row in enumerate(rows) if row != i]
        if not moved:
            return
        n, device = self.length, self.keys.device
        targets, sources = torch.tensor(moved, device=device), torch.tensor([rows[i] for i in moved], device=device)
        self.keys[:, targets, :, :n] = self.keys[:, sources, :, :n]  # the sources are read before any row is written
        self.values[:, targets, :, :n] = self.values[:, sources, :, :n]

    def repeat_rows(self, times: int) -> KVCache:
        """A new cache in which row r of this one is rows r*times ... r*times + times - 1 (one prompt, many beams)."""
        layers, rows, heads, capacity, head_size = self.keys.shape
        out = KVCache(layers, rows * times, heads, head_size, capacity, self.keys)
        n = out.length = self.length
        out.keys[:, :, :, :n] = self.keys[:, :, :, :n].repeat_interleave(times, dim=1)
        out.values[:, :, :, :n] = self.values[:, :, :, :n].repeat_interleave(times, dim=1)
        return out


class BertSelfAttention(nn.Module):
    """Multi-head attention from ``hidden`` to itself (self-attention) or to other states (cross-attention).

    Self-attention projects queries, keys and values with one matmul once ``fuse_qkv`` has put the three weights
    in one tensor (the three Parameters become views of it, so state_dict keys and values are unchanged).
    """

    def __init__(self, cfg: BertSize, kv_width: int | None = None):
        super().__init__()
        self.num_heads = cfg.num_attention_heads
        self.head_size = cfg.hidden_size // cfg.num_attention_heads
        kv_width = kv_width or cfg.hidden_size
        self.query = nn.Linear(cfg.hidden_size, cfg.hidden_size)
        self.key = nn.Linear(kv_width, cfg.hidden_size)
        self.value = nn.Linear(kv_width, cfg.hidden_size)
        self.qkv_weight: torch.Tensor | None = None  # (3*hidden, hidden) once fused; query/key/value are views
        self.qkv_bias: torch.Tensor | None = None

    def fuse_qkv(self) -> None:
        """Concatenate the query, key and value weights once and make the three Parameters views of the result."""
        linears = (self.query, self.key, self.value)
        with torch.no_grad(), torch.inference_mode(False):  # normal tensors, even if called in inference mode
            weight = torch.cat([lin.weight for lin in linears])  # (3*hidden, hidden)
            bias = torch.cat([lin.bias for lin in linears])
            h = self.query.out_features
            for i, lin in enumerate(linears):
                lin.weight = nn.Parameter(weight[i * h:(i + 1) * h], requires_grad=False)
                lin.bias = nn.Parameter(bias[i * h:(i + 1) * h], requires_grad=False)
        self.qkv_weight, self.qkv_bias = weight, bias
        self._fused_at = self._addresses()

    def _addresses(self) -> tuple[int, ...]:
        return tuple(t.data_ptr() for lin in (self.query, self.key, self.value) for t in (lin.weight, lin.bias))

    def is_fused(self) -> bool:
        """True while query/key/value still are the views ``fuse_qkv`` made (``.to(dtype)`` etc. replace them;
        ``load_state_dict`` copies into them). The fused tensors stay alive, so no new tensor can take their place."""
        return self.qkv_weight is not None and self._addresses() == self._fused_at

    def heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, hidden) -> (B, heads, T, head_size)."""
        return x.view(x.shape[0], x.shape[1], self.num_heads, self.head_size).transpose(1, 2)

    def key_value(self, source: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, S, kv_width) -> keys and values, each (B, heads, S, head_size)."""
        return self.heads(self.key(source)), self.heads(self.value(source))

    def query_key_value(self, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Self-attention projections of (B, T, hidden): three (B, heads, T, head_size) tensors."""
        if not self.is_fused():
            return self.heads(self.query(hidden)), *self.key_value(hidden)
        b, t, _ = hidden.shape
        qkv = F.linear(hidden, self.qkv_weight, self.qkv_bias)  # (B, T, 3*hidden)
        qkv = qkv.view(b, t, 3, self.num_heads, self.head_size).permute(2, 0, 3, 1, 4)  # 3 x (B, heads, T, hs)
        return qkv[0], qkv[1], qkv[2]

    def forward(self, hidden, bias=None, kv_source=None, past=None, kv=None, query=None):
        """Attend from ``hidden`` to ``kv_source`` (itself when None) or to precomputed ``kv``.

        Shapes: ``hidden`` (B, T, hidden); ``kv_source`` (B, S, kv_width); ``kv`` a (B, heads, S, head_size) pair;
        ``past`` a ``LayerCache`` that the new keys/values are appended to (S = past + T); ``bias`` broadcasts to
        (B, heads, T, S); ``query``: cross-attention queries already projected from ``hidden``, (B, heads, T,
        head_size). Returns (context (B, T, hidden), (keys, values)).
        """
        if kv is not None or kv_source is not None:
            q = self.heads(self.query(hidden)) if query is None else query
            k, v = kv if kv is not None else self.key_value(kv_source)
        else:
            q, k, v = self.query_key_value(hidden)  # (B, heads, T, head_size) each
            if past is not None:
                k, v = past.append(k, v)  # (B, heads, past + T, head_size)
        # softmax(q k^T / sqrt(head_size) + bias) v in one kernel: (B, heads, T, head_size)
        ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=None if bias is None else bias.to(q.dtype))
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

    def forward(self, hidden, bias=None, kv_source=None, past=None, kv=None, query=None):
        ctx, present = self.self(hidden, bias, kv_source, past, kv, query)
        return self.output(ctx, hidden), present


class BertIntermediate(nn.Module):
    def __init__(self, cfg: BertSize):
        super().__init__()
        self.dense = nn.Linear(cfg.hidden_size, cfg.intermediate_size)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return gelu_(self.dense(hidden))


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

    def forward(self, hidden, self_bias=None, encoder_states=None, encoder_bias=None, past=None, cross_kv=None,
                cross_query=None):
        present = None
        if hasattr(self, "attention"):
            hidden, present = self.attention(hidden, self_bias, past=past)
        hidden, _ = self.crossattention(hidden, encoder_bias, kv_source=encoder_states, kv=cross_kv, query=cross_query)
        return self.output(self.intermediate(hidden), hidden), present


class BertEncoder(nn.Module):
    def __init__(self, cfg: BertSize, encoder_width: int, self_attention: bool = True):
        super().__init__()
        self.layer = nn.ModuleList(BertLayer(cfg, encoder_width, self_attention) for _ in range(cfg.num_hidden_layers))

    def forward(self, hidden, self_bias=None, encoder_states=None, encoder_bias=None, past=None, cross_kv=None):
        """``past``: a ``KVCache`` (its layers' caches are appended to); ``cross_kv``: per-layer (keys, values)."""
        for i, layer in enumerate(self.layer):
            hidden, _ = layer(hidden, self_bias, encoder_states, encoder_bias,
                              None if past is None else past.layers[i], None if cross_kv is None else cross_kv[i])
        return hidden, past


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

    def first_queries(self, labels: torch.Tensor) -> torch.Tensor:
        """The first layer's cross-attention queries, (1, heads, num_tags, head_size): they project the label
        embeddings alone, so they are the same for every image and computed once per weights."""
        attn = self.encoder.layer[0].crossattention.self
        return derived(self, "first_queries_cache", lambda: attn.heads(attn.query(labels.unsqueeze(0))),
                       labels, attn.query.weight, attn.query.bias)

    def forward(self, labels: torch.Tensor, image_embeds: torch.Tensor) -> torch.Tensor:
        """(num_tags, hidden) label embeddings (the queries), (B, T, vision_width) image tokens -> (B, num_tags,
        hidden)."""
        b = image_embeds.shape[0]
        hidden = labels.unsqueeze(0).expand(b, -1, -1)
        query = self.first_queries(labels).expand(b, -1, -1, -1)
        for i, layer in enumerate(self.encoder.layer):
            hidden, _ = layer(hidden, encoder_states=image_embeds, cross_query=query if i == 0 else None)
        return hidden


class BertPredictionHeadTransform(nn.Module):
    def __init__(self, cfg: BertSize):
        super().__init__()
        self.dense = nn.Linear(cfg.hidden_size, cfg.hidden_size)
        self.LayerNorm = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(gelu_(self.dense(hidden)))


class BertLMPredictionHead(nn.Module):
    def __init__(self, cfg: BertSize):
        super().__init__()
        self.transform = BertPredictionHeadTransform(cfg)
        self.decoder = nn.Linear(cfg.hidden_size, cfg.vocab_size)
        self.bias = self.decoder.bias  # one tensor under two official keys

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.transform(hidden))


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

    def fuse_qkv(self) -> None:
        for layer in self.bert.encoder.layer:
            layer.attention.self.fuse_qkv()

    def caption_step(self) -> CaptionStep | None:
        """The one-token step of ``forward`` with the weights it reads collected now (None unless ``fuse_qkv`` holds:
        then ``forward`` does the steps)."""
        return CaptionStep(self) if all(layer.attention.self.is_fused() for layer in self.bert.encoder.layer) else None

    def new_cache(self, rows: int, capacity: int, like: torch.Tensor) -> KVCache:
        """An empty ``KVCache`` for ``rows`` sequences of up to ``capacity`` tokens (it grows if needed)."""
        attn = self.bert.encoder.layer[0].attention.self
        return KVCache(len(self.bert.encoder.layer), rows, attn.num_heads, attn.head_size, capacity, like)

    def forward(self, input_ids, cross_kv=None, past=None, encoder_states=None):
        """Next-token logits for the last position, and the ``KVCache`` holding every position's keys/values.

        Cross-attention uses ``cross_kv`` (cached) or projects ``encoder_states`` afresh; ``past=None`` runs the whole
        prefix (in a new cache); with ``past`` only the new tokens are run and appended to it.
        """
        t = input_ids.shape[1]
        if past is None:
            past = self.new_cache(input_ids.shape[0], t, self.bert.embeddings.word_embeddings.weight)
        past_length = past.length
        hidden = self.bert.embeddings(input_ids, past_length)  # (B, T, hidden)
        bias = None
        if t > 1:  # causal mask over the new positions (a single new token may see everything before it)
            causal = torch.ones(t, past_length + t, dtype=torch.bool, device=input_ids.device).tril(past_length)
            bias = torch.zeros(causal.shape, dtype=hidden.dtype, device=hidden.device).masked_fill(~causal, MASKED)
        hidden, _ = self.bert.encoder(hidden, bias, encoder_states, past=past, cross_kv=cross_kv)
        past.length += t
        return self.cls(hidden[:, -1]), past  # (B, vocab) logits of the last position


class _StepLayer(NamedTuple):
    """What one caption step reads from a decoder layer: (weight, bias) of each linear, LayerNorm arguments."""
    qkv: tuple[torch.Tensor, torch.Tensor]
    attention_out: tuple[torch.Tensor, torch.Tensor]
    attention_norm: tuple
    cross_query: tuple[torch.Tensor, torch.Tensor]
    cross_out: tuple[torch.Tensor, torch.Tensor]
    cross_norm: tuple
    intermediate: tuple[torch.Tensor, torch.Tensor]
    out: tuple[torch.Tensor, torch.Tensor]
    out_norm: tuple

    @classmethod
    def of(cls, layer: BertLayer) -> _StepLayer:
        attention, cross = layer.attention, layer.crossattention

        def linear(module: nn.Linear) -> tuple[torch.Tensor, torch.Tensor]:
            return module.weight, module.bias

        def norm(block: nn.Module) -> tuple:
            n = block.LayerNorm
            return n.normalized_shape, n.weight, n.bias, n.eps

        return cls((attention.self.qkv_weight, attention.self.qkv_bias), linear(attention.output.dense),
                   norm(attention.output), linear(cross.self.query), linear(cross.output.dense), norm(cross.output),
                   linear(layer.intermediate.dense), linear(layer.output.dense), norm(layer.output))


class CaptionStep:
    """``BertLMHeadModel.forward`` for one new token per row with a ``KVCache`` and precomputed cross-attention
    keys/values -> (rows, vocab) logits of the next token. The same kernels on the same numbers (tests compare them
    bit for bit), but the weights are collected once per caption instead of looked up through the module tree about
    500 times per token, which cost ~1 ms of each ~27 ms step at full size. Build it after the weights are final."""

    def __init__(self, decoder: BertLMHeadModel):
        attn = decoder.bert.encoder.layer[0].attention.self
        self.decoder, self.heads, self.head_size = decoder, attn.num_heads, attn.head_size
        self.layers = [_StepLayer.of(layer) for layer in decoder.bert.encoder.layer]

    def __call__(self, input_ids: torch.Tensor, cross_kv: list[tuple[torch.Tensor, torch.Tensor]],
                 past: KVCache) -> torch.Tensor:
        """(rows, 1) new token ids -> (rows, vocab) logits; their keys/values are appended to ``past``."""
        rows, pos = input_ids.shape[0], past.length
        shape = (rows, self.heads, 1, self.head_size)
        hidden = self.decoder.bert.embeddings(input_ids, pos)[:, 0]  # (rows, hidden)
        past.reserve(pos + 1)
        layers = zip(self.layers, past.keys, past.values, cross_kv, strict=True)  # keys: (rows, heads, capacity, hs)
        for p, keys, values, (cross_keys, cross_values) in layers:
            q, k, v = F.linear(hidden, *p.qkv).view(rows, 3, *shape[1:]).unbind(1)  # 3 x (rows, heads, 1, head_size)
            keys.narrow(2, pos, 1).copy_(k)
            values.narrow(2, pos, 1).copy_(v)
            ctx = F.scaled_dot_product_attention(q, keys.narrow(2, 0, pos + 1), values.narrow(2, 0, pos + 1))
            hidden = F.layer_norm(F.linear(ctx.reshape(rows, -1), *p.attention_out) + hidden, *p.attention_norm)
            q = F.linear(hidden, *p.cross_query).view(shape)
            ctx = F.scaled_dot_product_attention(q, cross_keys, cross_values)
            hidden = F.layer_norm(F.linear(ctx.reshape(rows, -1), *p.cross_out) + hidden, *p.cross_norm)
            inner = gelu_(F.linear(hidden, *p.intermediate))
            hidden = F.layer_norm(F.linear(inner, *p.out) + hidden, *p.out_norm)
        past.length = pos + 1
        return self.decoder.cls(hidden)
