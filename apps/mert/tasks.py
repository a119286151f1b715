"""The ten Music-Descriptor tasks, torch-free: their names, what a visitor reads for each, and the layer each head
reads (the Space's ``MERT_BEST_LAYER_IDX``: index L of the 12 transformer layers, ``hidden_states[L + 1]``; "all":
a learned softmax weighting of every layer)."""

from __future__ import annotations

import re

HEADS_FOLDER = "Prediction_Head/best-layer-MERT-v1-95M"  # in the Space's repository
# In the Space's output order (its TASKS list).
BEST_LAYER: dict[str, int | str] = {"GS": 8, "MTGInstrument": "all", "MTGGenre": 7, "MTGTop50": 6, "MTGMood": 6,
                                    "NSynthI": 6, "NSynthP": 1, "VocalSetS": 2, "VocalSetT": 9, "EMO": 5}
TITLES = {"GS": "Key", "MTGInstrument": "Instruments", "MTGGenre": "Genre", "MTGTop50": "Top tags", "MTGMood": "Mood",
          "NSynthI": "Instrument family (one note)", "NSynthP": "Pitch (MIDI note, one note)",
          "VocalSetS": "Singer", "VocalSetT": "Vocal technique", "EMO": "Emotion (arousal, valence)"}
REGRESSION = ("EMO",)  # two numbers, not classes: shown as values (the Space showed their softmax)
TOP = 5  # labels shown per task, as the Space


def short_label(name: str) -> str:
    """A label as the Space shows it: "genre---rock" -> "rock", "mood/theme---calm" -> "calm"."""
    return re.sub(r"^\w+/\w+---", "", re.sub(r"^\w+---", "", name))
