"""``MERTPipeline``: a clip described by the ten Music-Descriptor heads on the official MERT-v1-95M encoder, as a
whole and, beyond the official Space, window by window (a timeline of the top label per window).

The folder is the Space ``m-a-p/Music-Descriptor``'s layout, which carries both: ``MERT-v1-95M/`` (config.json,
preprocessor_config.json, pytorch_model.bin) and ``Prediction_Head/best-layer-MERT-v1-95M/``. The encoder's input is
the raw 24 kHz waveform (the Space's preprocessor does not normalise). Windows of equal length go through the encoder
together (``GPU_BATCH`` a pass on a GPU, one on a CPU); a whole clip longer than ``WHOLE_PASS_SECONDS`` is described
from the length-weighted average of its parts' layer means (attention over one long pass grows with the square of
its length), and says so: its windows where a timeline was asked for (one encoding serves both), else 30 s parts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from apps.mert import checks
from apps.mert.audio import SAMPLE_RATE
from apps.mert.model import layer_means, load_encoder, load_heads
from apps.mert.tasks import HEADS_FOLDER, REGRESSION, TITLES, TOP, short_label
from shared.pipeline import Callback, Pipeline, PipelineOutput

ENCODER_FOLDER = "MERT-v1-95M"
# Windows per encoder pass (BENCHMARKS.md, MERT): on a GPU, 8 a pass take a 3-minute track's timeline 2.9-3.8x faster
# than one at a time; on a 2-core CPU 8 a pass were 0.82x as fast (the feature encoder's first activations, 8 x 512
# channels x the window's samples / 5, leave the caches), so a CPU encodes one window a pass.
GPU_BATCH, CPU_BATCH = 8, 1
WHOLE_PASS_SECONDS = 30.0  # longest clip described in one encoder pass, as the Space did for every clip


@dataclass(frozen=True)
class Label:
    name: str
    score: float  # softmax probability, as the Space shows it; EMO: the head's value


@dataclass(frozen=True)
class TaskResult:
    task: str
    title: str
    labels: tuple[Label, ...]  # best first; EMO: arousal and valence


@dataclass(frozen=True)
class WindowResult:
    start: float  # seconds
    end: float
    top: dict[str, str]  # task -> its best label in this window (EMO: "arousal +0.12, valence -0.30")


@dataclass(frozen=True)
class MERTOutput(PipelineOutput):
    results: tuple[TaskResult, ...]
    windows: tuple[WindowResult, ...]
    seconds: float
    analysed_seconds: float
    notes: tuple[str, ...]


class MERTPipeline(Pipeline):
    output_class = MERTOutput
    components = ("encoder", "heads")
    check_inputs = staticmethod(checks.check_inputs)

    def __init__(self, encoder, heads: dict, device="cpu", dtype=torch.float32):
        self.encoder = encoder
        self.tasks = heads
        self.heads = nn.ModuleDict({name: task.head for name, task in heads.items()})
        self.device, self.dtype = torch.device(device), dtype
        self.batch = GPU_BATCH if self.device.type == "cuda" else CPU_BATCH

    @classmethod
    def from_pretrained(cls, path, *, device="cpu", dtype=torch.float32) -> MERTPipeline:
        folder = Path(path)
        encoder = load_encoder(folder / ENCODER_FOLDER, dtype).to(device)
        config = encoder.config
        heads = load_heads(folder / HEADS_FOLDER, config.hidden_size, config.num_hidden_layers)
        for task in heads.values():
            task.head.to(device=device, dtype=dtype)
        return cls(encoder, heads, device, dtype)

    def __call__(self, audio, tasks=None, window=None, *, callback: Callback | None = None) -> MERTOutput:
        return self.describe(self.check_inputs(audio, tasks, window), callback=callback)

    def describe(self, inputs: checks.MERTInputs, *, callback: Callback | None = None) -> MERTOutput:
        """The answer for checked inputs (decoded audio): what ``__call__`` runs after its checks."""
        samples = inputs.audio.samples
        pieces, part = _split(len(samples), WHOLE_PASS_SECONDS), WHOLE_PASS_SECONDS
        windows = _split(len(samples), inputs.window) if inputs.window else []
        if windows and len(pieces) > 1:  # a long track is described from its windows: one encoding serves both
            pieces, part = windows, inputs.window
        again = bool(windows) and windows != pieces  # a clip of one pass with a timeline: both are encoded
        total = len(pieces) + len(windows) * again
        means = self._means(samples, pieces, callback, 0, total)
        whole = (means * _weights(pieces)[:, None, None]).sum(dim=0, keepdim=True)
        results = tuple(self._describe(name, whole)[0] for name in inputs.tasks)
        timeline = ()
        if windows:
            window_means = self._means(samples, windows, callback, len(pieces), total) if again else means
            per_task = {name: self._describe(name, window_means) for name in inputs.tasks}
            timeline = tuple(WindowResult(round(a / SAMPLE_RATE, 2), round(b / SAMPLE_RATE, 2),
                                          {name: _top(per_task[name][i]) for name in inputs.tasks})
                             for i, (a, b) in enumerate(windows))
        notes = inputs.audio.notes + ((f"The clip is longer than {WHOLE_PASS_SECONDS:.0f} s: it was described from "
                                       f"{len(pieces)} parts of at most {part:g} s, averaged.",)
                                      if len(pieces) > 1 else ())
        return MERTOutput(results, timeline, inputs.audio.seconds, inputs.audio.analysed_seconds, notes)

    def _means(self, samples: np.ndarray, spans: list[tuple[int, int]], callback, done: int, total: int):
        """[spans, layers, width]: each span's layer means (fp32, on the CPU: small); spans of one length go through
        the encoder together."""
        out: list[torch.Tensor | None] = [None] * len(spans)
        by_length: dict[int, list[int]] = {}
        for i, (a, b) in enumerate(spans):
            by_length.setdefault(b - a, []).append(i)
        for indices in by_length.values():
            for start in range(0, len(indices), self.batch):
                chunk = indices[start:start + self.batch]
                batch = torch.from_numpy(np.stack([samples[spans[i][0]:spans[i][1]] for i in chunk]))
                means = layer_means(self.encoder, batch.to(self.device, self.dtype)).float().cpu()
                for i, row in zip(chunk, means, strict=True):
                    out[i] = row
                done += len(chunk)
                if callback is not None:
                    callback(done, total)
        return torch.stack(out)  # type: ignore[arg-type]

    def _describe(self, name: str, means: torch.Tensor) -> list[TaskResult]:
        task = self.tasks[name]
        with torch.inference_mode():
            logits = task.head(means.to(self.device, self.dtype)).float()
        results = []
        for row in logits:
            if name in REGRESSION:
                labels = tuple(Label(label, float(v)) for label, v in zip(task.labels, row.tolist(), strict=True))
            else:
                scores = torch.softmax(row, dim=0)
                best = torch.argsort(scores, descending=True)[:TOP].tolist()
                labels = tuple(Label(short_label(task.labels[i]), float(scores[i])) for i in best)
            results.append(TaskResult(name, TITLES[name], labels))
        return results


def _top(result: TaskResult) -> str:
    """A window's answer for a task in a few words: its best label; a regression's values ("arousal +0.12, valence
    -0.30")."""
    if result.task in REGRESSION:
        return ", ".join(f"{label.name} {label.score:+.2f}" for label in result.labels)
    return result.labels[0].name


def _split(length: int, seconds: float) -> list[tuple[int, int]]:
    """[start, end) sample spans of at most ``seconds``, covering ``length``; a last span under half a second joins
    the one before it (too short for the encoder's time average)."""
    step = int(seconds * SAMPLE_RATE)
    spans = [(a, min(a + step, length)) for a in range(0, length, step)]
    if len(spans) > 1 and spans[-1][1] - spans[-1][0] < SAMPLE_RATE // 2:
        last = spans.pop()
        spans[-1] = (spans[-1][0], last[1])
    return spans


def _weights(spans: list[tuple[int, int]]) -> torch.Tensor:
    lengths = torch.tensor([b - a for a, b in spans], dtype=torch.float32)
    return lengths / lengths.sum()


