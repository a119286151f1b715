"""MERT's API function, declared once (``shared.api``): ``/describe_music``, also an MCP tool. With no page.py of
its own, the demo's Gradio and Streamlit pages are the forms made from this declaration."""

from __future__ import annotations

from apps.mert import checks
from apps.mert.audio import MAX_ANALYSED_SECONDS
from apps.mert.tasks import BEST_LAYER, TITLES
from shared.api import Endpoint, Example, Input
from shared.context import DemoContext
from shared.uploads import api_file

TASKS = ", ".join(f"{name} ({TITLES[name].lower()})" for name in BEST_LAYER)

ENDPOINTS = (
    Endpoint(
        name="describe_music",
        summary="Describe music with MERT-v1-95M and the Music-Descriptor heads: key, genre, mood, instruments, pitch, "
                "singer, vocal technique and emotion, for the whole clip and, given a window, over time.",
        inputs=(
            Input("audio", "file", f"the music (WAV, FLAC, OGG or MP3; mono or stereo, 8 to 96 kHz; the first "
                  f"{MAX_ANALYSED_SECONDS // 60} minutes are analysed); over MCP send it as a data URI",
                  example="apps/mert/examples/piano-scale.flac", media="audio", label="Music",
                  help=f"Upload a recording or record one: WAV, FLAC, OGG or MP3, 8 to 96 kHz; the first "
                       f"{MAX_ANALYSED_SECONDS // 60} minutes are described."),
            Input("tasks", "choices", f"the task names to run (a list; text with commas is read as one; all ten when "
                  f"left out): {TASKS}", default=tuple(BEST_LAYER), choices=tuple(BEST_LAYER), max_length=300,
                  example=["GS", "MTGGenre"], label="What to describe",
                  choice_labels=tuple(TITLES[name] for name in BEST_LAYER),
                  help="Each is one of the paper's probing heads on MERT's layers."),
            Input("window", "number", "seconds per window of the timeline (the top label of each task per window); "
                  "null: no timeline", default=None, minimum=checks.MIN_WINDOW, maximum=checks.MAX_WINDOW,
                  example=5, label="Seconds per window", switch="Show a timeline",
                  help=f"The timeline names each task's top label window by window "
                       f"({checks.MIN_WINDOW:g} to {checks.MAX_WINDOW:g} s)."),
        ),
        returns='{"results": [{"task", "title", "labels": [{"name", "score"}] (top 5, softmax scores as the official '
                'Space shows them; EMO: arousal and valence values)}], "windows": [{"start", "end", "top": {task: '
                'its best label; EMO: "arousal +a, valence +v"}}], "seconds", "analysed_seconds", "notes"}',
        run="apps.mert.api:describe_music",
        check="apps.mert.api:check_describe_music",
        view="apps.mert.api:as_report",
        examples=(  # clips synthesised by apps/mert/examples.py: no recorded music
            Example("Piano-like scale, key and pitch over time", {
                "audio": "apps/mert/examples/piano-scale.flac", "tasks": ["GS", "NSynthP", "NSynthI"], "window": 2}),
            Example("Drum pattern, genre and instruments", {
                "audio": "apps/mert/examples/drum-pattern.flac", "tasks": ["MTGGenre", "MTGInstrument", "MTGMood"]}),
            Example("Sine chord, all ten tasks", {"audio": "apps/mert/examples/sine-chord.flac"}),
        ),
    ),
)


def check_describe_music(ctx: DemoContext, audio, tasks, window) -> checks.MERTInputs:
    """The header, the tasks and the window; the sound itself is decoded when the call runs."""
    return checks.check_inputs(api_file(audio, "audio"), tasks, window, decode=False)


def as_report(answer: dict) -> str:
    """The answer as a reader takes it in: each task's top labels as bars, emotion as a point (arousal, valence),
    the timeline coloured by label, the notes."""
    from apps import views

    parts = []
    for result in answer["results"]:
        labels = [(x["name"], x["score"]) for x in result["labels"]]
        if result["task"] == "EMO":
            parts.append(views.point(result["title"], *labels))
        else:
            parts.append(views.bars(result["title"], labels))
    out = [views.grid(parts)]
    if answer["windows"]:
        columns = [(r["task"], r["title"]) for r in answer["results"]]
        rows = [(f"{w['start']:g}–{w['end']:g} s", w["top"]) for w in answer["windows"]]
        out.append(views.timeline("Over time: the top label of each window", columns, rows))
    return "".join(out) + views.notes(answer["notes"])


def describe_music(ctx: DemoContext, audio, tasks, window) -> dict:
    with ctx.compute() as pipe:
        return pipe(api_file(audio, "audio"), tasks, window).to_dict()
