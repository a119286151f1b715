"""PraX: our bundled pragmatic listener against the bundled literal one, on the two held-out spec sets.

Run: ``python benchmarks/prax_listeners.py`` (``--samples``, ``--seeds``, ``--limit``, ``--sets``).
Scores ``tiny-literal`` (the baseline) and ``tiny-pragmatic`` with ``apps.prax.evaluate.score`` (top-1 / top-10
by automata equivalence) on ``checkpoints/prax/heldout-random.json`` (random examples) and
``heldout-rsa.json`` (RSA-chosen examples), in the same run, once per sampling seed, and prints a markdown table:
mean over seeds (min-max in brackets: 100 specs make a few points of noise) and the pragmatic/literal top-1 ratio.
The paper's claim to check: pragmatic training wins on informative (RSA-chosen) examples.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from statistics import mean

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from apps.prax import DEMO  # noqa: E402
from apps.prax.evaluate import load_specs, score  # noqa: E402
from shared.context import load_pipeline  # noqa: E402

SPEC_FILES = {"random examples": "checkpoints/prax/heldout-random.json",
              "RSA-chosen examples": "checkpoints/prax/heldout-rsa.json"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=50, help="listener samples per spec (upstream: 500)")
    parser.add_argument("--seeds", type=int, nargs="+", default=(0, 1, 2), help="listener sampling seeds")
    parser.add_argument("--limit", type=int, default=None, help="score only the first M specs of each file")
    parser.add_argument("--sets", nargs=2, default=("tiny-literal", "tiny-pragmatic"), metavar=("BASELINE", "OURS"))
    args = parser.parse_args(argv)
    listeners = {name: load_pipeline(DEMO, DEMO.weight_set(name)) for name in args.sets}
    baseline, ours = args.sets
    print(f"| spec set | n x seeds | `{baseline}` top-1 | top-10 | `{ours}` top-1 | top-10 | top-1 ratio |")
    print("|---|---|---|---|---|---|---|")
    for label, path in SPEC_FILES.items():
        specs = load_specs(ROOT / path, args.limit)
        runs = {name: [score(listeners[name], specs, num_samples=args.samples, seed=seed, listener_only=True)
                        for seed in args.seeds]
                for name in args.sets}
        cells = {name: {metric: summary([r[metric] for r in runs[name]]) for metric in ("top1", "top10")}
                 for name in args.sets}
        base_top1, ours_top1 = (mean(r["top1"] for r in runs[name]) for name in args.sets)
        ratio = f"{ours_top1 / base_top1:.2f}x" if base_top1 else "n/a"
        print(f"| {label} (`{Path(path).name}`) | {len(specs)} x {len(args.seeds)} "
              f"| {cells[baseline]['top1']} | {cells[baseline]['top10']} "
              f"| {cells[ours]['top1']} | {cells[ours]['top10']} | {ratio} |")
    return 0


def summary(values: list[float]) -> str:
    """``mean (min-max)`` of per-seed fractions."""
    return f"{mean(values):.3f} ({min(values):.2f}-{max(values):.2f})" if len(values) > 1 else f"{values[0]:.2f}"


if __name__ == "__main__":
    raise SystemExit(main())
