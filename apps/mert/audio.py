"""Reading a visitor's audio for MERT, within budgets: the header is checked first (format, channels, sample rate,
duration), then only the analysed part is decoded, mixed to mono and resampled to MERT's 24 kHz.

soundfile (libsndfile) decodes WAV, FLAC, OGG/Vorbis and MP3; soxr resamples. A file's declared length is never
trusted for work: at most ``MAX_ANALYSED_SECONDS`` are decoded, whatever the header says (a tiny file declaring hours
of sound decodes what it holds and stops).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from shared.errors import UserInputError

SAMPLE_RATE = 24_000  # MERT's input rate (config.json "sample_rate"; the feature extractor's "sampling_rate")
MIN_SECONDS = 0.5  # shorter gives the encoder too few frames (75 per second) for a time average worth showing
MAX_ANALYSED_SECONDS = 300  # a longer track is analysed over its first 5 minutes, and the answer says so
MIN_RATE, MAX_RATE = 8_000, 96_000  # sample rates read; 192 kHz studio masters are refused with a sentence
MAX_CHANNELS = 2  # mono or stereo; stereo is averaged to mono (the official Space joined channels end to end)
SILENCE = 1e-4  # peak amplitude below which a clip holds no sound worth describing
FORMATS = "WAV, FLAC, OGG or MP3"


@dataclass(frozen=True)
class Audio:
    """The analysed part of a file: mono float32 samples at ``SAMPLE_RATE``, and what was read of it."""

    samples: np.ndarray
    seconds: float  # the whole file's duration, as its header declares it
    analysed_seconds: float
    source_rate: int
    channels: int

    @property
    def notes(self) -> tuple[str, ...]:
        if self.seconds > self.analysed_seconds + 0.01:
            return (f"The track is {self.seconds / 60:.1f} minutes long; its first {self.analysed_seconds / 60:.0f} "
                    "minutes were analysed.",)
        return ()


def check_header(path: str | Path, name: str = "The audio file"):
    """The file's header (soundfile's ``info``), checked: audio this server reads, mono or stereo, a usual sample
    rate. Reads no sound: cheap enough for a check before the queue."""
    import soundfile

    try:
        info = soundfile.info(str(path))
    except (RuntimeError, soundfile.LibsndfileError, OSError):
        raise UserInputError(f"{name} is not audio this server can read; send {FORMATS}.", argument="audio") from None
    if not 1 <= info.channels <= MAX_CHANNELS:
        raise UserInputError(f"{name} has {info.channels} channels; send mono or stereo.", argument="audio")
    if not MIN_RATE <= info.samplerate <= MAX_RATE:
        raise UserInputError(f"{name} is sampled at {info.samplerate:,} Hz; send {MIN_RATE // 1000} to "
                             f"{MAX_RATE // 1000} kHz (44.1 or 48 kHz is usual).", argument="audio")
    return info


def read_audio(path: str | Path, name: str = "The audio file") -> Audio:
    """The file's first ``MAX_ANALYSED_SECONDS`` as MERT reads them, or a ``UserInputError`` saying what is wrong
    (``check_header``'s, then too short or silent)."""
    import soundfile

    info = check_header(path, name)
    rate = info.samplerate
    try:  # in 10 s blocks, each mixed to mono at once: memory follows the sound read, not the header's claim
        blocks = [block.mean(axis=1) for block in soundfile.blocks(
            str(path), blocksize=10 * rate, frames=int(MAX_ANALYSED_SECONDS * rate), dtype="float32",
            always_2d=True)]
    except (RuntimeError, soundfile.LibsndfileError, OSError):
        raise UserInputError(f"{name} is damaged: its sound could not be decoded; send {FORMATS}.",
                             argument="audio") from None
    mono = np.concatenate(blocks) if blocks else np.zeros(0, np.float32)
    analysed = len(mono) / rate
    if analysed < MIN_SECONDS:
        raise UserInputError(f"{name} holds {analysed:.2f} s of sound; send at least {MIN_SECONDS} s.",
                             argument="audio")
    if not np.isfinite(mono).all() or float(np.abs(mono).max()) < SILENCE:
        raise UserInputError(f"{name} is silent: there is nothing to describe.", argument="audio")
    # The header's length counts only where decoding stopped at the budget: a file that ended sooner is as long as
    # the sound it held, whatever its header claimed.
    whole = max(info.frames / rate, analysed) if analysed >= MAX_ANALYSED_SECONDS else analysed
    return Audio(resample(mono, rate), whole, analysed, rate, info.channels)


def resample(samples: np.ndarray, rate: int) -> np.ndarray:
    """Mono samples at ``rate`` -> float32 at ``SAMPLE_RATE`` (soxr's high quality)."""
    if rate == SAMPLE_RATE:
        return samples.astype(np.float32, copy=False)
    import soxr

    return soxr.resample(samples, rate, SAMPLE_RATE, quality="HQ").astype(np.float32, copy=False)
