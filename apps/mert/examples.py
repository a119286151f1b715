"""The MERT demo's example clips, synthesised by this code (no recorded or copyrighted audio): a piano-like C major
scale, a drum pattern and a sustained A minor chord, 24 kHz mono FLAC in apps/mert/examples/.
Regenerate with ``python -m apps.mert.examples`` (the same files, sample for sample)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

RATE = 24_000
FOLDER = Path(__file__).parent / "examples"


def _note(hz: float, seconds: float, decay: float = 3.0) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    partials = sum(amp * np.sin(2 * np.pi * hz * k * t) for k, amp in ((1, 1.0), (2, 0.5), (3, 0.25), (4, 0.12)))
    return partials * np.exp(-decay * t) * np.minimum(1.0, t * 200)  # a 5 ms attack, then the decay


def piano_scale() -> np.ndarray:
    """C4 to C5 in half-second notes."""
    return np.concatenate([_note(261.63 * 2 ** (step / 12), 0.5) for step in (0, 2, 4, 5, 7, 9, 11, 12)])


def drum_pattern() -> np.ndarray:
    """Two bars at 120 bpm: kick on 1 and 3, snare on 2 and 4, closed hi-hat on every eighth."""
    rng = np.random.default_rng(0)
    beat = RATE // 2
    out = np.zeros(8 * beat)
    t = np.arange(beat) / RATE
    kick = np.sin(2 * np.pi * np.cumsum(50 + 70 * np.exp(-t * 30)) / RATE) * np.exp(-t * 12)
    snare = rng.normal(0, 0.5, beat) * np.exp(-t * 25) + 0.3 * np.sin(2 * np.pi * 190 * t) * np.exp(-t * 20)
    hat = np.diff(rng.normal(0, 0.3, beat // 4 + 1)) * np.exp(-np.arange(beat // 4) / RATE * 80)
    for i in range(8):
        out[i * beat:(i + 1) * beat] += kick if i % 2 == 0 else snare
        for half in (0, beat // 2):
            out[i * beat + half:i * beat + half + len(hat)] += hat
    return out


def sine_chord() -> np.ndarray:
    """A3, C4 and E4 held for four seconds with a slow tremolo."""
    t = np.arange(4 * RATE) / RATE
    chord = sum(np.sin(2 * np.pi * hz * t) for hz in (220.0, 261.63, 329.63))
    return chord * (0.8 + 0.2 * np.sin(2 * np.pi * 4 * t)) * np.minimum(1.0, t * 20)


CLIPS = {"piano-scale": piano_scale, "drum-pattern": drum_pattern, "sine-chord": sine_chord}


def write_all(folder: Path = FOLDER) -> list[Path]:
    import soundfile

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, make in CLIPS.items():
        samples = make()
        path = folder / f"{name}.flac"
        soundfile.write(path, (0.8 * samples / np.abs(samples).max()).astype(np.float32), RATE, subtype="PCM_16")
        paths.append(path)
    return paths


if __name__ == "__main__":
    for written in write_all():
        print(written.relative_to(Path.cwd()) if written.is_relative_to(Path.cwd()) else written)


def preview(bars: int = 56, width: int = 224, height: int = 126) -> str:
    """The hub card's picture: the first example clip's loudness as a bar waveform (SVG, drawn from the synthesis,
    no file read)."""
    samples = np.abs(piano_scale())
    peaks = [float(chunk.max()) for chunk in np.array_split(samples, bars)]
    top = max(peaks) or 1.0
    step = width / bars
    rects = "".join(
        f'<rect x="{i * step + 1:.1f}" y="{(height - h) / 2:.1f}" width="{step - 2:.1f}" height="{h:.1f}" rx="1"/>'
        for i, h in enumerate(max(2.0, height * 0.9 * p / top) for p in peaks))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
            f'height="{height}" role="img" aria-label="The piano-scale example as a waveform">'
            f'<g fill="currentColor" opacity="0.75">{rects}</g></svg>')
