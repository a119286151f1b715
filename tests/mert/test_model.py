"""MERT's encoder and heads (apps/mert/model.py) against the official files: every key of the released
pytorch_model.bin loads into transformers' HubertModel, a tiny checkpoint in the official layout loads strictly, the
heads read the layer the Space reads, and batching clips changes nothing."""

from __future__ import annotations

import json
import math

import pytest
import torch

from apps.mert.model import (
    encoder_config,
    layer_means,
    load_encoder,
    load_heads,
    official_keys,
)
from apps.mert.tasks import BEST_LAYER, HEADS_FOLDER
from tests.fixtures.tiny_mert import FACTS, TINY, official_config, write_encoder, write_heads

OFFICIAL_FILE_BYTES = 377_552_987  # pytorch_model.bin of m-a-p/MERT-v1-95M


def test_the_released_config_builds_an_encoder_with_exactly_the_official_keys():
    from transformers import HubertModel

    expected = json.loads((FACTS / "official_keys.json").read_text(encoding="utf-8"))
    with torch.device("meta"):
        encoder = HubertModel(encoder_config(official_config()))
    ours = {key: list(value.shape) for key, value in encoder.state_dict().items()}
    renamed = {key: list(value.shape) for key, value in official_keys(
        {k: torch.empty(v, device="meta") for k, v in expected.items()}).items()}
    assert ours == renamed
    fp32_bytes = 4 * sum(math.prod(shape) for shape in expected.values())
    assert 0 < OFFICIAL_FILE_BYTES - fp32_bytes < 100_000, "the parameters fill the released file (pickle overhead)"


@pytest.mark.parametrize(("key", "value"), [("feature_extractor_cqt", True), ("deepnorm", True)])
def test_a_config_that_is_not_hubert_is_refused(key, value):
    with pytest.raises(ValueError, match=key):
        encoder_config(official_config(**{key: value}))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mert")
    write_encoder(folder)
    write_heads(folder)
    return folder


def test_the_tiny_checkpoint_loads_strictly_and_gives_twelve_layers(tiny):
    encoder = load_encoder(tiny)
    clip = torch.randn(1, 24_000)
    means = layer_means(encoder, clip)
    assert means.shape == (1, 12, TINY["hidden_size"])
    with torch.inference_mode():
        out = encoder(clip, output_hidden_states=True)
    assert out.last_hidden_state.shape[1] == 74  # 75 frames a second, less the conv stack's edges
    torch.testing.assert_close(means[:, 11], out.hidden_states[12].mean(dim=1))
    state = torch.load(tiny / "pytorch_model.bin", weights_only=True)
    assert "encoder.pos_conv_embed.conv.weight_g" in state and "encoder.pos_conv_embed.conv.weight_v" in state


def test_each_head_reads_the_layer_the_space_reads(tiny):
    encoder = load_encoder(tiny)
    tasks = load_heads(tiny / HEADS_FOLDER, TINY["hidden_size"], 12)
    assert list(tasks) == list(BEST_LAYER)
    assert tasks["GS"].labels[:2] == ("C major", "Db major") and tasks["NSynthP"].labels[0] == "1"
    with torch.inference_mode():
        out = encoder(torch.randn(1, 24_000), output_hidden_states=True)
        means = torch.stack(out.hidden_states[1:], dim=1).mean(dim=2)
        for name, task in tasks.items():
            logits = task.head(means)
            assert logits.shape == (1, len(task.labels))
            if BEST_LAYER[name] == "all":
                weights = torch.softmax(task.head.aggregator, dim=1)
                pooled = (means * weights).sum(dim=1)
            else:
                pooled = out.hidden_states[BEST_LAYER[name] + 1].mean(dim=1)  # the embedding output left out
            expected = task.head.output(torch.relu(task.head.hidden_0(pooled)))
            torch.testing.assert_close(logits, expected)


def test_a_batch_of_clips_equals_each_clip_alone(tiny):
    encoder = load_encoder(tiny)
    clips = torch.randn(3, 36_000)
    together = layer_means(encoder, clips)
    alone = torch.cat([layer_means(encoder, clip[None]) for clip in clips])
    torch.testing.assert_close(together, alone, atol=1e-5, rtol=1e-5)


def test_a_head_file_that_carries_code_is_refused(tiny, tmp_path):
    from shared.errors import CheckpointError

    class Payload:
        def __reduce__(self):
            return (print, ("this must never run",))

    heads = tmp_path / "heads"
    heads.mkdir()
    for file in (tiny / HEADS_FOLDER).iterdir():
        (heads / file.name).write_bytes(file.read_bytes())
    torch.save({"state_dict": {}, "payload": Payload()}, heads / "GS.ckpt")
    with pytest.raises(CheckpointError):
        load_heads(heads, TINY["hidden_size"], 12)
