"""PraX on the example sets people wrote (tests/fixtures/prax_people): each bundled listener before this issue (its
samples ranked as upstream) and now (ranked with the search's regexes), and the search alone; the same as
`demohub eval prax --weights W [--listener-only]` row by row, in one run.

Run: python benchmarks/prax_people.py [--samples 100] [--limit N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import print_table  # noqa: E402


def no_guess(result: dict) -> str:
    return f"{result['no_guess_rate']:.1%} ({result['no_guess']})"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=100, help="listener samples per set (the page's 100)")
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args(argv)
    from apps.prax import DEMO
    from apps.prax.evaluate import PEOPLE_SPECS, load_specs, score
    from shared.context import load_pipeline

    specs = load_specs(PEOPLE_SPECS, args.limit)
    rows = []
    for name in ("tiny-literal", "tiny-pragmatic"):
        pipe = load_pipeline(DEMO, DEMO.weight_set(name))
        before = score(pipe, specs, num_samples=args.samples, listener_only=True)
        after = score(pipe, specs, num_samples=args.samples)
        for label, result in ((f"`{name}`, its samples alone (before)", before),
                              (f"`{name}` with the search (now)", after)):
            rows.append([label, result["top1"], result["top10"], no_guess(result), f"{result['seconds_per_set']:.2f} s",
                         f"{result['top1'] / before['top1']:.2f}×"])
    alone = score(None, specs)
    rows.append(["the search alone (no listener)", alone["top1"], alone["top10"], no_guess(alone),
                 f"{alone['seconds_per_set']:.2f} s", ""])
    print(f"Note: {len(specs)} example sets, {args.samples} listener samples each (the page's setting), seed 0.")
    print_table(["ranking", "top-1", "top-10", "no guess", "seconds per set", "top-1 vs its listener alone"], rows)


if __name__ == "__main__":
    main()
