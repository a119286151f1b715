"""Our MERT against the official code: the Space m-a-p/Music-Descriptor's inference path (the remote
``modeling_MERT.py`` on transformers 4.46.3, its ``MLPProberBase`` heads, its ``MERT_BEST_LAYER_IDX``) recorded on the
tiny checkpoint and the shipped example clips (tests/fixtures/mert/official_outputs.json, made by
tests/fixtures/mert/record_official.py; tests/fixtures/mert/README.md says how)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from apps.mert import BEST_LAYER
from apps.mert.audio import SAMPLE_RATE, read_audio
from apps.mert.examples import FOLDER
from apps.mert.model import layer_means
from apps.mert.pipeline import MERTPipeline
from apps.mert.tasks import REGRESSION, TOP, short_label
from tests.fixtures.mert.record_official import FIXTURE, digest, weights_digest
from tests.fixtures.tiny_mert import build_default

OFFICIAL = json.loads(FIXTURE.read_text(encoding="utf-8"))
ATOL = 1e-5


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("music-descriptor")
    build_default(folder)
    assert weights_digest(folder) == OFFICIAL["weights_sha256"], (
        "tests/fixtures/tiny_mert.py no longer builds the weights the official outputs were recorded on: record "
        "them again (tests/fixtures/mert/README.md)")
    return folder


@pytest.fixture(scope="module")
def pipe(folder):
    return MERTPipeline.from_pretrained(folder)


@pytest.fixture(scope="module")
def samples():
    clips = {path.stem: read_audio(path).samples for path in sorted(FOLDER.glob("*.flac"))}
    assert digest(clips) == OFFICIAL["samples_sha256"], "the example clips decode to other samples than recorded"
    return clips


def test_the_official_code_loaded_our_tiny_checkpoint_key_for_key():
    assert OFFICIAL["loading_info"] == {"missing_keys": [], "unexpected_keys": [], "mismatched_keys": [],
                                        "error_msgs": []}
    assert OFFICIAL["made_with"]["transformers"] == "4.46.3"


def test_each_head_reads_the_layer_the_space_gives_it():
    space = OFFICIAL["space_best_layer"]
    assert {task: space[task] for task in BEST_LAYER} == BEST_LAYER
    assert set(space) - set(BEST_LAYER) == {"GTZAN", "MTT"}  # in the Space's table, but the Space loads no head


@pytest.mark.parametrize("part", ["whole", "first_window"])
def test_layer_means_and_head_logits_match_the_official_code(pipe, samples, part):
    for name, x in samples.items():
        official = OFFICIAL["clips"][name][part]
        if part == "first_window":
            x = x[:int(OFFICIAL["window_seconds"] * SAMPLE_RATE)]
        means = layer_means(pipe.encoder, torch.from_numpy(x)[None])
        np.testing.assert_allclose(means[0].numpy(), official["layer_means"], atol=ATOL, rtol=0,
                                   err_msg=f"{name} {part}: layer means")
        for task, expected in official["logits"].items():
            with torch.inference_mode():
                logits = pipe.tasks[task].head(means)[0]
            np.testing.assert_allclose(logits.numpy(), expected, atol=ATOL, rtol=0, err_msg=f"{name} {part}: {task}")


def test_the_pipelines_answer_is_the_spaces_top_five(pipe):
    """The whole public path (decode, one pass, heads, softmax, top 5) names the labels the Space would show, with
    its probabilities; EMO gives the head's two values (the Space showed their softmax)."""
    for path in sorted(FOLDER.glob("*.flac")):
        official = OFFICIAL["clips"][path.stem]["whole"]
        answer = {result.task: result for result in pipe(str(path)).results}
        assert set(answer) == set(official["logits"])
        for task, result in answer.items():
            labels = pipe.tasks[task].labels
            if task in REGRESSION:
                np.testing.assert_allclose([label.score for label in result.labels], official["logits"][task],
                                           atol=ATOL)
                continue
            probs = np.asarray(official["softmax"][task])
            best = np.argsort(-probs, kind="stable")[:TOP]
            assert [label.name for label in result.labels] == [short_label(labels[i]) for i in best], (path, task)
            np.testing.assert_allclose([label.score for label in result.labels], probs[best], atol=ATOL)
