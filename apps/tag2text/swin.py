"""Swin Transformer V1 image encoder (Liu et al. 2021), module names as in the Tag2Text state_dict.

Output: the average-pooled token followed by the final-stage tokens, (B, 1 + (S/32)^2, vision_width).
``relative_position_index`` and ``attn_mask`` are persistent buffers recomputed from the sizes
(``reset_buffers``); a checkpoint's copies are ignored, as the official loader deletes them.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from apps.tag2text.reuse import derived, gelu_


def window_partition(x: torch.Tensor, ws: int) -> torch.Tensor:
    """(B, H, W, C) -> (B * H/ws * W/ws, ws*ws, C): non-overlapping ws x ws windows, row-major."""
    b, h, w, c = x.shape
    x = x.view(b, h // ws, ws, w // ws, ws, c).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(-1, ws * ws, c)


def window_reverse(windows: torch.Tensor, ws: int, h: int, w: int) -> torch.Tensor:
    """(B * h/ws * w/ws, ws*ws, C) -> (B, h, w, C): the inverse of ``window_partition``."""
    c = windows.shape[-1]
    x = windows.view(-1, h // ws, w // ws, ws, ws, c).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(-1, h, w, c)


def window_order(resolution: int, ws: int, shift: int) -> torch.Tensor:
    """(r*r,) token indices that put an r x r map (tokens row-major) into windows: element j of the windowed sequence
    (nW windows of ws*ws tokens, as ``window_partition`` lays them out) is token ``order[j]`` of the map rolled by
    (-shift, -shift). One gather then does the cyclic shift and the partition together."""
    grid = torch.arange(resolution * resolution).view(1, resolution, resolution, 1)
    if shift:
        grid = torch.roll(grid, shifts=(-shift, -shift), dims=(1, 2))
    return window_partition(grid, ws).flatten()


def relative_position_index(ws: int) -> torch.Tensor:
    coords = torch.stack(torch.meshgrid(torch.arange(ws), torch.arange(ws), indexing="ij")).flatten(1)  # 2, ws*ws
    rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (ws - 1)
    return rel[..., 0] * (2 * ws - 1) + rel[..., 1]


def shifted_window_mask(resolution: int, ws: int, shift: int) -> torch.Tensor:
    """-100 where two tokens of one shifted window came from different image regions (the paper's cyclic shift)."""
    region = torch.zeros(1, resolution, resolution, 1)
    bounds = (slice(0, -ws), slice(-ws, -shift), slice(-shift, None))
    label = 0
    for hs in bounds:
        for wsl in bounds:
            region[:, hs, wsl, :] = label
            label += 1
    windows = window_partition(region, ws).squeeze(-1)  # nW, ws*ws
    diff = windows[:, None, :] - windows[:, :, None]
    return diff.masked_fill(diff != 0, -100.0).masked_fill(diff == 0, 0.0)


def interpolate_bias_table(table: torch.Tensor, rows: int) -> torch.Tensor:
    """Resize a (L*L, heads) relative-position table to ``rows`` = L'*L' rows (bicubic), as the official loader does."""
    if table.shape[0] == rows:
        return table
    old, new = round(table.shape[0] ** 0.5), round(rows ** 0.5)
    grid = table.float().permute(1, 0).reshape(1, -1, old, old)
    grid = F.interpolate(grid, size=(new, new), mode="bicubic", align_corners=False)
    return grid.reshape(-1, rows).permute(1, 0).to(table.dtype)


class WindowAttention(nn.Module):
    def __init__(self, dim: int, window_size: int, num_heads: int):
        super().__init__()
        self.window_size, self.num_heads = window_size, num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.relative_position_bias_table = nn.Parameter(torch.zeros((2 * window_size - 1) ** 2, num_heads))
        self.register_buffer("relative_position_index", relative_position_index(window_size))
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def reset_buffers(self) -> None:
        self.relative_position_index = relative_position_index(self.window_size).to(self.qkv.weight.device)

    def attention_bias(self, mask: torch.Tensor | None) -> torch.Tensor:
        """The relative position bias, (1, heads, N, N), plus the shifted-window ``mask`` (-100 between tokens from
        different image regions) when given: (nW, heads, N, N). The same for every image: computed once per weights."""
        def compute() -> torch.Tensor:
            n = self.window_size ** 2
            bias = self.relative_position_bias_table[self.relative_position_index.view(-1)].view(n, n, -1)
            bias = bias.permute(2, 0, 1).unsqueeze(0)  # (N, N, heads) -> (1, heads, N, N)
            return (bias if mask is None else bias + mask.unsqueeze(1).to(bias.dtype)).contiguous()

        masks = () if mask is None else (mask,)
        return derived(self, "attention_bias_cache", compute, self.relative_position_bias_table,
                       self.relative_position_index, *masks)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """(B*nW, N, C) tokens of nW windows per image (N = window_size^2) -> (B*nW, N, C); ``mask`` (nW, N, N)."""
        bw, n, c = x.shape
        # (B*nW, N, 3C) -> 3 x (B*nW, heads, N, head_dim)
        q, k, v = self.qkv(x).reshape(bw, n, 3, self.num_heads, c // self.num_heads).permute(2, 0, 3, 1, 4)
        bias = self.attention_bias(mask).to(q.dtype)
        if mask is None:  # softmax(q k^T * scale + bias) v in one kernel: (B*nW, heads, N, head_dim)
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=self.scale)
        else:  # shifted windows: a bias per window
            nw = mask.shape[0]
            parts = [F.scaled_dot_product_attention(q[i:i + nw], k[i:i + nw], v[i:i + nw], attn_mask=bias,
                                                    scale=self.scale) for i in range(0, bw, nw)]  # image by image
            out = parts[0] if len(parts) == 1 else torch.cat(parts)
        return self.proj(out.transpose(1, 2).reshape(bw, n, c))  # (B*nW, heads, N, head_dim) -> (B*nW, N, C)


class Mlp(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(dim, hidden), nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(gelu_(self.fc1(x)))


class SwinTransformerBlock(nn.Module):
    def __init__(self, dim: int, resolution: int, num_heads: int, window_size: int, shift: bool, mlp_ratio: float):
        super().__init__()
        # A window as large as the feature map is one window: no shift, no mask (stage 4 at 384).
        self.window_size = min(window_size, resolution)
        self.shift_size = window_size // 2 if shift and resolution > window_size else 0
        self.resolution = resolution
        self.norm1 = nn.LayerNorm(dim)
        self.attn = WindowAttention(dim, self.window_size, num_heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio))
        self.register_buffer("attn_mask", self._mask())

    def _mask(self) -> torch.Tensor | None:
        return shifted_window_mask(self.resolution, self.window_size, self.shift_size) if self.shift_size else None

    def reset_buffers(self) -> None:
        if self.shift_size:
            self.attn_mask = self._mask().to(self.norm1.weight.device)

    def _orders(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """(window order, its inverse), computed once per device (plain tensors: not in the state_dict)."""
        cached = getattr(self, "_order_cache", None)
        if cached is None or cached[0].device != device:
            with torch.inference_mode(False):  # usable later with autograd on as well
                order = window_order(self.resolution, self.window_size, self.shift_size).to(device)
                cached = self._order_cache = (order, torch.argsort(order))
        return cached

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, r*r, C) tokens of an r x r feature map -> (B, r*r, C)."""
        b, length, c = x.shape
        order, inverse = self._orders(x.device)
        # shift + partition as one gather: (B, r*r, C) -> (B*nW, ws*ws, C) windows; attention within each window
        windows = self.norm1(x).index_select(1, order).view(-1, self.window_size ** 2, c)
        h = self.attn(windows, self.attn_mask).view(b, length, c)
        x = x + h.index_select(1, inverse)  # back to map order (reverse partition + shift) and the residual
        return x + self.mlp(self.norm2(x))


class PatchMerging(nn.Module):
    def __init__(self, dim: int, resolution: int):
        super().__init__()
        self.resolution = resolution
        self.norm = nn.LayerNorm(4 * dim)
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, r*r, C) -> (B, r/2*r/2, 2C): each 2 x 2 neighbourhood concatenated (4C), normalised, projected."""
        b, _, c = x.shape
        x = x.view(b, self.resolution, self.resolution, c)
        x = torch.cat([x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2], x[:, 1::2, 1::2]], dim=-1)
        return self.reduction(self.norm(x.view(b, -1, 4 * c)))


