"""The fast inference paths give what the plain maths gives: fused QKV, the preallocated KV cache, SDPA attention,
Swin's one-gather window partition."""

from __future__ import annotations

import math

import pytest
import torch

from apps.tag2text.bert import KVCache
from apps.tag2text.decoding import beam_search
from apps.tag2text.model import build_model
from apps.tag2text.reuse import gelu_
from apps.tag2text.swin import shifted_window_mask, window_partition, window_reverse
from tests.fixtures.tiny_tag2text import init_random, tiny_config


@pytest.fixture
def model():
    return init_random(build_model(tiny_config()), seed=4, std=0.2)


def self_attentions(model):
    layers = [*model.tag_encoder.encoder.layer, *model.text_decoder.bert.encoder.layer]
    return [layer.attention.self for layer in layers]


def tag_encoding_and_logits(model):
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(1000, 2000, (2, 9), generator=gen)
    mask = torch.ones(2, 9, dtype=torch.long)
    mask[1, 6:] = 0  # padded tags
    image = torch.randn(2, 17, model.config.vision_width, generator=gen).to(model.label_embed.weight.dtype)
    with torch.inference_mode():
        encoded = model.encode_tags(ids, mask, image)
        logits, _ = model.text_decoder(ids, None, None, encoded)
    return encoded, logits


def test_fused_qkv_gives_the_unfused_results_and_keeps_the_state_dict(model):
    before_state = {k: v.clone() for k, v in model.state_dict().items()}
    before = tag_encoding_and_logits(model)
    model.fuse_qkv()
    assert all(attn.is_fused() for attn in self_attentions(model))
    after = tag_encoding_and_logits(model)
    for a, b in zip(before, after, strict=True):
        assert torch.allclose(a, b, atol=1e-5)
    state = model.state_dict()
    assert list(state) == list(before_state)
    assert all(torch.equal(state[k], v) for k, v in before_state.items())
    attn = self_attentions(model)[0]
    h = attn.query.out_features
    assert attn.key.weight.data_ptr() == attn.qkv_weight[h:].data_ptr()  # a view, not a copy


def test_loading_weights_into_a_fused_model_updates_the_fused_tensor(model):
    model.fuse_qkv()
    other = init_random(build_model(tiny_config()), seed=9, std=0.2)
    model.load_state_dict(other.state_dict())
    assert all(attn.is_fused() for attn in self_attentions(model))
    for a, b in zip(tag_encoding_and_logits(model), tag_encoding_and_logits(other), strict=True):
        assert torch.allclose(a, b, atol=1e-5)


def test_a_cast_after_fusing_falls_back_to_separate_projections(model):
    model.fuse_qkv()
    reference = tag_encoding_and_logits(model)
    model.to(torch.float64)  # replaces the Parameters: no longer views of the fused tensors
    assert not any(attn.is_fused() for attn in self_attentions(model))
    for a, b in zip(reference, tag_encoding_and_logits(model), strict=True):
        assert torch.allclose(a.double(), b, atol=1e-5)


def test_the_pipeline_fuses_its_model(tiny_pipe):
    assert all(attn.is_fused() for attn in self_attentions(tiny_pipe.model))


def manual_attention(attn, hidden, source, bias):
    """softmax(q k^T / sqrt(d) + bias) v with plain matmuls, as the official code computes it."""
    q, k, v = attn.heads(attn.query(hidden)), attn.heads(attn.key(source)), attn.heads(attn.value(source))
    scores = q @ k.transpose(-1, -2) / math.sqrt(attn.head_size) + bias
    ctx = scores.softmax(-1) @ v
    return ctx.transpose(1, 2).reshape(hidden.shape[0], hidden.shape[1], -1)


