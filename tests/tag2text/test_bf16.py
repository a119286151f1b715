"""Tag2Text in bf16 on the CPU (opt-in, DEMOHUB_DTYPE=bf16): it runs through the fast paths in bf16, stays close to
fp32 on the tiny official-layout checkpoint, and the pages say which precision runs and what bf16 trades."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from apps.tag2text import actions
from apps.tag2text.actions import example_images
from apps.tag2text.config import OFFICIAL_THRESHOLD
from apps.tag2text.pipeline import Tag2TextPipeline

REPO_ROOT = Path(__file__).resolve().parents[2]
SCORE_TOLERANCE = 0.02  # tag probabilities, bf16 against fp32 on the tiny checkpoint (measured: under 0.01)


@pytest.fixture(scope="module")
def half_pipe(tiny_dir):
    return Tag2TextPipeline.from_pretrained(tiny_dir, dtype=torch.bfloat16)


def self_attentions(model):
    layers = (*model.tag_encoder.encoder.layer, *model.text_decoder.bert.encoder.layer)
    return [layer.attention.self for layer in layers]


def test_every_weight_is_bf16_and_the_fused_qkv_survives_the_cast(half_pipe):
    assert half_pipe.dtype is torch.bfloat16
    assert {p.dtype for p in half_pipe.model.parameters()} == {torch.bfloat16}
    assert all(attn.is_fused() and attn.qkv_weight.dtype is torch.bfloat16 for attn in self_attentions(half_pipe.model))


def test_every_stage_computes_in_bf16(half_pipe, two_images):
    pixels = half_pipe.pixel_values(list(two_images))
    assert pixels.dtype is torch.bfloat16
    with torch.inference_mode():
        logits, embeds = half_pipe.model(pixels)
        encoded = half_pipe.encode_tags(embeds, [["dog"], []])
        cache = half_pipe.model.text_decoder.new_cache(6, 8, encoded)
    assert logits.dtype is embeds.dtype is encoded.dtype is torch.bfloat16
    assert cache.keys.dtype is cache.values.dtype is torch.bfloat16


def test_bf16_tags_and_captions_stay_close_to_fp32(half_pipe, tiny_pipe, two_images):
    images = [*example_images(), *two_images]
    half, full = half_pipe(images).results, tiny_pipe(images).results
    for a, b in zip(half, full, strict=True):
        assert a.name == b.name and isinstance(a.caption, str) and a.caption
        diff = np.abs(np.subtract(a.scores, b.scores))
        assert diff.max() < SCORE_TOLERANCE, f"{a.name}: tag scores differ by up to {diff.max():.4f}"
        # a tag shown in one precision and not the other sat within the tolerance of the threshold
        for index in {t.index for t in a.tags} ^ {t.index for t in b.tags}:
            assert abs(b.scores[index] - OFFICIAL_THRESHOLD) < SCORE_TOLERANCE
        assert set(a.to_dict()) == set(b.to_dict())


def test_demohub_dtype_bf16_loads_the_pages_pipeline_in_bf16(tiny_ctx, monkeypatch):
    monkeypatch.setenv("DEMOHUB_DTYPE", "bf16")
    assert tiny_ctx.pipeline().dtype is torch.bfloat16
    chips, caption, _, scores = actions.image_view(actions.tag_image(tiny_ctx, example_images()[0], 0.5, ""))
    assert caption and chips.count('class="t2t-chip"') == len(scores)


def benchmarks_section(title: str) -> str:
    return (REPO_ROOT / "BENCHMARKS.md").read_text().split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def ratio(section: str, stage: str, batch: int) -> str:
    """The measured ratio (the first ×, before any goal) on the first table row of ``stage`` at ``batch`` (the current
    run's table), rounded as the page rounds it."""
    row = next(line for line in section.splitlines() if line.startswith(f"| {stage} | {batch} |"))
    return f"{float(re.findall(r'([0-9.]+)×', row)[0]):.1f}×"


def test_precision_note_names_the_dtype_and_the_measured_figures(monkeypatch):
    monkeypatch.delenv("DEMOHUB_DTYPE", raising=False)
    monkeypatch.delenv("DEMOHUB_DEVICE", raising=False)
    note = actions.precision_note()
    assert note.startswith("**Precision:** fp32 on the CPU; bf16 (fp16 where unsupported) on a GPU.")
    assert "DEMOHUB_DTYPE=bf16" in note and "fp32 stays the CPU default" in note
    # the page quotes BENCHMARKS.md: fp32 against the official code, bf16 against fp32
    official = benchmarks_section("Tag2Text: official code vs ours")
    one, eight = (ratio(official, "whole call (tags + caption)", b) for b in (1, 8))
    assert f"one image {one} faster than the official implementation" in note
    assert f"a batch of 8 {eight} faster, with the same tags (upstream captions a whole batch" in note
    bf16 = benchmarks_section("Reduced precision")
    one, eight = (ratio(bf16, "whole call (tags + caption)", b) for b in (1, 8))
    assert f"one image {one} faster and a batch of 8 {eight} faster than fp32" in note
    full_size = next(line for line in bf16.splitlines() if line.startswith("| Tag2Text, full size"))
    tags_changed, captions_changed = re.findall(r"(\d+%) \(\d+ of 64\)", full_size)[::2]
    assert f"tags changed on {tags_changed} and captions on {captions_changed}" in note
    monkeypatch.setenv("DEMOHUB_DTYPE", "bf16")
    assert actions.precision_note().startswith("**Precision:** bf16 (DEMOHUB_DTYPE=bf16).")


def test_the_page_shows_the_precision_note_and_building_it_imports_no_torch(tmp_path):
    code = ("import json, sys; from apps.tag2text import DEMO, actions; from apps.tag2text.page import build; "
            "from shared.context import DemoContext; from shared.pool import ModelPool; "
            "config = json.dumps(build(DemoContext(DEMO, ModelPool(budget_bytes=0))).get_config_file(), default=str); "
            "print('torch' in sys.modules, 'Precision and speed' in config, json.dumps(actions.precision_note())[1:-1] "
            "in config)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEMOHUB_D")}  # no forced device or dtype
    env.update(HF_HUB_OFFLINE="1", DEMOHUB_CHECKPOINTS=str(tmp_path))
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
                            env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "False True True"


def test_the_streamlit_page_shows_the_precision_note(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("DEMOHUB_DTYPE", "bf16")
    at = AppTest.from_file(str(REPO_ROOT / "apps" / "streamlit_hub.py"), default_timeout=60).run()
    at.switch_page("tag2text/streamlit_page.py").run()
    assert not at.exception
    assert [e.label for e in at.expander] == ["Precision and speed", "Embed this demo"]
    assert actions.precision_note() in [m.value for m in at.expander[0].markdown]
    assert actions.precision_note().startswith("**Precision:** bf16 (DEMOHUB_DTYPE=bf16).")
