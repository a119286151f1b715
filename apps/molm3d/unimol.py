"""Uni-Mol encoder as 3D-MoLM uses it (``SimpleUniMolModel``), in plain torch with the official state-dict keys.

Pre-LN transformer over atom tokens. A Gaussian kernel over pair distances (one affine map per edge type, K
kernels) gives a per-head attention bias; each layer's attention logits (bias included) become the next layer's
bias, so the pair representation is carried through the layers. Output: per-token reps after a final LayerNorm.

``mol_pre_no_h_220816.pt`` (key ``model``) also holds pre-training heads this encoder does not use:
``lm_head.*`` (masked-atom head), ``pair2coord_proj.*`` and ``dist_head.*`` (coordinate/distance heads) and
``encoder.final_head_layer_norm.*`` (only built when ``delta_pair_repr_norm_loss`` >= 0). The official loader
reads it with ``strict=False`` and drops them; ``load_unimol`` does the same and reports what it dropped.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from shared.checkpoints import load_torch_checkpoint

UNUSED_PREFIXES = ("lm_head.", "pair2coord_proj.", "dist_head.", "encoder.final_head_layer_norm.")


@dataclass
class UniMolConfig:
    num_layers: int = 15
    embed_dim: int = 512
    ffn_dim: int = 2048
    num_heads: int = 64
    num_kernels: int = 128
    vocab_size: int = 31  # unimol_dict.txt + [MASK]
    padding_idx: int = 0

    @property
    def num_edge_types(self) -> int:
        return self.vocab_size * self.vocab_size

    @classmethod
    def from_state_dict(cls, sd: dict[str, torch.Tensor]) -> UniMolConfig:
        """Every size follows from the tensor shapes, so a tiny checkpoint needs no config file."""
        vocab, dim = sd["embed_tokens.weight"].shape
        layers = 1 + max(int(k.split(".")[2]) for k in sd if k.startswith("encoder.layers."))
        return cls(num_layers=layers, embed_dim=dim, ffn_dim=sd["encoder.layers.0.fc1.weight"].shape[0],
                   num_heads=sd["gbf_proj.linear2.weight"].shape[0], num_kernels=sd["gbf.means.weight"].shape[1],
                   vocab_size=vocab)


def gaussian(x: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    return torch.exp(-0.5 * ((x - mean) / std) ** 2) / (math.sqrt(2 * 3.14159) * std)  # Uni-Mol's pi constant


class GaussianLayer(nn.Module):
    def __init__(self, num_kernels: int, num_edge_types: int):
        super().__init__()
        self.means = nn.Embedding(1, num_kernels)
        self.stds = nn.Embedding(1, num_kernels)
        self.mul = nn.Embedding(num_edge_types, 1)
        self.bias = nn.Embedding(num_edge_types, 1)

    def forward(self, dist: torch.Tensor, edge_type: torch.Tensor) -> torch.Tensor:
        """dist [B, N, N], edge_type [B, N, N] -> K Gaussian kernels of the per-edge-type scaled distance."""
        x = self.mul(edge_type).type_as(dist) * dist.unsqueeze(-1) + self.bias(edge_type).type_as(dist)  # [B, N, N, 1]
        mean = self.means.weight.float().view(-1)
        std = self.stds.weight.float().view(-1).abs() + 1e-5
        return gaussian(x.float(), mean, std).type_as(self.means.weight)  # [B, N, N, K]


class NonLinearHead(nn.Module):
    def __init__(self, in_dim: int, out_dim: int, hidden: int):
        super().__init__()
        self.linear1 = nn.Linear(in_dim, hidden)
        self.linear2 = nn.Linear(hidden, out_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear2(F.gelu(self.linear1(x)))


class SelfMultiheadAttention(nn.Module):
    def __init__(self, dim: int, num_heads: int):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, dim // num_heads
        self.in_proj = nn.Linear(dim, 3 * dim)
        self.out_proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, attn_bias: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x [B, N, D]; ``attn_bias`` [B*nh, N, N] (padding already -inf) -> (output [B, N, D], the new logits
        [B*nh, N, N]: the pair representation the next layer takes as its bias)."""
        b, n, d = x.shape
        q, k, v = self.in_proj(x).chunk(3, dim=-1)  # each [B, N, D]
        q, k, v = (t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2).reshape(b * self.num_heads, n, -1)
                   for t in (q, k, v))  # each [B*nh, N, hd]
        logits = torch.bmm(q * self.head_dim**-0.5, k.transpose(1, 2)) + attn_bias  # [B*nh, N, N]
        out = torch.bmm(torch.softmax(logits.float(), dim=-1).type_as(v), v)  # [B*nh, N, hd]
        out = out.view(b, self.num_heads, n, self.head_dim).transpose(1, 2).reshape(b, n, d)  # [B, N, D]
        return self.out_proj(out), logits


