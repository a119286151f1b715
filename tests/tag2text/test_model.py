"""The model's structure against the official key list, and the pieces that must match the official maths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from apps.tag2text.config import Tag2TextConfig
from apps.tag2text.model import Tag2Text, build_model
from apps.tag2text.swin import interpolate_bias_table, relative_position_index, shifted_window_mask
from tests.fixtures.tiny_tag2text import init_random, tiny_config

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture(scope="module")
def full_meta_model():
    with torch.device("meta"):
        return Tag2Text(Tag2TextConfig())


def test_full_size_state_dict_matches_official_keys_and_shapes(full_meta_model):
    official = json.loads((FIXTURES / "tag2text_official_keys.json").read_text())
    ours = {k: list(v.shape) for k, v in full_meta_model.state_dict().items()}
    assert len(official) == 1038
    assert sorted(set(official) - set(ours)) == []
    assert sorted(set(ours) - set(official)) == []
    assert {k: v for k, v in ours.items() if official[k] != v} == {}


def test_full_size_ties_match_official_groups(full_meta_model):
    groups = json.loads((FIXTURES / "tag2text_official_tied_groups.json").read_text())
    ours = {frozenset(pair) for pair in full_meta_model.tied_aliases().items()}
    assert ours == {frozenset(g) for g in groups}
    assert len(ours) == 34


def test_full_size_parameter_count_and_image_tokens(full_meta_model):
    assert sum(p.numel() for p in full_meta_model.parameters()) == 372_007_193
    tokens = full_meta_model.visual_encoder(torch.empty(2, 3, 384, 384, device="meta"))
    assert tuple(tokens.shape) == (2, 145, 1024)
    logits = full_meta_model.tag_logits(tokens)
    assert tuple(logits.shape) == (2, 3429)


def test_tied_tensors_stay_one_tensor_after_meta_build():
    model = build_model(tiny_config())
    enc = model.tag_encoder.encoder.layer[1].crossattention.self.key.weight
    head = model.tagging_head.encoder.layer[1].crossattention.self.key.weight
    assert enc is head
    decoder = model.text_decoder
    assert decoder.cls.predictions.decoder.weight is decoder.bert.embeddings.word_embeddings.weight
    assert model.text_decoder.cls.predictions.bias is model.text_decoder.cls.predictions.decoder.bias
    # self-attention of the tag encoder is its own (the tagging head has none)
    assert not hasattr(model.tagging_head.encoder.layer[0], "attention")


def test_relative_position_index_and_shift_mask():
    index = relative_position_index(3)
    assert index.shape == (9, 9)
    assert index.min() == 0 and index.max() == (2 * 3 - 1) ** 2 - 1
    assert torch.equal(index.diagonal(), torch.full((9,), 12))  # (0,0) offset is the table's centre
    mask = shifted_window_mask(8, 4, 2)
    assert mask.shape == (4, 16, 16)
    assert torch.all(mask[0] == 0)  # the top-left window holds one region only
    assert set(mask[-1].unique().tolist()) == {0.0, -100.0}


def test_stage_with_window_as_large_as_map_has_no_shift_and_no_mask():
    model = build_model(tiny_config())  # 64px: stage maps 16, 8, 4 with window 4
    last = model.visual_encoder.layers[-1].blocks[1]
    assert last.shift_size == 0 and last.attn_mask is None
    first = model.visual_encoder.layers[0].blocks[1]
    assert first.shift_size == 2 and first.attn_mask.shape == (16, 16, 16)


def test_bias_table_interpolation_keeps_constant_and_resizes():
    table = torch.full((169, 4), 0.5)  # a 7x7 window's table
    out = interpolate_bias_table(table, 529)
    assert out.shape == (529, 4)
    assert torch.allclose(out, torch.full((529, 4), 0.5), atol=1e-5)
    same = torch.randn(529, 4)
    assert interpolate_bias_table(same, 529) is same


def test_cached_decoder_logits_equal_full_prefix_logits():
    model = init_random(build_model(tiny_config()), seed=3, std=0.2)
    dec = model.text_decoder
    enc = torch.randn(2, 40, 32)
    cross = dec.cross_key_values(enc)
    ids = torch.randint(1000, 2000, (2, 7))
    full, _ = dec(ids, cross)
    _, past = dec(ids[:, :4], cross)
    for t in range(4, 7):
        step, past = dec(ids[:, t:t + 1], cross, past)
    assert torch.allclose(step, full, atol=1e-5)
    other, _ = dec(ids[:, :6], cross)
    assert not torch.allclose(other, full, atol=1e-3)  # the check above can fail


def test_config_json_round_trip():
    config = tiny_config()
    again = Tag2TextConfig.from_json(config.to_json())
    assert again == config
    assert again.vision_width == 64 and again.num_tags == 24
    with pytest.raises(ValueError, match="Unknown"):
        Tag2TextConfig.from_json('{"hidden": 3}')
