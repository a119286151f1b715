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
    ),
)


def check_describe_music(ctx: DemoContext, audio, tasks, window) -> checks.MERTInputs:
    """The header, the tasks and the window; the sound itself is decoded when the call runs."""
    return checks.check_inputs(api_file(audio, "audio"), tasks, window, decode=False)


def describe_music(ctx: DemoContext, audio, tasks, window) -> dict:
    with ctx.compute() as pipe:
        return pipe(api_file(audio, "audio"), tasks, window).to_dict()
