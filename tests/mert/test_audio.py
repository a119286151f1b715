"""Reading audio for MERT (apps/mert/audio.py): common formats become mono 24 kHz, and every bad file a stranger can
send (not audio, empty, silent, too short, 8 channels, 192 kHz, a damaged header, hours of sound, a tiny file whose
header declares an enormous length) gets a sentence naming the audio, after reading no more than the budget."""

from __future__ import annotations

import struct

import numpy as np
import pytest
import soundfile

from apps.mert.audio import MAX_ANALYSED_SECONDS, SAMPLE_RATE, read_audio
from shared.errors import UserInputError


def tone(seconds: float, rate: int, channels: int = 1, hz: float = 440.0) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    wave = 0.5 * np.sin(2 * np.pi * hz * t).astype(np.float32)
    return np.stack([wave] * channels, axis=1) if channels > 1 else wave


@pytest.mark.parametrize(("suffix", "rate", "channels"), [(".wav", 44_100, 2), (".flac", 48_000, 1),
                                                           (".ogg", 22_050, 1), (".mp3", 44_100, 2)])
def test_common_formats_become_mono_24_khz(tmp_path, suffix, rate, channels):
    path = tmp_path / f"tone{suffix}"
    soundfile.write(path, tone(2.0, rate, channels), rate)
    audio = read_audio(path)
    assert (audio.source_rate, audio.channels) == (rate, channels)
    assert audio.samples.dtype == np.float32 and audio.samples.ndim == 1
    assert abs(len(audio.samples) - 2 * SAMPLE_RATE) <= 0.03 * SAMPLE_RATE  # mp3 pads its frames
    spectrum = np.abs(np.fft.rfft(audio.samples))
    assert abs(np.argmax(spectrum) * SAMPLE_RATE / len(audio.samples) - 440) < 3, "the pitch survives resampling"
    assert audio.notes == ()


def write_wav(path, rate: int, channels: int, frames: int, declared_frames: int | None = None) -> None:
    """A 16-bit PCM WAV whose header may declare another length than the data it holds."""
    data = (np.random.default_rng(0).uniform(-0.5, 0.5, (frames, channels)) * 32767).astype("<i2").tobytes()
    size = 2 * channels * (declared_frames if declared_frames is not None else frames)
    header = (b"RIFF" + struct.pack("<I", 36 + size) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 1, channels, rate,
              rate * channels * 2, channels * 2, 16) + b"data" + struct.pack("<I", size))
    path.write_bytes(header + data)


@pytest.mark.parametrize(("make", "words"), [
    (lambda p: p.write_text("this is not audio at all"), "is not audio"),
    (lambda p: p.write_bytes(b""), "is not audio"),
    (lambda p: write_wav(p, 44_100, 1, 0), "0.00 s of sound"),
    (lambda p: write_wav(p, 44_100, 1, 4_410), "0.10 s of sound"),
    (lambda p: soundfile.write(p, np.zeros(48_000, np.float32), 48_000), "is silent"),
    (lambda p: write_wav(p, 44_100, 8, 44_100), "8 channels"),
    (lambda p: write_wav(p, 192_000, 1, 192_000), "192,000 Hz"),
    (lambda p: p.write_bytes(b"RIFF\xff\xff\xff\xffWAVEfmt \x10\x00\x00\x00\x01\x00"), "is not audio"),
], ids=["text", "empty-file", "no-frames", "too-short", "silence", "8-channels", "192-khz", "truncated-header"])
def test_a_bad_file_gets_a_sentence(tmp_path, make, words):
    path = tmp_path / "upload.wav"
    make(path)
    with pytest.raises(UserInputError, match=words) as info:
        read_audio(path)
    assert info.value.argument == "audio"


def test_a_long_track_is_analysed_over_its_first_minutes_and_says_so(tmp_path):
    path = tmp_path / "long.wav"
    rate = 8_000
    soundfile.write(path, tone(MAX_ANALYSED_SECONDS + 60, rate), rate)
    audio = read_audio(path)
    assert audio.analysed_seconds == MAX_ANALYSED_SECONDS and len(audio.samples) == MAX_ANALYSED_SECONDS * SAMPLE_RATE
    assert audio.notes == ("The track is 6.0 minutes long; its first 5 minutes were analysed.",)


def test_a_tiny_file_declaring_hours_decodes_only_what_it_holds(tmp_path):
    import tracemalloc

    path = tmp_path / "bomb.wav"
    write_wav(path, 48_000, 2, 48_000, declared_frames=48_000 * 3600 * 5)  # 1 s of data, a 5-hour header
    tracemalloc.start()
    audio = read_audio(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert audio.analysed_seconds == pytest.approx(1.0) and len(audio.samples) == SAMPLE_RATE
    assert audio.seconds == pytest.approx(1.0) and audio.notes == (), "the header's 5 hours are not believed"
    assert peak < 50_000_000, f"{peak:,} bytes for one second of sound"


def test_the_shipped_example_clips_are_what_the_generator_writes(tmp_path):
    """apps/mert/examples/ holds only sound this project synthesised (python -m apps.mert.examples)."""
    from apps.mert.examples import CLIPS, FOLDER, write_all

    written = write_all(tmp_path)
    assert sorted(p.name for p in FOLDER.iterdir()) == sorted(f"{name}.flac" for name in CLIPS)
    for path in written:
        ours, rate = soundfile.read(path)
        shipped, shipped_rate = soundfile.read(FOLDER / path.name)
        assert rate == shipped_rate == SAMPLE_RATE and np.array_equal(ours, shipped), path.name
