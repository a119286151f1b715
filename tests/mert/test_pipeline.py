"""MERTPipeline on a tiny checkpoint in the Space's layout: the contract (check_inputs without weights, frozen output,
to_dict, callback), each task's labels, the timeline of windows, a long clip in parts, and windows batched through
the encoder giving what each window gives alone."""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile
import torch

from apps.mert.audio import SAMPLE_RATE
from apps.mert.pipeline import MERTOutput, MERTPipeline, _split
from apps.mert.tasks import BEST_LAYER, TITLES
from shared.errors import UserInputError
from tests.fixtures.tiny_mert import build_default


@pytest.fixture(scope="module")
def pipe(tmp_path_factory):
    folder = tmp_path_factory.mktemp("music-descriptor")
    build_default(folder)
    return MERTPipeline.from_pretrained(folder)


@pytest.fixture
def clip(tmp_path):
    def write(seconds: float, rate: int = 44_100) -> str:
        t = np.arange(int(seconds * rate)) / rate
        path = tmp_path / f"clip-{seconds}.wav"
        soundfile.write(path, (0.4 * np.sin(2 * np.pi * 220 * t) * (1 + np.sin(2 * np.pi * 0.5 * t))).astype(
            np.float32), rate)
        return str(path)

    return write


def test_every_task_answers_with_its_labels(pipe, clip):
    steps = []
    out = pipe(clip(3.0), callback=lambda step, total: steps.append((step, total)))
    assert isinstance(out, MERTOutput) and [r.task for r in out.results] == list(BEST_LAYER)
    assert steps == [(1, 1)] and out.windows == () and out.notes == ()
    for result in out.results:
        assert result.title == TITLES[result.task]
        if result.task == "EMO":
            assert [label.name for label in result.labels] == ["arousal", "valence"]
        else:
            scores = [label.score for label in result.labels]
            assert len(scores) == 5 and scores == sorted(scores, reverse=True) and 0 < sum(scores) <= 1 + 1e-6
    genre = next(r for r in out.results if r.task == "MTGGenre")
    assert all("---" not in label.name for label in genre.labels), "labels shown without their prefix"
    answer = out.to_dict()
    json.dumps(answer)
    assert answer["seconds"] == pytest.approx(3.0) and answer["results"][0]["task"] == "GS"


def test_the_timeline_has_a_window_per_span_and_batching_changes_nothing(pipe, clip):
    out = pipe(clip(12.3), tasks="MTGGenre, mtgmood", window=5)
    assert [r.task for r in out.results] == ["MTGGenre", "MTGMood"]
    assert [(w.start, w.end) for w in out.windows] == [(0.0, 5.0), (5.0, 10.0), (10.0, 12.3)]
    audio = pipe.check_inputs(clip(12.3)).audio.samples
    spans = _split(len(audio), 5)
    pipe.batch = 8  # as on a GPU (a CPU encodes one window a pass)
    try:
        together = pipe._means(audio, spans, None, 0, len(spans))
    finally:
        pipe.batch = 1
    for i, span in enumerate(spans):
        alone = pipe._means(audio, [span], None, 0, 1)
        torch.testing.assert_close(together[i:i + 1], alone, atol=1e-5, rtol=1e-5)
    assert out.windows[0].top["MTGGenre"] == pipe._describe("MTGGenre", together[:1])[0].labels[0].name


def test_a_window_gives_emotion_as_its_two_values_not_a_label(pipe, clip):
    out = pipe(clip(6.0), tasks="EMO, GS", window=3)
    for window, value in zip(out.windows, [pipe._describe("EMO", m)[0] for m in pipe._means(
            pipe.check_inputs(clip(6.0)).audio.samples, _split(6 * SAMPLE_RATE, 3), None, 0, 2)[:, None]],
            strict=True):
        arousal, valence = value.labels
        assert window.top["EMO"] == f"arousal {arousal.score:+.2f}, valence {valence.score:+.2f}"


def test_windows_that_are_the_whole_pass_are_encoded_once(pipe, clip):
    steps = []
    out = pipe(clip(12.0), tasks="GS", window=30, callback=lambda step, total: steps.append((step, total)))
    assert steps == [(1, 1)] and [(w.start, w.end) for w in out.windows] == [(0.0, 12.0)]
    assert out.windows[0].top["GS"] == out.results[0].labels[0].name


def test_a_long_track_with_a_timeline_is_described_from_its_windows(pipe, clip):
    """Longer than one pass and with a timeline: its windows are encoded once and serve both the timeline and the
    whole description (their length-weighted average), instead of 30 s parts encoded beside them."""
    steps = []
    out = pipe(clip(40.0, rate=SAMPLE_RATE), tasks="GS", window=10, callback=lambda s, t: steps.append((s, t)))
    assert steps[-1] == (4, 4) and len(out.windows) == 4
    assert out.notes == ("The clip is longer than 30 s: it was described from 4 parts of at most 10 s, averaged.",)
    audio = pipe.check_inputs(clip(40.0, rate=SAMPLE_RATE)).audio.samples
    means = pipe._means(audio, _split(len(audio), 10), None, 0, 4)
    best = pipe._describe("GS", means.mean(dim=0, keepdim=True))[0].labels  # four windows of equal length
    assert [(x.name, round(x.score, 5)) for x in out.results[0].labels] == [(x.name, round(x.score, 5)) for x in best]


def test_a_clip_longer_than_one_pass_is_described_in_parts_and_says_so(pipe, clip):
    out = pipe(clip(31.0, rate=SAMPLE_RATE), tasks=["GS"])
    assert out.notes == ("The clip is longer than 30 s: it was described from 2 parts of at most 30 s, averaged.",)


@pytest.mark.parametrize(("tasks", "window", "argument", "words"), [
    ("GS, Tempo", None, "tasks", "'Tempo' is not one of the tasks: choose from GS, "),
    ([3], None, "tasks", "tasks must be a list of names"),
    ([], None, "tasks", "Choose at least one of tasks"),
    (None, 1, "window", "window must be a number between 2 and 60"),
    (None, "long", "window", "window must be a number"),
])
def test_bad_requests_are_refused_without_weights(clip, tasks, window, argument, words):
    with pytest.raises(UserInputError, match=words) as info:
        MERTPipeline.check_inputs(clip(1.0), tasks, window)
    assert info.value.argument == argument


def test_checking_a_request_imports_no_torch():
    import subprocess
    import sys

    code = "import sys, apps.mert.checks; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


def test_a_long_tracks_parts_are_averaged_by_their_length(pipe, clip):
    """45 s: parts of 30 s and 15 s; the track's description comes from their layer means weighted 2:1 (by
    length), not from the plain mean of the two (which would count the short tail as much as the rest)."""
    out = pipe(clip(45.0, rate=SAMPLE_RATE), tasks="GS")
    audio = pipe.check_inputs(clip(45.0, rate=SAMPLE_RATE)).audio.samples
    spans = _split(len(audio), 30)
    assert [(b - a) / SAMPLE_RATE for a, b in spans] == [30.0, 15.0]
    means = pipe._means(audio, spans, None, 0, 2)

    def scores(whole):
        return [(x.name, round(x.score, 5)) for x in pipe._describe("GS", whole)[0].labels]

    by_length = scores((means * torch.tensor([2 / 3, 1 / 3])[:, None, None]).sum(dim=0, keepdim=True))
    plain = scores(means.mean(dim=0, keepdim=True))
    assert by_length != plain, "the test needs parts whose plain and weighted means differ"
    assert [(x.name, round(x.score, 5)) for x in out.results[0].labels] == by_length
