"""MERT on CPU: the official inference path (the Space m-a-p/Music-Descriptor's app.py) and ours side by side, on the
same full-size random weights and the same samples (issue #27, item 7).

Run by hand (not in CI): the official side needs transformers 4.46.3 (its remote code does not load on today's), in an
environment of its own:

    python3 -m venv /tmp/mert-official && /tmp/mert-official/bin/pip install torch==2.13.0 transformers==4.46.3 numpy
    # the Space's files in one folder: its MERT-v1-95M/modeling_MERT.py and configuration_MERT.py,
    # Prediction_Head/MTGGenre_head.py and app.py (e.g. `git show HEAD:<path>` from a git mirror of the Space)
    python benchmarks/mert_official.py --official-python /tmp/mert-official/bin/python --official /tmp/mert-space

What it does: writes MERT-v1-95M at its released size (config.json as released, seeded random weights under the
official key names) and the ten heads at 768 wide in the Space's layout, and two tracks made by tiling the shipped
example clips: 30 s, and 3 minutes. Then, alternately in two processes (the official one started anew each round),
``--repeats`` rounds:

- the official path: the Space's ``model_infernce`` after decoding (``Wav2Vec2FeatureExtractor``, ``MERTModel`` with
  every hidden state, time averages, the ten ``MLPProberBase`` heads on their layers) on the 30 s clip in one pass,
  and on the 3-minute track's 36 windows of 5 s one after the other (the Space has no timeline: a call per window is
  how it would give one);
- ours: ``MERTPipeline.describe`` on the same samples: the 30 s clip; the 3-minute track with 5 s windows (the whole
  answer: the timeline and the track's description, made from the same windows), one window a pass (the CPU's
  setting) and 8 a pass (the GPU's): the batching speed-up on this machine.

fp32, ``--threads`` threads, each figure the median over the rounds. Before timing it compares both sides' ten heads'
logits on the 30 s clip and on the first window (max abs difference printed).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RATE, WINDOW, CLIP_SECONDS, TRACK_SECONDS = 24_000, 5.0, 30.0, 180.0


def official_side(work: Path, official: Path, threads: int) -> dict:
    """One round of the official path (runs in the official environment; imports nothing of this project but the
    recorder of its fidelity fixture, which needs only numpy and the official code)."""
    import torch

    torch.set_num_threads(threads)
    sys.path.insert(0, str(ROOT))
    from tests.fixtures.mert.record_official import space_inference

    infer, _, _ = space_inference(work, official)
    tracks = np.load(work / "tracks.npz")
    clip, track = tracks["clip"], tracks["track"]
    step = int(WINDOW * RATE)
    logits = {"clip": infer(clip)["logits"], "window": infer(track[:step])["logits"]}  # also the warm-up
    start = time.perf_counter()
    infer(clip)
    whole = time.perf_counter() - start
    start = time.perf_counter()
    for a in range(0, len(track), step):
        infer(track[a:a + step])
    return {"clip": whole, "windows": time.perf_counter() - start, "logits": logits}


def write_work(work: Path) -> None:
    """Full-size random MERT-v1-95M and heads in the Space's layout, and the two tracks."""
    from apps.mert.audio import read_audio
    from apps.mert.examples import FOLDER
    from tests.fixtures.mert.record_official import ENCODER
    from tests.fixtures.tiny_mert import TINY, official_config, write_encoder, write_heads

    released = official_config()
    write_encoder(work / ENCODER, seed=0, **{key: released[key] for key in TINY})
    write_heads(work, width=released["hidden_size"])
    music = np.concatenate([read_audio(path).samples for path in sorted(FOLDER.glob("*.flac"))])
    tiled = np.tile(music, int(np.ceil(TRACK_SECONDS * RATE / len(music))))
    np.savez(work / "tracks.npz", clip=tiled[:int(CLIP_SECONDS * RATE)], track=tiled[:int(TRACK_SECONDS * RATE)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--official", type=Path, required=True, help="folder with the Space's files (above)")
    parser.add_argument("--official-python", default=sys.executable, help="the official environment's python")
    parser.add_argument("--work", type=Path, default=Path("/tmp/mert-official-bench"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--side", choices=["official"], help=argparse.SUPPRESS)  # the official process
    args = parser.parse_args(argv)
    if args.side == "official":
        print(json.dumps(official_side(args.work, args.official, args.threads)))
        return 0

    sys.path.insert(0, str(ROOT))
    import torch

    from apps.mert import BEST_LAYER
    from apps.mert import pipeline as mert
    from apps.mert.audio import Audio
    from apps.mert.checks import MERTInputs
    from benchmarks.common import print_table

    torch.set_num_threads(args.threads)
    if not (args.work / "tracks.npz").is_file():
        write_work(args.work)
    pipe = mert.MERTPipeline.from_pretrained(args.work)
    tracks = np.load(args.work / "tracks.npz")
    tasks = tuple(BEST_LAYER)

    def inputs(x: np.ndarray, window: float | None) -> MERTInputs:
        return MERTInputs(Audio(x, len(x) / RATE, len(x) / RATE, RATE, 1), tasks, window)

    def ours_seconds(x: np.ndarray, window: float | None, batch: int) -> float:
        pipe.batch = batch
        start = time.perf_counter()
        pipe.describe(inputs(x, window))
        return time.perf_counter() - start

    def ours_logits(x: np.ndarray) -> dict:
        means = mert.layer_means(pipe.encoder, torch.from_numpy(x)[None])
        with torch.inference_mode():
            return {task: pipe.tasks[task].head(means)[0].tolist() for task in tasks}

    load = [os.getloadavg()[0]]
    started = time.perf_counter()
    rounds: dict[str, list[float]] = {k: [] for k in ("official clip", "official windows", "ours clip",
                                                      "ours track batched", "ours track one by one")}
    ours_seconds(tracks["clip"], None, 1)  # warm-up
    for round_ in range(args.repeats):
        result = subprocess.run([args.official_python, __file__, "--side", "official", "--official",
                                 str(args.official), "--work", str(args.work), "--threads", str(args.threads)],
                                capture_output=True, text=True, check=False)
        if result.returncode:
            raise SystemExit(f"the official side failed:\n{result.stderr[-3000:]}")
        official = json.loads(result.stdout.strip().splitlines()[-1])
        if round_ == 0:
            diffs = [max(abs(a - b) for a, b in zip(official["logits"][part][task], ours[task], strict=True))
                     for part, ours in (("clip", ours_logits(tracks["clip"])),
                                        ("window", ours_logits(tracks["track"][:int(WINDOW * RATE)])))
                     for task in tasks]
            print(f"Note: both sides' ten heads' logits on the 30 s clip and the first 5 s window differ by at most "
                  f"{max(diffs):.1e} (max abs).")
        rounds["official clip"].append(official["clip"])
        rounds["official windows"].append(official["windows"])
        rounds["ours clip"].append(ours_seconds(tracks["clip"], None, mert.CPU_BATCH))
        rounds["ours track one by one"].append(ours_seconds(tracks["track"], WINDOW, 1))
        rounds["ours track batched"].append(ours_seconds(tracks["track"], WINDOW, mert.GPU_BATCH))
        load.append(os.getloadavg()[0])
    pipe.batch = mert.CPU_BATCH
    m = {k: float(np.median(v)) for k, v in rounds.items()}
    windows = int(TRACK_SECONDS / WINDOW)
    print(f"Note: MERT-v1-95M full size (94.4M parameters), random weights, fp32, torch {torch.__version__}, "
          f"{args.threads} thread(s), {args.repeats} round(s) (median), {time.perf_counter() - started:.0f} s in all; "
          f"load average {' -> '.join(f'{x:.2f}' for x in load)}.")
    print()
    print_table(["request", "official path", "ours", "official / ours"], [
        ["30 s clip, ten tasks (one encoder pass)", f"{m['official clip']:.2f} s", f"{m['ours clip']:.2f} s",
         f"{m['official clip'] / m['ours clip']:.2f}×"],
        [f"3-minute track, timeline of {windows} windows of 5 s (official: a call per window, no description of the "
         "track; ours: the whole answer, the timeline and the track's description from the same windows)",
         f"{m['official windows']:.2f} s", f"{m['ours track one by one']:.2f} s",
         f"{m['official windows'] / m['ours track one by one']:.2f}×"],
    ])
    print()
    print_table(["ours, 3-minute track with 5 s windows", "one window a pass (CPU setting)",
                 f"{mert.GPU_BATCH} a pass (GPU setting)", "speed-up of batching on this CPU"],
                [["whole answer", f"{m['ours track one by one']:.2f} s", f"{m['ours track batched']:.2f} s",
                  f"{m['ours track one by one'] / m['ours track batched']:.2f}×"]])
    return 0


if __name__ == "__main__":
    sys.exit(main())
