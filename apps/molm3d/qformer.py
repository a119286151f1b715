"""The BLIP-2-style Q-Former of 3D-MoLM and the bridge from Uni-Mol to the language model, with official keys.

The Q-Former is LAVIS' ``BertLMHeadModel`` (SciBERT, BERT-base shape) run on query tokens only: 8 learned
queries self-attend, cross-attend to the Uni-Mol atom reps every 2nd layer (0, 2, ..., 10), and pass the query
FFN (``intermediate_query``/``output_query``). 3D-MoLM deletes the cls head, the word/position embeddings and the
text FFN, so none of them exists here. ``MolQFormer`` holds the pieces named as in 3D-MoLM's ``Blip2Llama``
(``graph_encoder``, ``ln_graph``, ``Qformer``, ``query_tokens``, ``llm_proj``), so checkpoint keys load unchanged
once the ``blip2opt.`` prefix is stripped.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from apps.molm3d.unimol import UniMolConfig, UniMolEncoder

BERT_HEAD_DIM = 64  # BERT-base convention; head count is not recoverable from tensor shapes


@dataclass
class QFormerConfig:
    hidden_size: int = 768
    num_layers: int = 12
    intermediate_size: int = 3072
    encoder_width: int = 512
    cross_attention_freq: int = 2
    num_query_tokens: int = 8
    llm_hidden_size: int = 4096
    layer_norm_eps: float = 1e-12
    max_position_embeddings: int = 512

    @property
    def num_heads(self) -> int:
        return max(1, self.hidden_size // BERT_HEAD_DIM)

    @classmethod
    def from_state_dict(cls, sd: dict[str, torch.Tensor]) -> QFormerConfig:
        """Sizes from a checkpoint's tensors (prefix already stripped): no config file is needed."""
        layer_ids = {int(k.split(".")[4]) for k in sd if k.startswith("Qformer.bert.encoder.layer.")}
        cross = sorted(int(k.split(".")[4]) for k in sd
                       if k.startswith("Qformer.bert.encoder.layer.") and k.endswith("crossattention.self.key.weight"))
        _, n_query, hidden = sd["query_tokens"].shape
        return cls(
            hidden_size=hidden, num_layers=len(layer_ids),
            intermediate_size=sd["Qformer.bert.encoder.layer.0.intermediate_query.dense.weight"].shape[0],
            encoder_width=sd["Qformer.bert.encoder.layer.0.crossattention.self.key.weight"].shape[1],
            cross_attention_freq=cross[1] - cross[0] if len(cross) > 1 else max(1, len(layer_ids)),
            num_query_tokens=n_query, llm_hidden_size=sd["llm_proj.weight"].shape[0],
        )


# The blocks below follow LAVIS' Q-Former (``lavis/models/blip2_models/Qformer.py``, itself HF transformers'
# ``modeling_bert`` with cross-attention every ``cross_attention_freq`` layers and a separate FFN for the query
# tokens). Class names say what each block is; the attribute names (``self``, ``output``, ``dense``, ``LayerNorm``,
# ``intermediate_query``, ...) are the official ones, because they are the checkpoint's state-dict keys.


class QFormerHeads(nn.Module):
    """Multi-head scaled dot-product attention (LAVIS/HF ``BertSelfAttention``), for self- and cross-attention.

    ``kv_width`` is the width of what keys and values are read from: ``hidden_size`` for self-attention, the Uni-Mol
    width (``encoder_width``) for cross-attention (HF's ``is_cross_attention``). Keys: ``query``, ``key``, ``value``.
    """

    def __init__(self, cfg: QFormerConfig, kv_width: int):
        super().__init__()
        self.num_heads, self.head_dim = cfg.num_heads, cfg.hidden_size // cfg.num_heads
        self.query = nn.Linear(cfg.hidden_size, cfg.hidden_size)
        self.key = nn.Linear(kv_width, cfg.hidden_size)
        self.value = nn.Linear(kv_width, cfg.hidden_size)

    def forward(self, x: torch.Tensor, context: torch.Tensor, mask_bias: torch.Tensor | None) -> torch.Tensor:
        """x [B, Q, H] queries; context [B, N, kv_width] (x itself for self-attention); mask_bias [B, 1, 1, N] added
        to the scores (0 = attend, dtype min = masked) or None -> [B, Q, H]."""
        b = x.shape[0]
        split = lambda t: t.view(b, -1, self.num_heads, self.head_dim).transpose(1, 2)  # [B, L, H] -> [B, nh, L, hd]
        q, k, v = split(self.query(x)), split(self.key(context)), split(self.value(context))  # [B, nh, Q|N, hd]
        scores = q @ k.transpose(-1, -2) / self.head_dim**0.5  # [B, nh, Q, N]
        if mask_bias is not None:
            scores = scores + mask_bias
        out = torch.softmax(scores, dim=-1) @ v  # [B, nh, Q, hd]
        return out.transpose(1, 2).reshape(b, -1, self.num_heads * self.head_dim)  # [B, Q, H]