def test_sdpa_attention_matches_the_manual_maths_with_padding(model):
    attn = model.tag_encoder.encoder.layer[0].attention.self
    hidden = torch.randn(2, 7, 32)
    bias = torch.zeros(2, 1, 1, 7)
    bias[1, ..., 5:] = -10000.0
    with torch.inference_mode():
        ours, _ = attn(hidden, bias)
        assert torch.allclose(ours, manual_attention(attn, hidden, hidden, bias), atol=1e-5)
        cross = model.tag_encoder.encoder.layer[0].crossattention.self
        image = torch.randn(2, 5, model.config.vision_width)
        ours, _ = cross(hidden, None, kv_source=image)
        assert torch.allclose(ours, manual_attention(cross, hidden, image, 0.0), atol=1e-5)


def test_kv_cache_grows_and_reorders_like_concatenation(model):
    dec = model.text_decoder
    dec.fuse_qkv()
    enc = torch.randn(3, 6, 32)
    cross = dec.cross_key_values(enc)
    ids = torch.randint(1000, 2000, (3, 9))
    with torch.inference_mode():
        cache = dec.new_cache(3, 2, enc)  # capacity 2: must grow while decoding 9 tokens
        _, cache = dec(ids[:, :4], cross, cache)
        rows = [2, 0, 0]  # beams 0 and 1 continue beam 0, beam 2 beam 2: reorder everything
        cache.reorder(rows)
        ids = torch.cat([ids[rows, :4], ids[:, 4:]], dim=1)
        cross = [(k[rows], v[rows]) for k, v in cross]
        for t in range(4, 9):
            step, cache = dec(ids[:, t:t + 1], cross, cache)
        full, _ = dec(ids, cross)
    assert cache.length == 9 and cache.keys.shape[3] >= 9
    assert torch.allclose(step, full, atol=1e-5)


def test_kv_cache_allocates_once_for_a_whole_caption(model):
    cache = KVCache(layers=2, rows=3, heads=2, head_size=16, capacity=20, like=torch.zeros(1))
    keys = cache.keys
    for _ in range(20):
        cache.layers[0].append(torch.ones(3, 2, 1, 16), torch.ones(3, 2, 1, 16))
        cache.layers[1].append(torch.ones(3, 2, 1, 16), torch.ones(3, 2, 1, 16))
        cache.length += 1
    assert cache.keys is keys  # written in place, never reallocated


def test_preallocated_cache_gives_the_same_beam_ids_as_full_prefix(model):
    enc = torch.randn(2, 8, 32, generator=torch.Generator().manual_seed(2))
    kwargs = dict(num_beams=3, max_length=14, min_length=5, eos_token_id=102)
    with torch.no_grad():
        model.text_decoder.cls.predictions.bias[102] += 4.0  # some captions end early
    cached = beam_search(model.text_decoder, enc, [30522, 1037, 3861, 1997], **kwargs)
    uncached = beam_search(model.text_decoder, enc, [30522, 1037, 3861, 1997], use_cache=False, **kwargs)
    assert cached == uncached