class BasicLayer(nn.Module):
    def __init__(self, dim, resolution, depth, num_heads, window_size, mlp_ratio, downsample: bool):
        super().__init__()
        self.blocks = nn.ModuleList(
            SwinTransformerBlock(dim, resolution, num_heads, window_size, shift=i % 2 == 1, mlp_ratio=mlp_ratio)
            for i in range(depth)
        )
        self.downsample = PatchMerging(dim, resolution) if downsample else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return self.downsample(x) if self.downsample is not None else x


class PatchEmbed(nn.Module):
    def __init__(self, patch_size: int, embed_dim: int):
        super().__init__()
        self.proj = nn.Conv2d(3, embed_dim, kernel_size=patch_size, stride=patch_size)
        self.norm = nn.LayerNorm(embed_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, 3, S, S) -> (B, (S/patch)^2, embed_dim)."""
        return self.norm(self.proj(x).flatten(2).transpose(1, 2))


class SwinTransformer(nn.Module):
    def __init__(self, image_size=384, patch_size=4, embed_dim=128, depths=(2, 2, 18, 2), num_heads=(4, 8, 16, 32),
                 window_size=12, mlp_ratio=4.0):
        super().__init__()
        self.patch_embed = PatchEmbed(patch_size, embed_dim)
        resolution = image_size // patch_size
        self.layers = nn.ModuleList()
        for i, (depth, heads) in enumerate(zip(depths, num_heads, strict=True)):
            last = i == len(depths) - 1
            self.layers.append(BasicLayer(embed_dim * 2 ** i, resolution // 2 ** i, depth, heads, window_size,
                                          mlp_ratio, downsample=not last))
        self.num_features = embed_dim * 2 ** (len(depths) - 1)
        self.norm = nn.LayerNorm(self.num_features)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        """(B, 3, S, S) -> (B, 1 + R^2, num_features): the mean token, then the last stage's R x R tokens
        (R = S/32 with the official patch 4 and four stages)."""
        x = self.patch_embed(image)  # (B, (S/patch)^2, embed_dim)
        for layer in self.layers:
            x = layer(x)  # each stage but the last halves the map and doubles the width
        x = self.norm(x)  # (B, R^2, num_features)
        return torch.cat([x.mean(dim=1, keepdim=True), x], dim=1)
