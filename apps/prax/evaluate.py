"""Score a listener on a spec file: ``demohub eval prax [--weights SET] [--specs FILE.json] [--samples N] [--limit M]
[--listener-only]``.

The file is a JSON list of ``{"program": ..., "examples": [{"string": ..., "label": "+"|"-"}]}``; by default the
evaluation set people wrote (tests/fixtures/prax_people/specs.json, its README says how). A spec counts as top-1
(top-10) when the first (any of the first ten) ranked candidates is equivalent to the program as an automaton
(``apps.prax.equivalence``); no-guess when there is no candidate. ``--weights search`` scores the search alone (no
listener); ``--listener-only`` a listener's samples alone, ranked as upstream (no search). The last output line is
one JSON object ``{"n", "top1", "top10", "no_guess", "no_guess_rate", "seconds_per_set", ...}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from shared.errors import DemoHubError, UserInputError


def load_specs(path: str | Path, limit: int | None = None) -> list[dict]:
    try:
        rows = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise UserInputError(f"The spec file {path} does not exist.") from None
    except json.JSONDecodeError as error:
        raise UserInputError(f"The spec file {path} is not valid JSON ({error}).") from None
    if not isinstance(rows, list) or not all(isinstance(r, dict) and "program" in r and "examples" in r for r in rows):
        raise UserInputError(f"The spec file {path} must be a JSON list of {{\"program\", \"examples\"}} objects.")
    return rows[:limit] if limit else rows


PEOPLE_SPECS = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "prax_people" / "specs.json"
SEARCH = "search"  # --weights search: the search alone


def score(pipeline, specs: list[dict], num_samples: int = 100, batch_size: int = 16, seed: int = 0,
          listener_only: bool = False) -> dict:
    """Top-1 / top-10 success (automata equivalence) of ``pipeline`` on ``specs`` (``pipeline`` None: the search
    alone; ``listener_only``: the listener's samples without the search)."""
    from apps.prax import dsl, ranking
    from apps.prax.equivalence import equivalent

    top1 = top10 = no_guess = 0
    start = time.time()
    for b in range(0, len(specs), batch_size):
        batch = specs[b:b + batch_size]
        examples = [dsl.validate_examples(s["examples"], allow_empty=True) for s in batch]
        if pipeline is None:
            results = [ranking.search_only(spec, 10) for spec in examples]
        else:
            results = pipeline.synthesize_batch(examples, k=10, num_samples=num_samples, seed=seed + b,
                                                validate=False, search=not listener_only)
        for spec, result in zip(batch, results, strict=True):
            hits = [equivalent(c.program, spec["program"]) for c in result.candidates[:10]]
            no_guess += not result.candidates
            top1 += bool(hits[:1] and hits[0])
            top10 += any(hits)
    n = len(specs)
    seconds = time.time() - start
    return {"n": n, "top1": round(top1 / n, 4) if n else 0.0, "top10": round(top10 / n, 4) if n else 0.0,
            "no_guess": no_guess, "no_guess_rate": round(no_guess / n, 4) if n else 0.0,
            "samples": 0 if pipeline is None else num_samples, "seconds": round(seconds, 1),
            "seconds_per_set": round(seconds / n, 3) if n else 0.0}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="demohub eval prax", description=__doc__.split("\n\n")[0])
    parser.add_argument("--weights", default="tiny-pragmatic",
                        help=f"weight set name (see `demohub list`), or {SEARCH!r} for the search alone")
    parser.add_argument("--specs", default=str(PEOPLE_SPECS),
                        help="JSON list of {program, examples} (default: the evaluation set people wrote)")
    parser.add_argument("--listener-only", action="store_true",
                        help="rank the listener's samples alone, as upstream (no search)")
    parser.add_argument("--samples", type=int, default=100, help="listener samples per spec (upstream: 500)")
    parser.add_argument("--limit", type=int, default=None, help="score only the first M specs")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        from apps.prax import DEMO
        from shared.context import load_pipeline

        specs = load_specs(args.specs, args.limit)
        pipeline = None if args.weights == SEARCH else load_pipeline(DEMO, DEMO.weight_set(args.weights))
        result = score(pipeline, specs, num_samples=args.samples, seed=args.seed, listener_only=args.listener_only)
    except DemoHubError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps({**result, "weights": args.weights, "specs": str(args.specs)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
