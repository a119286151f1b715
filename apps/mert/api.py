"""MERT's API function, declared once (``shared.api``): ``/describe_music``, also an MCP tool. With no page.py of
its own, the demo's Gradio and Streamlit pages are the forms made from this declaration."""

from __future__ import annotations

from apps.mert import checks
from apps.mert.audio import MAX_ANALYSED_SECONDS
from apps.mert.tasks import BEST_LAYER, TITLES
from shared.api import Endpoint, Input
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
                  example="apps/mert/examples/piano-scale.flac"),
            Input("tasks", "text", f"comma-separated task names, \"\" for all: {TASKS}", default="",
                  max_length=300, example="GS, MTGGenre"),
            Input("window", "number", "seconds per window of the timeline (the top label of each task per window); "
                  "null: no timeline", default=None, minimum=checks.MIN_WINDOW, maximum=checks.MAX_WINDOW,
                  example=5),
        ),
        returns='{"results": [{"task", "title", "labels": [{"name", "score"}] (top 5, softmax scores as the official '
                'Space shows them; EMO: arousal and valence values)}], "windows": [{"start", "end", "top": {task: '
                'label}}], "seconds", "analysed_seconds", "notes"}',
        run="apps.mert.api:describe_music",
        check="apps.mert.api:check_describe_music",
        view="apps.mert.api:as_tables",
    ),
)


def check_describe_music(ctx: DemoContext, audio, tasks, window) -> checks.MERTInputs:
    """The header, the tasks and the window; the sound itself is decoded when the call runs."""
    return checks.check_inputs(api_file(audio, "audio"), tasks, window, decode=False)


def as_tables(answer: dict) -> str:
    """The answer as a reader takes it in: each task's top labels, the timeline, the notes (Markdown)."""
    def cell(text: str) -> str:
        return str(text).replace("|", "/")

    def labels(result: dict) -> str:
        shown = [f"{cell(x['name'])} {x['score']:+.2f}" if result["task"] == "EMO" else
                 f"{cell(x['name'])} {x['score']:.0%}" for x in result["labels"]]
        return ", ".join(shown)

    rows = [f"| {r['title']} | {labels(r)} |" for r in answer["results"]]
    out = ["| task | best labels |", "|---|---|", *rows]
    if answer["windows"]:
        tasks = [r["task"] for r in answer["results"]]
        titles = {r["task"]: r["title"] for r in answer["results"]}
        out += ["", "| time | " + " | ".join(titles[t] for t in tasks) + " |", "|---" * (len(tasks) + 1) + "|"]
        out += [f"| {w['start']:g}–{w['end']:g} s | " + " | ".join(cell(w["top"][t]) for t in tasks) + " |"
                for w in answer["windows"]]
    out += [f"\n> {note}" for note in answer["notes"]]
    return "\n".join(out)


def describe_music(ctx: DemoContext, audio, tasks, window) -> dict:
    with ctx.compute() as pipe:
        return pipe(api_file(audio, "audio"), tasks, window).to_dict()
