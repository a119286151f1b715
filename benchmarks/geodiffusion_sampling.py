"""GeoDiffusion on the CPU: seconds per image with the official samplers and with fast sampling (DPM-Solver++).

Run: python benchmarks/geodiffusion_sampling.py [--sizes 256 512] [--probe-steps 4] [--rounds 2] [--whole]
     python benchmarks/geodiffusion_sampling.py --smoke       (tiny sizes: what the tests run)

The models are Stable Diffusion 1.5's full-size UNet, VAE and CLIP text encoder (with the 256x256 grid's 65,536
location tokens) with random weights (benchmarks/common.py), fp32, run through ``GeoDiffusionPipeline`` itself
(location-token prompt, classifier-free guidance, its ``sampler`` choice), one image per call, seed 0. Rows:

- the nuImages checkpoints' official sampler: PNDM, 100 steps (101 UNet evaluations: PNDM takes its first step twice);
- the COCO-Stuff checkpoints' official sampler: DPM-Solver++, 50 steps;
- fast sampling: DPM-Solver++, 20 steps (``sampler="fast"``).

A whole call at 100 steps takes over 10 minutes at 512x512 on 2 cores, so by default each sampler makes ``--rounds``
calls of ``--probe-steps`` steps, the samplers taking turns (after a 1-step warm-up call at the same size). Both run the
same UNet call on the same shapes, so their gaps between step callbacks are pooled: the fastest is the time per UNet
evaluation least disturbed by other processes on a shared machine (the median is shown beside it), and the fixed part
(prompt embeddings, latents, VAE decoder) is the least disturbed call's first gap less one evaluation plus its tail.
A row's seconds per image are fixed + UNet evaluations x time per evaluation, and its "how" column says so. Each
scheduler's own ``step`` (no UNet) is timed apart, to show it does not matter. One whole fast-sampling call at the
smallest size is timed beside its extrapolation as a check, with its own gaps (``--no-check`` skips it); ``--whole``
times complete calls instead. Speed does not depend on the weights' values.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import random_stable_diffusion  # noqa: E402

LAYOUT = {"camera": "front", "bbox": [["car", 0.76, 0.46, 0.9, 0.58], ["car", 0.48, 0.48, 0.69, 0.8],
                                      ["pedestrian", 0.12, 0.45, 0.18, 0.72], ["truck", 0.6, 0.3, 0.95, 0.65]]}


@dataclass(frozen=True)
class Case:
    name: str  # what the row is
    sampler: str  # GeoDiffusionPipeline's sampler argument
    steps: int
    evaluations: int  # UNet evaluations (each on the unconditional and conditional halves)


FAST = "DPM-Solver++ (fast sampling)"  # the row the others are compared with
CASES = (Case("PNDM (nuImages' official)", "default", 100, 101),
         Case("DPM-Solver++ (COCO-Stuff's official)", "fast", 50, 50),
         Case(FAST, "fast", 20, 20))
SMOKE_CASES = (Case("PNDM (nuImages' official)", "default", 4, 5),
               Case("DPM-Solver++ (COCO-Stuff's official)", "fast", 3, 3),
               Case(FAST, "fast", 2, 2))


@dataclass(frozen=True)
class Timing:
    per_evaluation: float  # seconds per UNet evaluation (batch 2: CFG's two halves) and scheduler step
    fixed: float  # seconds outside the denoising loop: text encoder, latents, VAE decoder, images
    median_gap: float  # the median gap between step callbacks, to show how much the machine's load disturbed them
    gaps: int

    def seconds(self, evaluations: int) -> float:
        return self.fixed + evaluations * self.per_evaluation


def pipelines(smoke: bool, sizes: list[int]):
    """{size: GeoDiffusionPipeline} sharing one random-weight Stable Diffusion, as a nuImages checkpoint (PNDM)."""
    from apps.geodiffusion.layout import KNOWN_CONFIGS
    from apps.geodiffusion.pipeline import GeoDiffusionPipeline
    from apps.geodiffusion.tokens import LocationTokenizer
    from tests.fixtures.tiny_geodiffusion import write_tokenizer

    grid = 4 if smoke else 256
    sd = random_stable_diffusion(tiny=smoke, vocab_size=49408 + grid * grid)  # built on the CPU in fp32
    with tempfile.TemporaryDirectory() as folder:
        tokenizer = LocationTokenizer.from_pretrained(write_tokenizer(Path(folder), (grid, grid)), grid * grid)
    config = replace(KNOWN_CONFIGS["nuimages-256x256"], num_bucket_per_side=(grid, grid))
    return {size: GeoDiffusionPipeline(sd, tokenizer, replace(config, width=size, height=size), torch.device("cpu"),
                                       torch.float32) for size in sizes}


def call_seconds(pipe, sampler: str, steps: int) -> tuple[float, list[float]]:
    """Seconds of one call and the times (from its start) at which each UNet evaluation ended."""
    marks: list[float] = []
    start = time.perf_counter()
    out = pipe(LAYOUT, seed=0, num_inference_steps=steps, sampler=sampler,
               callback=lambda step, total: marks.append(time.perf_counter() - start))
    total = time.perf_counter() - start
    assert len(out.images) == 1 and out.sampler == sampler
    return total, marks


def probe(pipe, samplers: list[str], steps: int, rounds: int) -> Timing:
    """Seconds per UNet evaluation and fixed seconds from ``rounds`` calls of ``steps`` steps per sampler.

    Both samplers make the same UNet call on the same shapes, so their step gaps are pooled; the fastest gap is the
    one least disturbed by other processes on a shared machine (the median is kept to show the disturbance). A call's
    fixed part is its first gap (prompt embeddings, latents, first step) less one evaluation, plus its tail (VAE
    decoder, images); the least disturbed call's is kept."""
    calls = [call_seconds(pipe, sampler, steps) for _ in range(rounds) for sampler in samplers]  # taking turns
    return timing_of(calls)