class QFormerAddNorm(nn.Module):
    """Projection, residual add and LayerNorm (HF ``BertSelfOutput`` after attention, ``BertOutput`` after the FFN,
    where ``in_dim`` = ``intermediate_size``). Keys: ``dense``, ``LayerNorm``."""

    def __init__(self, cfg: QFormerConfig, in_dim: int | None = None):
        super().__init__()
        self.dense = nn.Linear(in_dim or cfg.hidden_size, cfg.hidden_size)
        self.LayerNorm = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)

    def forward(self, h: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        """h [B, Q, in_dim], residual [B, Q, H] -> [B, Q, H]."""
        return self.LayerNorm(self.dense(h) + residual)


class QFormerAttention(nn.Module):
    """Attention plus add & norm (HF ``BertAttention``): self-attention with ``kv_width`` = ``hidden_size``, the
    cross-attention into Uni-Mol with ``kv_width`` = ``encoder_width``. Keys: ``self.*``, ``output.*``."""

    def __init__(self, cfg: QFormerConfig, kv_width: int):
        super().__init__()
        self.self = QFormerHeads(cfg, kv_width)
        self.output = QFormerAddNorm(cfg)

    def forward(self, x: torch.Tensor, context: torch.Tensor, mask_bias: torch.Tensor | None = None) -> torch.Tensor:
        """x [B, Q, H], context [B, N, kv_width] -> [B, Q, H]."""
        return self.output(self.self(x, context, mask_bias), x)


class QFormerIntermediate(nn.Module):
    """The FFN's first half, Linear + GELU (HF ``BertIntermediate``). Key: ``dense``."""

    def __init__(self, cfg: QFormerConfig):
        super().__init__()
        self.dense = nn.Linear(cfg.hidden_size, cfg.intermediate_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """[B, Q, H] -> [B, Q, intermediate_size]."""
        return F.gelu(self.dense(x))


class QFormerLayer(nn.Module):
    """One Q-Former layer on the query tokens (LAVIS ``BertLayer`` with ``query_length`` = all tokens): self-attention,
    cross-attention into the molecule on layers where ``index % cross_attention_freq == 0``, then the query FFN.

    Keys: ``attention``, ``crossattention`` (those layers only), ``intermediate_query``, ``output_query``; the text
    FFN (``intermediate``/``output``) is deleted by 3D-MoLM.
    """

    def __init__(self, cfg: QFormerConfig, index: int):
        super().__init__()
        self.attention = QFormerAttention(cfg, cfg.hidden_size)
        self.has_cross_attention = index % cfg.cross_attention_freq == 0
        if self.has_cross_attention:
            self.crossattention = QFormerAttention(cfg, cfg.encoder_width)
        self.intermediate_query = QFormerIntermediate(cfg)
        self.output_query = QFormerAddNorm(cfg, cfg.intermediate_size)

    def forward(self, x: torch.Tensor, graph: torch.Tensor, graph_bias: torch.Tensor | None) -> torch.Tensor:
        """x [B, Q, H] queries, graph [B, N, encoder_width] atom reps, graph_bias [B, 1, 1, N] or None -> [B, Q, H]."""
        x = self.attention(x, x)
        if self.has_cross_attention:
            x = self.crossattention(x, graph, graph_bias)
        return self.output_query(self.intermediate_query(x), x)


class QFormerEmbeddings(nn.Module):
    """HF ``BertEmbeddings`` after 3D-MoLM's deletions: only the LayerNorm is left (the queries are the input);
    ``position_ids`` stays as a (persistent) buffer. Keys: ``LayerNorm``, ``position_ids``."""

    def __init__(self, cfg: QFormerConfig):
        super().__init__()
        self.LayerNorm = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)
        self.register_buffer("position_ids", torch.arange(cfg.max_position_embeddings).unsqueeze(0))


class QFormerEncoder(nn.Module):
    """The layer stack (HF ``BertEncoder``). Key: ``layer.<i>``."""

    def __init__(self, cfg: QFormerConfig):
        super().__init__()
        self.layer = nn.ModuleList(QFormerLayer(cfg, i) for i in range(cfg.num_layers))


class QFormerBert(nn.Module):
    """The BERT body (HF ``BertModel``, no pooler). Keys: ``embeddings``, ``encoder``."""

    def __init__(self, cfg: QFormerConfig):
        super().__init__()
        self.embeddings = QFormerEmbeddings(cfg)
        self.encoder = QFormerEncoder(cfg)


class QFormer(nn.Module):
    """Keys as ``Qformer.*`` in 3D-MoLM (255 at full size, with the ``position_ids`` buffer)."""

    def __init__(self, cfg: QFormerConfig | None = None):
        super().__init__()
        self.config = cfg or QFormerConfig()
        self.bert = QFormerBert(self.config)

    def forward(self, query_embeds: torch.Tensor, graph: torch.Tensor, graph_keep: torch.Tensor | None):
        """query_embeds [B, Q, H], graph [B, N, W], graph_keep [B, N] (True = real atom) or None -> [B, Q, H]."""
        bias = None
        if graph_keep is not None:  # 1 = attend, as the Q-Former expects (upstream passed the inverse, #8)
            masked = (~graph_keep)[:, None, None, :].to(query_embeds.dtype)  # [B, 1, 1, N], 1 = padding
            bias = masked * torch.finfo(query_embeds.dtype).min
        x = self.bert.embeddings.LayerNorm(query_embeds)
        for layer in self.bert.encoder.layer:
            x = layer(x, graph, bias)
        return x


class MolQFormer(nn.Module):
    """Uni-Mol -> ln_graph -> Q-Former -> llm_proj: the 8 vectors that replace the 8 ``<mol>`` embeddings."""

    def __init__(self, unimol_cfg: UniMolConfig | None = None, qformer_cfg: QFormerConfig | None = None):
        super().__init__()
        unimol_cfg, qformer_cfg = unimol_cfg or UniMolConfig(), qformer_cfg or QFormerConfig()
        self.graph_encoder = UniMolEncoder(unimol_cfg)
        self.ln_graph = nn.LayerNorm(unimol_cfg.embed_dim)
        self.Qformer = QFormer(qformer_cfg)
        self.query_tokens = nn.Parameter(torch.zeros(1, qformer_cfg.num_query_tokens, qformer_cfg.hidden_size))
        self.llm_proj = nn.Linear(qformer_cfg.hidden_size, qformer_cfg.llm_hidden_size)

    def forward(self, atoms: torch.Tensor, distances: torch.Tensor, edge_types: torch.Tensor) -> torch.Tensor:
        """atoms [B, N], distances [B, N, N], edge_types [B, N, N] -> [B, Q, llm_hidden_size]."""
        reps, padding_mask = self.graph_encoder(atoms, distances, edge_types)  # [B, N, W], [B, N]
        reps = self.ln_graph(reps)
        # An unpadded batch passes no mask, exactly as the notebook's batch-1 call; a padded one masks the pads.
        keep = ~padding_mask if bool(padding_mask.any()) else None
        queries = self.Qformer(self.query_tokens.expand(atoms.shape[0], -1, -1), reps, keep)  # [B, Q, H]
        return self.llm_proj(queries)
