"""The ten Music-Descriptor tasks, torch-free: what a visitor reads for each, and how a label is shown (the tasks and
the layer each head reads are registered with the weights, apps/mert/__init__.py)."""

from __future__ import annotations

import re

from apps.mert import BEST_LAYER, HEADS_FOLDER

__all__ = ["BEST_LAYER", "HEADS_FOLDER", "REGRESSION", "TITLES", "TOP", "short_label"]
TITLES = {"GS": "Key", "MTGInstrument": "Instruments", "MTGGenre": "Genre", "MTGTop50": "Top tags", "MTGMood": "Mood",
          "NSynthI": "Instrument family (one note)", "NSynthP": "Pitch (MIDI note, one note)",
          "VocalSetS": "Singer", "VocalSetT": "Vocal technique", "EMO": "Emotion (arousal, valence)"}
REGRESSION = ("EMO",)  # two numbers, not classes: shown as values (the Space showed their softmax)
TOP = 5  # labels shown per task, as the Space


def short_label(name: str) -> str:
    """A label as the Space shows it: "genre---rock" -> "rock", "mood/theme---calm" -> "calm"."""
    return re.sub(r"^\w+/\w+---", "", re.sub(r"^\w+---", "", name))