def timing_of(calls: list[tuple[float, list[float]]]) -> Timing:
    """The fastest and the median gap between step callbacks over ``calls``, and the least disturbed fixed part."""
    gaps = [b - a for _, marks in calls for a, b in zip(marks, marks[1:], strict=False)]
    per_evaluation = min(gaps)
    fixed = min(marks[0] - per_evaluation + total - marks[-1] for total, marks in calls)
    return Timing(per_evaluation, fixed, statistics.median(gaps), len(gaps))


def scheduler_step_seconds(pipe, sampler: str, steps: int) -> float:
    """Median seconds of the sampler's own ``scheduler.step`` (no UNet) on one image's latents, on a fresh copy."""
    scheduler = pipe.samplers[sampler].scheduler
    scheduler = type(scheduler).from_config(scheduler.config)
    scheduler.set_timesteps(steps)
    generator = torch.Generator().manual_seed(0)
    side = pipe.config.width // 8
    sample = torch.randn(1, 4, side, side, generator=generator)
    noise = torch.randn(1, 4, side, side, generator=generator)
    times = []
    for t in scheduler.timesteps:
        start = time.perf_counter()
        sample = scheduler.step(noise, t, sample).prev_sample
        times.append(time.perf_counter() - start)
    return statistics.median(times)


Row = tuple  # (case, seconds per image, how, Timing or None, the scheduler's own step seconds or None)
CHECK = "whole call timed (check of the extrapolation)"


def measure(pipe, cases, probe_steps: int, rounds: int, whole: bool, check: bool) -> list[Row]:
    """The rows of one image size: each case extrapolated from short calls (or timed whole with ``whole``), and with
    ``check`` a whole fast-sampling call timed beside its extrapolation."""
    call_seconds(pipe, "default", 1)  # warm-up: allocator, oneDNN kernels for this size
    if whole:
        return [(case, call_seconds(pipe, case.sampler, case.steps)[0], "whole call timed", None, None)
                for case in cases]
    timing = probe(pipe, list(dict.fromkeys(c.sampler for c in cases)), probe_steps, rounds)
    how = f"extrapolated from {rounds} × {probe_steps}-step calls per sampler"
    rows = [(case, timing.seconds(case.evaluations), how, timing,
             scheduler_step_seconds(pipe, case.sampler, case.steps)) for case in cases]
    if check:  # its own gaps show whether other processes slowed it down
        fast = cases[-1]
        total, marks = call_seconds(pipe, fast.sampler, fast.steps)
        rows.append((fast, total, CHECK, timing_of([(total, marks)]), None))
    return rows


def table(results: dict[int, list[Row]]) -> str:
    lines = ["| image | sampler | steps (UNet evaluations) | s per UNet evaluation (median) | fixed s | "
             "scheduler's own step | s per image | how | × fast sampling's time |",
             "|---|---|---|---|---|---|---|---|---|"]
    for size, rows in results.items():
        fast = next(seconds for case, seconds, how, *_ in rows if case.name == FAST and how != CHECK)
        for case, seconds, how, timing, own_step in rows:
            per = "–" if timing is None else f"{timing.per_evaluation:.3g} ({timing.median_gap:.3g})"
            fixed = "–" if timing is None else f"{timing.fixed:.3g}"
            own = "–" if own_step is None else f"{own_step * 1000:.2g} ms"
            lines.append(f"| {size}² | {case.name} | {case.steps} ({case.evaluations}) | {per} | {fixed} | {own} | "
                         f"{seconds:.3g} | {how} | {seconds / fast:.2f}× |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512], help="image sides (default 256 512)")
    parser.add_argument("--probe-steps", type=int, default=4, help="steps of each timed call (default 4)")
    parser.add_argument("--rounds", type=int, default=2, help="timed calls per sampler, taking turns (default 2)")
    parser.add_argument("--whole", action="store_true", help="time complete calls instead of extrapolating")
    parser.add_argument("--no-check", action="store_true",
                        help="skip timing one whole fast-sampling call at the smallest size beside its extrapolation")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--smoke", action="store_true", help="tiny models at 64x64 and few steps: the script runs")
    args = parser.parse_args(argv)
    if args.probe_steps < 3:
        parser.error("--probe-steps must be at least 3 (the first step's gap is not counted)")
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    sizes, cases = ([64], SMOKE_CASES) if args.smoke else (args.sizes, CASES)
    print(f"GeoDiffusion sampling on the CPU: {'tiny (smoke)' if args.smoke else 'full-size SD 1.5'} models, fp32, "
          f"{torch.get_num_threads()} threads, torch {torch.__version__}; load average "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())} at the start", flush=True)
    start = time.perf_counter()
    results = {}
    for size, pipe in pipelines(args.smoke, sizes).items():
        check = not args.no_check and size == min(sizes)
        results[size] = measure(pipe, cases, args.probe_steps, args.rounds, args.whole, check)
        for case, seconds, how, _, _ in results[size]:
            print(f"  {size}²: {case.name}, {case.steps} steps: {seconds:.3g} s per image ({how})", flush=True)
        if (timing := results[size][0][3]) is not None:
            print(f"  {size}²: UNet evaluation: fastest gap {timing.per_evaluation:.3g} s, median "
                  f"{timing.median_gap:.3g} s over {timing.gaps} gaps; fixed part {timing.fixed:.3g} s", flush=True)
    print(f"\nTotal {time.perf_counter() - start:.0f} s; load average "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())} at the end\n")
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
