"""PraX: our bundled pragmatic listener against the bundled literal one, on the two held-out spec sets.

Run: ``python benchmarks/prax_listeners.py`` (``--samples``, ``--limit``, ``--sets``).
Scores ``tiny-literal`` (the baseline) and ``tiny-pragmatic`` with ``apps.prax.evaluate.score`` (top-1 / top-10
by automata equivalence) on ``checkpoints/prax/heldout-random.json`` (random examples) and
``heldout-rsa.json`` (RSA-chosen examples), in the same run, and prints a markdown table with the pragmatic/literal
top-1 ratio. The paper's claim to check: pragmatic training wins on informative (RSA-chosen) examples.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from apps.prax import DEMO  # noqa: E402
from apps.prax.evaluate import load_specs, score  # noqa: E402
from apps.prax.pipeline import PraxPipeline  # noqa: E402
from shared import weights  # noqa: E402

SPEC_FILES = {"random examples": "checkpoints/prax/heldout-random.json",
              "RSA-chosen examples": "checkpoints/prax/heldout-rsa.json"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=50, help="listener samples per spec (upstream: 500)")
    parser.add_argument("--limit", type=int, default=None, help="score only the first M specs of each file")
    parser.add_argument("--sets", nargs=2, default=("tiny-literal", "tiny-pragmatic"), metavar=("BASELINE", "OURS"))
    args = parser.parse_args(argv)
    listeners = {name: PraxPipeline.from_pretrained(weights.resolve(DEMO.id, DEMO.weight_set(name)), device="cpu")
                 for name in args.sets}
    baseline, ours = args.sets
    print(f"| spec set | n | `{baseline}` top-1 | top-10 | `{ours}` top-1 | top-10 | top-1 ratio |")
    print("|---|---|---|---|---|---|---|")
    for label, path in SPEC_FILES.items():
        specs = load_specs(ROOT / path, args.limit)
        base, new = (score(listeners[name], specs, num_samples=args.samples) for name in args.sets)
        ratio = f"{new['top1'] / base['top1']:.2f}x" if base["top1"] else "n/a"
        print(f"| {label} (`{Path(path).name}`) | {base['n']} | {base['top1']:.2f} | {base['top10']:.2f} "
              f"| {new['top1']:.2f} | {new['top10']:.2f} | {ratio} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
