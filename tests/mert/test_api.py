"""MERT's declared endpoint on its generated page, served, with tiny weights in the official layout: the answer is
the pipeline's ``to_dict()``, and bad audio is refused before the queue with a sentence naming the input."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile
from gradio_client import Client, handle_file
from gradio_client.exceptions import ValidationError

import apps
from apps import forms
from shared.context import DemoContext
from shared.pool import ModelPool
from shared.weights import REPO_ROOT
from tests.conftest import serve_page
from tests.fixtures.tiny_mert import build_default

DEMO = apps.get_demo("mert")
EXAMPLE = REPO_ROOT / "apps" / "mert" / "examples" / "drum-pattern.flac"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("checkpoints")
    build_default(root / "mert" / DEMO.weight_sets[0].name)
    mp = pytest.MonkeyPatch()
    mp.setenv("DEMOHUB_CHECKPOINTS", str(root))
    mp.setenv("HF_HUB_OFFLINE", "1")
    ctx = DemoContext(DEMO, ModelPool(budget_bytes=2_000_000_000))
    with serve_page(forms.build(ctx)) as url:
        client = Client(url, verbose=False)
        yield client, ctx
        client.close()
    mp.undo()


def test_the_endpoint_answers_the_pipelines_output(served):
    client, ctx = served
    answer = client.predict(handle_file(str(EXAMPLE)), "GS, MTGGenre", 2, api_name="/describe_music")
    direct = ctx.pipeline()(EXAMPLE, "GS, MTGGenre", 2)
    assert answer == direct.to_dict()
    assert [r["task"] for r in answer["results"]] == ["GS", "MTGGenre"]
    assert [(w["start"], w["end"]) for w in answer["windows"]] == [(0.0, 2.0), (2.0, 4.0)]


def test_bad_audio_is_refused_before_the_queue(served, tmp_path):
    client, ctx = served
    loads = ctx.pool.stats().loads
    eight = tmp_path / "eight-channels.wav"
    soundfile.write(eight, np.full((24_000, 8), 0.1, np.float32), 24_000)
    not_audio = tmp_path / "photo.wav"
    not_audio.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 100)
    for path, words in ((eight, "8 channels"), (not_audio, "is not audio")):
        with pytest.raises(ValidationError, match=f"- audio: .*{words}"):
            client.predict(handle_file(str(path)), "", None, api_name="/describe_music")
    with pytest.raises(ValidationError, match="- window: window must be a number between 2 and 60"):
        client.predict(handle_file(str(EXAMPLE)), "", 1, api_name="/describe_music")
    assert ctx.pool.stats().loads == loads, "a refused call loaded the model"
    silent = tmp_path / "silent.wav"
    soundfile.write(silent, np.zeros(24_000, np.float32), 24_000)
    with pytest.raises(Exception, match="is silent"):  # found when the call decodes it
        client.predict(handle_file(str(silent)), "", None, api_name="/describe_music")


def test_the_page_shows_the_answer_as_bars_a_point_and_a_timeline(served):
    """The generated page shows a declared view of the answer (apps/mert/api.py as_report, drawn by apps/views.py)
    above the JSON: a task's five labels with their scores, emotion as a point, a coloured row per window."""
    import re
    from html import unescape

    from apps.mert.api import as_report

    _, ctx = served
    answer = ctx.pipeline()(EXAMPLE, "GS, EMO", 2).to_dict()
    report = as_report(answer)
    key = report.split("<strong>Key</strong>")[1].split('<div class="view-')[0]
    scores = re.findall(r">(\d+)%<", key)
    assert len(scores) == 5 and answer["results"][0]["labels"][0]["name"] in unescape(key)
    assert [int(x) for x in scores] == [round(100 * x["score"]) for x in answer["results"][0]["labels"]]
    arousal, valence = (x["score"] for x in answer["results"][1]["labels"])
    assert f'aria-label="arousal {arousal:+.2f}, valence {valence:+.2f}"' in report
    rows = re.findall(r"<tr><td[^>]*>([^<]+)</td>", report)
    assert rows == ["0–2 s", "2–4 s"]
    first = answer["windows"][0]["top"]["GS"]
    assert f">{first}</td>" in unescape(report) and "hsl(" in report


def test_a_view_escapes_what_an_answer_holds():
    from apps import views

    drawn = views.bars("<b>t</b>", [("<script>x</script>", 0.5)]) + views.timeline("t", [("k", "<i>")],
                                                                                   [("0 s", {"k": "<img>"})])
    assert "<script>" not in drawn and "<img>" not in drawn and "<i>" not in drawn and "&lt;script&gt;" in drawn