@pytest.mark.parametrize("block_index", [0, 1])  # unshifted, shifted
def test_swin_block_matches_roll_partition_and_plain_attention(model, block_index):
    block = model.visual_encoder.layers[0].blocks[block_index]
    r, ws, s = block.resolution, block.window_size, block.shift_size
    x = torch.randn(2, r * r, block.norm1.normalized_shape[0])
    a = block.attn

    def reference(x):  # the textbook Swin block: roll, partition, attention with bias and mask, reverse, roll
        b, _, c = x.shape
        h = block.norm1(x).view(b, r, r, c)
        if s:
            h = torch.roll(h, shifts=(-s, -s), dims=(1, 2))
        win = window_partition(h, ws)
        bw, n, _ = win.shape
        q, k, v = a.qkv(win).reshape(bw, n, 3, a.num_heads, c // a.num_heads).permute(2, 0, 3, 1, 4)
        attn = (q * a.scale) @ k.transpose(-2, -1)
        bias = a.relative_position_bias_table[a.relative_position_index.view(-1)].view(n, n, -1).permute(2, 0, 1)
        attn = attn + bias.unsqueeze(0)
        if s:
            mask = shifted_window_mask(r, ws, s)
            nw = mask.shape[0]
            attn = (attn.view(bw // nw, nw, a.num_heads, n, n) + mask[None, :, None]).view(bw, a.num_heads, n, n)
        out = a.proj((attn.softmax(-1) @ v).transpose(1, 2).reshape(bw, n, c))
        h = window_reverse(out, ws, r, r)
        if s:
            h = torch.roll(h, shifts=(s, s), dims=(1, 2))
        x = x + h.reshape(b, r * r, c)
        return x + block.mlp(block.norm2(x))

    assert bool(s) == bool(block_index)
    with torch.inference_mode():
        assert torch.allclose(block(x), reference(x), atol=1e-5)


def test_tagging_and_captions_unchanged_by_batching(tiny_pipe, two_images):
    """Batch rows go through the per-image SDPA loop of shifted windows: one at a time or together, same result."""
    both = tiny_pipe(list(two_images)).results
    alone = [tiny_pipe(image).results[0] for image in two_images]
    assert [r.caption for r in both] == [r.caption for r in alone]
    assert [r.tag_names for r in both] == [r.tag_names for r in alone]
    for a, b in zip(both, alone, strict=True):
        assert max(abs(x - y) for x, y in zip(a.scores, b.scores, strict=True)) < 1e-5


def test_predict_pixels_is_what_the_call_returns(tiny_pipe, two_images):
    from apps.tag2text.pipeline import class_thresholds

    out = tiny_pipe(list(two_images)).results
    pred = tiny_pipe.predict_pixels(tiny_pipe.pixel_values(list(two_images)), [(), ()],
                                    class_thresholds(tiny_pipe.config))
    assert [p.caption for p in pred] == [r.caption for r in out]
    assert [p.tags for p in pred] == [r.tag_names for r in out]


def test_the_caption_step_is_the_forward_pass_bit_for_bit(model):
    dec = model.text_decoder
    dec.fuse_qkv()
    gen = torch.Generator().manual_seed(5)
    enc = torch.randn(3, 6, 32, generator=gen)
    cross = dec.cross_key_values(enc)
    ids = torch.randint(1000, 2000, (3, 7), generator=gen)
    with torch.inference_mode():
        general, fast = dec.new_cache(3, 4, enc), dec.new_cache(3, 4, enc)  # capacity 4 < 7: both must grow
        dec(ids[:, :3], cross, general)
        dec(ids[:, :3], cross, fast)
        step = dec.caption_step()
        for t in range(3, 7):
            expected, _ = dec(ids[:, t:t + 1], cross, general)
            assert torch.equal(step(ids[:, t:t + 1], cross, fast), expected)
    assert fast.length == general.length == 7
    assert torch.equal(fast.keys[..., :7, :], general.keys[..., :7, :])
    assert torch.equal(fast.values[..., :7, :], general.values[..., :7, :])


def test_the_caption_step_needs_the_fused_projection(model):
    dec = model.text_decoder
    assert dec.caption_step() is None  # not fused: beam search steps through forward
    dec.fuse_qkv()
    assert dec.caption_step() is not None
    dec.to(torch.float64)  # new Parameters: no longer the fused views
    assert dec.caption_step() is None


def test_weights_loaded_after_a_call_replace_the_cached_bias_and_label_queries(model):
    """Swin's attention bias and the tagging head's first queries are computed once per weights: loading other
    weights (in place, or as new tensors) must give exactly the other model's outputs."""
    pixels = torch.randn(2, 3, 64, 64, generator=torch.Generator().manual_seed(3))
    with torch.inference_mode():
        first = model(pixels)  # caches filled from the first weights
        for seed, assign in ((9, False), (11, True)):
            other = init_random(build_model(tiny_config()), seed=seed, std=0.2)
            model.load_state_dict(other.state_dict(), assign=assign)
            model.tie_weights()
            got, want = model(pixels), other(pixels)
            assert all(torch.equal(a, b) for a, b in zip(got, want, strict=True))
            assert not torch.equal(got[0], first[0])


def test_with_autograd_on_nothing_is_cached_and_gradients_reach_the_weights(model):
    pixels = torch.randn(1, 3, 64, 64, generator=torch.Generator().manual_seed(4))
    with torch.inference_mode():
        model(pixels)  # caches filled
    logits, _ = model(pixels)
    logits.sum().backward()
    attention = model.visual_encoder.layers[0].blocks[1].attn  # a shifted block: bias + mask
    assert attention.relative_position_bias_table.grad.abs().sum() > 0
    assert model.tagging_head.encoder.layer[0].crossattention.self.query.weight.grad.abs().sum() > 0
    assert model.label_embed.weight.grad.abs().sum() > 0


def test_gelu_in_place_is_gelu():
    x = torch.randn(64, 96, generator=torch.Generator().manual_seed(6)) * 3
    with torch.no_grad():
        out = gelu_(x.clone())
    assert torch.equal(out, torch.nn.functional.gelu(x))
    y = x.clone().requires_grad_()
    gelu_(y).sum().backward()  # autograd on: not in place, so backward has its input
    assert y.grad is not None and torch.equal(x, y.detach())


@pytest.mark.parametrize("rows", [[0, 1, 2], [0, 0, 1], [1, 2, 0], [2, 2, 2]])
def test_reorder_moves_rows_as_a_gather_would(rows):
    cache = KVCache(layers=2, rows=3, heads=2, head_size=4, capacity=6, like=torch.zeros(1))
    cache.keys.normal_(generator=torch.Generator().manual_seed(7))
    cache.values.normal_(generator=torch.Generator().manual_seed(8))
    cache.length = 5
    keys, values = cache.keys.clone(), cache.values.clone()
    cache.reorder(rows)
    assert torch.equal(cache.keys[:, :, :, :5], keys[:, rows, :, :5])
    assert torch.equal(cache.values[:, :, :, :5], values[:, rows, :, :5])


def test_one_prompt_per_image_gives_each_beam_a_copy_of_its_cache(model):
    dec = model.text_decoder
    enc = torch.randn(2, 6, 32, generator=torch.Generator().manual_seed(9))
    prompt = torch.tensor([[30522, 1037, 3861, 1997]] * 2)
    with torch.inference_mode():
        once = dec.new_cache(2, 10, enc)
        logits, _ = dec(prompt, dec.cross_key_values(enc), once)
        beams = once.repeat_rows(3)
        each, _ = dec(prompt.repeat_interleave(3, 0), dec.cross_key_values(enc.repeat_interleave(3, 0)))
    assert beams.length == 4 and beams.keys.shape[1] == 6 and beams.keys.shape[3] == 10  # room for the caption
    for row in range(6):
        assert torch.equal(beams.keys[:, row, :, :4], once.keys[:, row // 3, :, :4])
        assert torch.equal(beams.values[:, row, :, :4], once.values[:, row // 3, :, :4])
    assert torch.allclose(logits.repeat_interleave(3, 0), each, atol=1e-5)


def test_a_loaded_pipeline_holds_its_derived_tensors_from_the_start(tiny_pipe, two_images):
    """Memory estimates count the derived tensors (non-persistent buffers) before the first call, and a call does
    not grow them; no state_dict holds them."""
    from shared.pool import estimate_bytes

    names = {name for name, _ in tiny_pipe.model.named_buffers()}
    assert any(name.endswith("attn.attention_bias_cache") for name in names)
    assert "tagging_head.first_queries_cache" in names
    assert not any(key.endswith("_cache") for key in tiny_pipe.model.state_dict())
    before = estimate_bytes(tiny_pipe)
    tiny_pipe(list(two_images))
    assert estimate_bytes(tiny_pipe) == before
