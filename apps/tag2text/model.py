"""Tag2Text (Huang et al., ICLR 2024) as one torch module whose state_dict keys are the official ones.

    visual_encoder   Swin-B/384 -> image tokens (B, 145, 1024)
    label_embed      3,429 learned label queries (the recognition decoder's input)
    tagging_head     2-layer recognition decoder: queries cross-attend to image tokens (official name
                     in the checkpoint file: ``vision_multi``; the official loader renames it, so do we)
    fc               group-wise linear head: one 768-vector and bias per tag -> tag logits
    tag_encoder      12-layer BERT over the "tag | tag | ..." text, cross-attending to image tokens; its layers
                     0-1 share cross-attention and feed-forward tensors with the tagging head (official tie)
    text_decoder     12-layer BERT LM over the caption, cross-attending to the tag encoding; LM head tied to
                     its word embeddings

Recomputed, not loaded: Swin ``relative_position_index`` / ``attn_mask`` and BERT ``position_ids`` buffers.
"""

from __future__ import annotations

import torch
from torch import nn

from apps.tag2text.bert import BertLMHeadModel, BertModel, TaggingHead
from apps.tag2text.config import Tag2TextConfig
from apps.tag2text.swin import SwinTransformer, SwinTransformerBlock

TIED_PARTS = ("crossattention", "intermediate", "output")


class GroupWiseLinear(nn.Module):
    """One linear classifier per tag, applied to that tag's own query output."""

    def __init__(self, num_class: int, hidden_dim: int):
        super().__init__()
        self.W = nn.Parameter(torch.zeros(1, num_class, hidden_dim))
        self.b = nn.Parameter(torch.zeros(1, num_class))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (self.W * x).sum(-1) + self.b  # (B, num_class, hidden) -> (B, num_class)


class Tag2Text(nn.Module):
    def __init__(self, config: Tag2TextConfig):
        super().__init__()
        c = self.config = config
        if c.tagging.hidden_size != c.text.hidden_size or c.tagging.intermediate_size != c.text.intermediate_size:
            raise ValueError("The tagging head shares layers with the tag encoder, so their widths must match.")
        self.visual_encoder = SwinTransformer(c.image_size, c.patch_size, c.embed_dim, c.depths, c.num_heads,
                                              c.window_size, c.mlp_ratio)
        self.tag_encoder = BertModel(c.text, encoder_width=c.vision_width)
        self.text_decoder = BertLMHeadModel(c.text, encoder_width=c.text.hidden_size)
        self.label_embed = nn.Embedding(c.num_tags, c.tagging.hidden_size)
        self.tagging_head = TaggingHead(c.tagging, encoder_width=c.vision_width)
        self.fc = GroupWiseLinear(c.num_tags, c.tagging.hidden_size)
        self.tie_weights()

    def tie_weights(self) -> None:
        """Make the tied tensors one Parameter again (needed after ``to_empty`` or ``load_state_dict(assign=True)``)."""
        pairs = zip(self.tagging_head.encoder.layer, self.tag_encoder.encoder.layer, strict=False)  # 2 of 12
        for head_layer, enc_layer in pairs:
            for part in TIED_PARTS:
                source, target = getattr(head_layer, part), getattr(enc_layer, part)
                for name, param in source.named_parameters():
                    owner, _, leaf = name.rpartition(".")
                    setattr(target.get_submodule(owner) if owner else target, leaf, param)
        self.text_decoder.tie_weights()

    def fuse_qkv(self) -> None:
        """One (3*hidden, hidden) projection per self-attention (tag encoder and caption decoder); the query, key and
        value Parameters become views of it, so state_dict keys and values stay as they are."""
        for layer in [*self.tag_encoder.encoder.layer, *self.text_decoder.bert.encoder.layer]:
            if not layer.attention.self.is_fused():
                layer.attention.self.fuse_qkv()

    def prepare_for_inference(self) -> None:
        """``fuse_qkv``, then compute the tensors derived from weights alone (Swin's attention biases, the tagging
        head's first-layer queries; ``apps.tag2text.reuse``), so that memory estimates count them from the start."""
        self.fuse_qkv()
        with torch.inference_mode():
            for block in self.visual_encoder.modules():
                if isinstance(block, SwinTransformerBlock):
                    block.attn.attention_bias(block.attn_mask)
            self.tagging_head.first_queries(self.label_embed.weight)

    def tied_aliases(self) -> dict[str, str]:
        """state_dict key -> the key of the tensor it shares storage with (the canonical name)."""
        canonical: dict[int, str] = {}
        aliases = {}
        for name, param in self.named_parameters(remove_duplicate=False):
            first = canonical.setdefault(id(param), name)
            if first != name:
                aliases[name] = first
        return aliases

    def reset_buffers(self) -> None:
        for module in self.modules():
            if module is not self and hasattr(module, "reset_buffers"):
                module.reset_buffers()

    def forward(self, pixel_values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, 3, S, S) normalised pixels -> (tag_logits (B, num_tags), image_embeds (B, T, vision_width)).

        T = 1 + the last Swin stage's tokens (145 = 1 + 12² for the official 384 px model); the tag encoder
        cross-attends to these image tokens when captioning (``encode_tags``).
        """
        image_embeds = self.visual_encoder(pixel_values)
        return self.tag_logits(image_embeds), image_embeds

    def tag_logits(self, image_embeds: torch.Tensor) -> torch.Tensor:
        """(B, T, vision_width) image tokens -> (B, num_tags) logits."""
        return self.fc(self.tagging_head(self.label_embed.weight, image_embeds))  # (B, num_tags, hidden) -> logits

    def encode_tags(self, input_ids, attention_mask, image_embeds) -> torch.Tensor:
        """(B, L) tag-text tokens cross-attending to (B, T, vision_width) image tokens -> (B, L, hidden)."""
        return self.tag_encoder(input_ids, attention_mask, image_embeds)


def build_model(config: Tag2TextConfig, device: str | torch.device = "cpu", dtype=torch.float32) -> Tag2Text:
    """An uninitialised model (fill it with ``load_state_dict``) built without paying for random init."""
    with torch.device("meta"):
        model = Tag2Text(config)
    model.to_empty(device=device)
    model.tie_weights()
    model.to(dtype)
    model.reset_buffers()
    return model.eval()

