"""MERT's input checks, torch-free: the audio file (read within budgets, apps/mert/audio.py), the tasks and the
window length (``MERTPipeline.check_inputs`` is ``check_inputs``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apps.mert.audio import Audio, check_header, read_audio
from apps.mert.tasks import BEST_LAYER
from shared.errors import UserInputError
from shared.validation import check_choices, check_number

MIN_WINDOW, MAX_WINDOW = 2.0, 60.0  # seconds per window of the timeline (MERT was pretrained on 5 s excerpts)


@dataclass(frozen=True)
class MERTInputs:
    audio: Audio | None  # None where only the header was checked (``decode=False``)
    tasks: tuple[str, ...]
    window: float | None  # seconds; None: no timeline


def check_tasks(tasks: Any) -> tuple[str, ...]:
    """Task names (a list, or text with commas) as the Space names them, any case; none: all ten."""
    if tasks is None or (isinstance(tasks, str) and not tasks.strip()):
        return tuple(BEST_LAYER)
    return check_choices(tasks, tuple(BEST_LAYER), "tasks", argument="tasks")


def check_inputs(audio: str | Path | None, tasks: Any = None, window: Any = None, *, decode: bool = True) -> MERTInputs:
    """Every check of a request, without weights; returns ``MERTInputs``. ``decode=False`` checks the audio's header
    only (a check before the queue); a silent or too short clip is then found when the call decodes it."""
    checked_tasks = check_tasks(tasks)
    seconds = None if window in (None, 0) else check_number(window, "window", MIN_WINDOW, MAX_WINDOW,
                                                            argument="window")
    if audio is None:
        raise UserInputError("No audio: upload or record some music.", argument="audio")
    if not decode:
        check_header(audio)
        return MERTInputs(None, checked_tasks, seconds)
    return MERTInputs(read_audio(audio), checked_tasks, seconds)