class EncoderLayer(nn.Module):
    def __init__(self, cfg: UniMolConfig):
        super().__init__()
        self.self_attn = SelfMultiheadAttention(cfg.embed_dim, cfg.num_heads)
        self.self_attn_layer_norm = nn.LayerNorm(cfg.embed_dim)
        self.fc1 = nn.Linear(cfg.embed_dim, cfg.ffn_dim)
        self.fc2 = nn.Linear(cfg.ffn_dim, cfg.embed_dim)
        self.final_layer_norm = nn.LayerNorm(cfg.embed_dim)

    def forward(self, x: torch.Tensor, pair: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Pre-LN block: x [B, N, D], pair [B*nh, N, N] -> (x [B, N, D], pair [B*nh, N, N])."""
        h, pair = self.self_attn(self.self_attn_layer_norm(x), pair)
        x = x + h
        x = x + self.fc2(F.gelu(self.fc1(self.final_layer_norm(x))))
        return x, pair


class TransformerEncoderWithPair(nn.Module):
    def __init__(self, cfg: UniMolConfig):
        super().__init__()
        self.emb_layer_norm = nn.LayerNorm(cfg.embed_dim)
        self.layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.num_layers))
        self.final_layer_norm = nn.LayerNorm(cfg.embed_dim)

    def forward(self, x: torch.Tensor, pair: torch.Tensor, padding_mask: torch.Tensor) -> torch.Tensor:
        """x [B, N, D] atom embeddings, pair [B*nh, N, N] distance bias, padding_mask [B, N] -> [B, N, D]."""
        b, n, _ = x.shape
        x = self.emb_layer_norm(x) * (~padding_mask).unsqueeze(-1).type_as(x)
        pair = pair.view(b, -1, n, n).masked_fill(padding_mask[:, None, None, :], float("-inf"))  # [B, nh, N, N]
        pair = pair.view(-1, n, n)  # [B*nh, N, N]
        for layer in self.layers:
            x, pair = layer(x, pair)
        return self.final_layer_norm(x)


class UniMolEncoder(nn.Module):
    """Keys as ``graph_encoder.*`` in 3D-MoLM (193 tensors at full size)."""

    def __init__(self, cfg: UniMolConfig | None = None):
        super().__init__()
        self.config = cfg = cfg or UniMolConfig()
        self.padding_idx = cfg.padding_idx
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.embed_dim, padding_idx=cfg.padding_idx)
        self.encoder = TransformerEncoderWithPair(cfg)
        self.gbf = GaussianLayer(cfg.num_kernels, cfg.num_edge_types)
        self.gbf_proj = NonLinearHead(cfg.num_kernels, cfg.num_heads, cfg.num_kernels)

    def forward(self, atoms: torch.Tensor, distances: torch.Tensor, edge_types: torch.Tensor):
        """atoms [B, N] (0 = pad), distances [B, N, N] float, edge_types [B, N, N] -> (reps [B, N, D], padding_mask)."""
        padding_mask = atoms.eq(self.padding_idx)
        x = self.embed_tokens(atoms)
        n = atoms.shape[1]
        bias = self.gbf_proj(self.gbf(distances, edge_types))  # [B, N, N, K] kernels -> [B, N, N, nh]
        bias = bias.permute(0, 3, 1, 2).reshape(-1, n, n).type_as(x)  # [B*nh, N, N]
        reps = self.encoder(x, bias, padding_mask)
        return reps.masked_fill(padding_mask.unsqueeze(-1), 0.0), padding_mask


def collate(conformers, device: torch.device | str = "cpu") -> dict[str, torch.Tensor]:
    """Right-pad a list of ``conformer.Conformer`` into batch tensors (pad id 0, distance 0, edge type 0)."""
    n = max(len(c.atoms) for c in conformers)
    atoms = torch.zeros(len(conformers), n, dtype=torch.long)
    dist = torch.zeros(len(conformers), n, n, dtype=torch.float32)
    edges = torch.zeros(len(conformers), n, n, dtype=torch.long)
    for i, c in enumerate(conformers):
        m = len(c.atoms)
        atoms[i, :m] = torch.from_numpy(c.atoms)
        dist[i, :m, :m] = torch.from_numpy(c.distances)
        edges[i, :m, :m] = torch.from_numpy(c.edge_types)
    return {"atoms": atoms.to(device), "distances": dist.to(device), "edge_types": edges.to(device)}


def load_unimol(path: str | Path, map_location: str = "cpu") -> tuple[UniMolEncoder, list[str]]:
    """The encoder from a Uni-Mol checkpoint (key ``model``), and the checkpoint keys it does not use."""
    ckpt = load_torch_checkpoint(path, safe_globals=(argparse.Namespace,))  # unicore also pickles its args
    sd = ckpt["model"] if "model" in ckpt else ckpt
    model = UniMolEncoder(UniMolConfig.from_state_dict(sd))
    missing, unexpected = model.load_state_dict(sd, strict=False)
    if missing:
        raise ValueError(f"{path} lacks Uni-Mol encoder weights: {missing[:5]}")
    return model.eval(), sorted(unexpected)
