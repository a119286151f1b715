"""Benchmark PraX's incremental RSA example choice: 10,000 programs x 1,000 candidate examples, 10 examples.

Run: ``python benchmarks/prax_rsa.py`` (``--programs``, ``--examples``, ``--k``, ``--repeats``, ``--seed``).
Measures the vectorised ``apps.prax.rsa.choose_examples`` (best of ``--repeats``) and the plain Python-loop
version ``choose_examples_loop`` on the same matrix in the same run, checks they choose the same examples, and
prints a markdown row: | benchmark | shape | vectorised ms | loop ms | speed-up | goal |.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from apps.prax.rsa import choose_examples, choose_examples_loop  # noqa: E402

GOAL_MS = 100.0


def consistency_matrix(n_programs: int, n_examples: int, seed: int) -> tuple[np.ndarray, int]:
    """A random 0/1 matrix with per-example agreement rates between 0.05 and 0.95; the target is the last row,
    agreeing with 60% of the examples (a spec's examples are consistent with the target by construction)."""
    rng = np.random.default_rng(seed)
    rates = rng.uniform(0.05, 0.95, size=n_examples)
    M = (rng.random((n_programs, n_examples)) < rates).astype(np.float32)
    M[-1] = (rng.random(n_examples) < 0.6).astype(np.float32)
    return M, n_programs - 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", type=int, default=10_000)
    parser.add_argument("--examples", type=int, default=1_000)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    M, target = consistency_matrix(args.programs, args.examples, args.seed)
    choose_examples(M, target, args.k)  # warm-up
    times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        fast = choose_examples(M, target, args.k)
        times.append((time.perf_counter() - t0) * 1000)
    fast_ms = min(times)

    rows = M.astype(np.int8).tolist()
    t0 = time.perf_counter()
    slow = choose_examples_loop(rows, target, args.k)
    loop_ms = (time.perf_counter() - t0) * 1000
    if fast != slow:
        print(f"MISMATCH: vectorised chose {fast}, loop chose {slow}", file=sys.stderr)
        return 1

    shape = f"{args.programs:,} x {args.examples:,}, {args.k} steps"
    verdict = "met" if fast_ms < GOAL_MS else "missed"
    print(f"chosen examples: {fast}")
    print(f"vectorised runs (ms): {', '.join(f'{t:.1f}' for t in times)}")
    print("| benchmark | shape | vectorised (ms) | Python loop (ms) | speed-up | goal < 100 ms |")
    print("|---|---|---|---|---|---|")
    print(f"| prax incremental RSA (`benchmarks/prax_rsa.py`) | {shape} | {fast_ms:.1f} | {loop_ms:,.0f} "
          f"| {loop_ms / fast_ms:,.0f}x | {verdict} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
