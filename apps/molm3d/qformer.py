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


class BertSelfAttention(nn.Module):
    def __init__(self, cfg: QFormerConfig, kv_width: int):
        super().__init__()
        self.num_heads, self.head_dim = cfg.num_heads, cfg.hidden_size // cfg.num_heads
        self.query = nn.Linear(cfg.hidden_size, cfg.hidden_size)
        self.key = nn.Linear(kv_width, cfg.hidden_size)
        self.value = nn.Linear(kv_width, cfg.hidden_size)

    def forward(self, x: torch.Tensor, context: torch.Tensor, mask_bias: torch.Tensor | None) -> torch.Tensor:
        b = x.shape[0]
        split = lambda t: t.view(b, -1, self.num_heads, self.head_dim).transpose(1, 2)
        q, k, v = split(self.query(x)), split(self.key(context)), split(self.value(context))
        scores = q @ k.transpose(-1, -2) / self.head_dim**0.5
        if mask_bias is not None:
            scores = scores + mask_bias
        out = torch.softmax(scores, dim=-1) @ v
        return out.transpose(1, 2).reshape(b, -1, self.num_heads * self.head_dim)


class BertSelfOutput(nn.Module):
    def __init__(self, cfg: QFormerConfig, in_dim: int | None = None):
        super().__init__()
        self.dense = nn.Linear(in_dim or cfg.hidden_size, cfg.hidden_size)
        self.LayerNorm = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)

    def forward(self, h: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dense(h) + residual)


class BertAttention(nn.Module):
    def __init__(self, cfg: QFormerConfig, kv_width: int):
        super().__init__()
        self.self = BertSelfAttention(cfg, kv_width)
        self.output = BertSelfOutput(cfg)

    def forward(self, x, context, mask_bias=None):
        return self.output(self.self(x, context, mask_bias), x)


class BertIntermediate(nn.Module):
    def __init__(self, cfg: QFormerConfig):
        super().__init__()
        self.dense = nn.Linear(cfg.hidden_size, cfg.intermediate_size)

    def forward(self, x):
        return F.gelu(self.dense(x))


class BertLayer(nn.Module):
    def __init__(self, cfg: QFormerConfig, index: int):
        super().__init__()
        self.attention = BertAttention(cfg, cfg.hidden_size)
        self.has_cross_attention = index % cfg.cross_attention_freq == 0
        if self.has_cross_attention:
            self.crossattention = BertAttention(cfg, cfg.encoder_width)
        self.intermediate_query = BertIntermediate(cfg)
        self.output_query = BertSelfOutput(cfg, cfg.intermediate_size)

    def forward(self, x, graph, graph_bias):
        x = self.attention(x, x)
        if self.has_cross_attention:
            x = self.crossattention(x, graph, graph_bias)
        return self.output_query(self.intermediate_query(x), x)


class BertEmbeddings(nn.Module):
    """Only the LayerNorm survives 3D-MoLM's deletions; ``position_ids`` stays as a (persistent) buffer."""

    def __init__(self, cfg: QFormerConfig):
        super().__init__()
        self.LayerNorm = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)
        self.register_buffer("position_ids", torch.arange(cfg.max_position_embeddings).unsqueeze(0))


class BertEncoder(nn.Module):
    def __init__(self, cfg: QFormerConfig):
        super().__init__()
        self.layer = nn.ModuleList(BertLayer(cfg, i) for i in range(cfg.num_layers))


class BertModel(nn.Module):
    def __init__(self, cfg: QFormerConfig):
        super().__init__()
        self.embeddings = BertEmbeddings(cfg)
        self.encoder = BertEncoder(cfg)


class QFormer(nn.Module):
    """Keys as ``Qformer.*`` in 3D-MoLM (255 at full size, with the ``position_ids`` buffer)."""

    def __init__(self, cfg: QFormerConfig | None = None):
        super().__init__()
        self.config = cfg or QFormerConfig()
        self.bert = BertModel(self.config)

    def forward(self, query_embeds: torch.Tensor, graph: torch.Tensor, graph_keep: torch.Tensor | None):
        """query_embeds [B, Q, H], graph [B, N, W], graph_keep [B, N] (True = real atom) or None -> [B, Q, H]."""
        bias = None
        if graph_keep is not None:  # 1 = attend, as the Q-Former expects (upstream passed the inverse, #8)
            bias = (~graph_keep)[:, None, None, :].to(query_embeds.dtype) * torch.finfo(query_embeds.dtype).min
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
        reps, padding_mask = self.graph_encoder(atoms, distances, edge_types)
        reps = self.ln_graph(reps)
        # An unpadded batch passes no mask, exactly as the notebook's batch-1 call; a padded one masks the pads.
        keep = ~padding_mask if bool(padding_mask.any()) else None
        queries = self.Qformer(self.query_tokens.expand(atoms.shape[0], -1, -1), reps, keep)
        return self.llm_proj(queries)
