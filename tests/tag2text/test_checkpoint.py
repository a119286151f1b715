"""Loading the official file layout: pickle -> fp16 safetensors once, renames, fallbacks, HF cache resolution."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import torch
from safetensors import safe_open

from apps.tag2text import DEMO
from apps.tag2text.checkpoint import (
    CHECKPOINT_NAME,
    converted_candidates,
    load_model,
    read_official,
)
from apps.tag2text.config import CONFIG_NAME, Tag2TextConfig
from apps.tag2text.pipeline import Tag2TextPipeline
from shared import weights
from shared.errors import WeightsUnavailable
from tests.fixtures.tiny_tag2text import inferable_config, write_tiny_checkpoint

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_tiny_file_has_official_layout(tiny_dir):
    raw = torch.load(tiny_dir / CHECKPOINT_NAME, weights_only=True)
    assert set(raw) >= {"model", "optimizer", "epoch"}
    keys = raw["model"].keys()
    assert any(k.startswith("vision_multi.encoder.layer.0.crossattention") for k in keys)
    assert not any(k.startswith("tagging_head.") for k in keys)
    assert any(k.endswith("relative_position_index") for k in keys)
    assert "text_decoder.bert.embeddings.position_ids" in keys
    assert (tiny_dir / CONFIG_NAME).is_file()


def test_read_official_keeps_weights_only_and_renames(tiny_dir):
    state = read_official(tiny_dir / CHECKPOINT_NAME)
    assert all(isinstance(v, torch.Tensor) for v in state.values())
    assert not any(k.startswith("vision_multi.") for k in state)
    assert "tagging_head.encoder.layer.1.output.dense.weight" in state
    assert not any(k.endswith(("relative_position_index", "attn_mask", "position_ids")) for k in state)


def test_first_load_converts_and_second_reads_no_pickle(tmp_path, monkeypatch):
    write_tiny_checkpoint(tmp_path, seed=5)
    model, read_from = load_model(tmp_path)
    assert read_from == converted_candidates(tmp_path / CHECKPOINT_NAME)[0]
    assert read_from.suffix == ".safetensors"
    with safe_open(str(read_from), framework="pt") as fh:
        assert {fh.get_tensor(k).dtype for k in fh.keys()} == {torch.float16}
        stored = set(fh.keys())
    tied = {"tagging_head.encoder.layer.0.crossattention.self.key.weight",
            "tag_encoder.encoder.layer.0.crossattention.self.key.weight"}
    assert len(tied & stored) == 1  # one tensor under two official names is stored once
    assert "text_decoder.cls.predictions.decoder.weight" not in stored

    def no_pickle(*args, **kwargs):
        raise AssertionError("the pickle was read again")

    monkeypatch.setattr(torch, "load", no_pickle)
    again, read_again = load_model(tmp_path)
    assert read_again == read_from
    for (name, a), (_, b) in zip(model.state_dict().items(), again.state_dict().items(), strict=True):
        assert torch.equal(a, b), name


def test_converted_weights_equal_pickle_weights_to_fp16_precision(tmp_path):
    write_tiny_checkpoint(tmp_path, seed=2)
    raw = torch.load(tmp_path / CHECKPOINT_NAME, weights_only=True)["model"]
    model, _ = load_model(tmp_path)
    ours = model.state_dict()
    w = raw["vision_multi.encoder.layer.1.intermediate.dense.weight"]
    assert torch.allclose(ours["tagging_head.encoder.layer.1.intermediate.dense.weight"], w, atol=1e-3)
    assert torch.allclose(ours["tag_encoder.encoder.layer.1.intermediate.dense.weight"], w, atol=1e-3)
    assert torch.allclose(ours["fc.W"], raw["fc.W"], atol=1e-3)
    assert torch.equal(ours["visual_encoder.layers.0.blocks.1.attn_mask"],
                       raw["visual_encoder.layers.0.blocks.1.attn_mask"])


def test_unwritable_cache_place_falls_back(tmp_path, monkeypatch):
    write_tiny_checkpoint(tmp_path / "w", seed=1)
    (tmp_path / "w" / ".demohub-converted").write_text("a file where the folder should be")
    monkeypatch.setenv("DEMOHUB_CACHE", str(tmp_path / "fallback"))
    _, read_from = load_model(tmp_path / "w")
    assert read_from.is_relative_to(tmp_path / "fallback")
    assert read_from.suffix == ".safetensors"


def test_stale_conversion_is_redone(tmp_path):
    write_tiny_checkpoint(tmp_path, seed=1)
    first, path = load_model(tmp_path)
    write_tiny_checkpoint(tmp_path, seed=9)  # new weights at the same place
    os.utime(tmp_path / CHECKPOINT_NAME, (1_000_000_000, 1_000_000_000))
    second, path2 = load_model(tmp_path)
    assert path2 == path
    assert not torch.equal(first.fc.W, second.fc.W)


def test_damaged_checkpoint_is_a_clear_error(tmp_path):
    write_tiny_checkpoint(tmp_path)
    data = (tmp_path / CHECKPOINT_NAME).read_bytes()
    (tmp_path / CHECKPOINT_NAME).write_bytes(data[: len(data) // 2])
    with pytest.raises(WeightsUnavailable, match="download it again"):
        load_model(tmp_path)


def test_missing_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(WeightsUnavailable, match=CHECKPOINT_NAME):
        load_model(tmp_path)


def test_resolve_from_hf_cache_layout_then_pipeline(tmp_path, monkeypatch, tiny_dir, two_images):
    """The real path: shared.weights.resolve finds the snapshot offline, from_pretrained loads it."""
    ws = DEMO.weight_set()
    repo = tmp_path / "hub" / f"models--{ws.repo_id.replace('/', '--')}"
    sha = "0123456789abcdef0123456789abcdef01234567"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(sha)
    blobs, snapshot = repo / "blobs", repo / "snapshots" / sha
    blobs.mkdir()
    snapshot.mkdir(parents=True)
    for name in (CHECKPOINT_NAME, CONFIG_NAME):  # blobs + relative symlinks, as huggingface_hub lays them out
        shutil.copy(tiny_dir / name, blobs / name.replace(".", "-"))
        os.symlink(os.path.join("..", "..", "blobs", name.replace(".", "-")), snapshot / name)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("DEMOHUB_CHECKPOINTS", raising=False)

    assert weights.state(DEMO.id, ws) is weights.WeightState.CACHED
    folder = weights.resolve(DEMO.id, ws)
    assert folder == snapshot
    pipe = Tag2TextPipeline.from_pretrained(folder)
    assert pipe.weights_file == repo / "demohub-converted" / sha / "tag2text.fp16.safetensors"
    result = pipe(two_images[0]).results[0]
    assert result.caption and len(result.scores) == 24


def test_nowhere_writable_still_loads_from_the_pickle(tmp_path, monkeypatch):
    write_tiny_checkpoint(tmp_path / "w", seed=1)
    (tmp_path / "w" / ".demohub-converted").write_text("blocked")
    (tmp_path / "fallback").write_text("blocked too")
    monkeypatch.setenv("DEMOHUB_CACHE", str(tmp_path / "fallback"))
    model, read_from = load_model(tmp_path / "w")
    assert read_from == tmp_path / "w" / CHECKPOINT_NAME
    assert model.fc.W.dtype == torch.float32


def test_bfloat16_pipeline_agrees_with_float32(tiny_dir, tiny_pipe, two_images):
    half = Tag2TextPipeline.from_pretrained(tiny_dir, device="cpu", dtype=torch.bfloat16)
    assert half.dtype == torch.bfloat16
    a, b = half(two_images[1]).results[0], tiny_pipe(two_images[1]).results[0]
    assert max(abs(x - y) for x, y in zip(a.scores, b.scores, strict=True)) < 0.05
    assert a.caption


def test_the_official_key_list_gives_the_official_config():
    """The official file comes without a config: the sizes read from its shapes are exactly the official ones."""
    shapes = json.loads((FIXTURES / "tag2text_official_keys.json").read_text())
    assert Tag2TextConfig.from_shapes(shapes) == Tag2TextConfig()


def test_a_checkpoint_alone_loads_with_the_sizes_of_its_shapes(tmp_path):
    write_tiny_checkpoint(tmp_path, inferable_config(), seed=3, config_file=False)
    model, read_from = load_model(tmp_path)
    assert model.config == inferable_config()
    with safe_open(str(read_from), framework="pt") as handle:  # the converted copy carries the config
        assert Tag2TextConfig.from_json(handle.metadata()["config"]) == inferable_config()


def test_a_converted_copy_spares_the_pickle_even_for_the_config(tmp_path, monkeypatch):
    write_tiny_checkpoint(tmp_path, inferable_config(), seed=3, config_file=False)
    first, _ = load_model(tmp_path)
    monkeypatch.setattr(torch, "load", lambda *a, **k: pytest.fail("the pickle was read again"))
    again, _ = load_model(tmp_path)
    assert again.config == first.config


@pytest.mark.parametrize(("change", "message"), [
    (lambda state: state.pop("label_embed.weight"), "have no label_embed.weight; they are not a Tag2Text checkpoint"),
    (lambda state: state.update({"label_embed.weight": torch.zeros(24, 64)}),
     "have 24 tags, not the official 3429: put a config.json naming them"),
])
def test_shapes_that_name_no_config_get_a_sentence(tmp_path, change, message):
    write_tiny_checkpoint(tmp_path, inferable_config(), config_file=False)
    raw = torch.load(tmp_path / CHECKPOINT_NAME, weights_only=True)
    change(raw["model"])
    torch.save(raw, tmp_path / CHECKPOINT_NAME)
    with pytest.raises(WeightsUnavailable, match=message):
        load_model(tmp_path)
