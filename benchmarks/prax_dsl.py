"""Benchmark PraX's regex guard: a catastrophically backtracking program against the match timeout.

Run: ``python benchmarks/prax_dsl.py`` (``--length``, ``--timeouts``, ``--repeats``).
``(a|a)+b`` on ``"a" * n + "!"`` tries 2**n ways to split the a's before it fails. The baseline, measured in the same
run, is the unguarded match (``regex`` with no timeout) at n = 16, 18, 20, whose growth per character extrapolates
what the unguarded match would cost at ``--length``; the guarded ``apps.prax.dsl.matches`` at ``--length`` must return
False within its timeout (goal: timeout + 100 ms). A plain linear program on the same string shows the cost of a normal
match. Prints a markdown table: | case | string | timeout | median time | vs unguarded | result | goal |.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from apps.prax import dsl  # noqa: E402
from benchmarks.common import median_time  # noqa: E402

BACKTRACKING = "(a|a)+b"
LINEAR = "[a-z]+!"
BASELINE_LENGTHS = (16, 18, 20)
SLACK_S = 0.1


def human_time(seconds: float) -> str:
    for unit, size in (("days", 86_400), ("h", 3_600)):
        if seconds >= size:
            return f"{seconds / size:,.1f} {unit}"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    return f"{seconds * 1000:.2f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.1f} µs"


def cell(text: str) -> str:
    return text.replace("|", "\\|")  # the program's own "|" must not split the markdown cell


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--length", type=int, default=40, help="a's before the '!' in the guarded case")
    parser.add_argument("--timeouts", type=float, nargs="+", default=[0.05, dsl.MATCH_TIMEOUT_S],
                        help="timeouts (s) for the guarded case; the page and pipeline use dsl.MATCH_TIMEOUT_S")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)

    pattern = dsl.try_compile(BACKTRACKING)
    text = "a" * args.length + "!"
    failures = []

    baseline = {}
    for n in BASELINE_LENGTHS:  # unguarded: no timeout, so keep n small
        short = "a" * n + "!"
        if pattern.fullmatch(short) is not None:
            failures.append(f"unguarded {BACKTRACKING} matched {short!r}")
        baseline[n] = median_time(lambda s=short: pattern.fullmatch(s), args.repeats)
    first, last = BASELINE_LENGTHS[0], BASELINE_LENGTHS[-1]
    growth = (baseline[last] / baseline[first]) ** (1 / (last - first))
    unguarded = baseline[last] * growth ** (args.length - last)

    rows = [(f"unguarded `{BACKTRACKING}` (baseline)", f"a×{n}!", "none", human_time(t), "1×", "no match", "")
            for n, t in baseline.items()]
    rows.append((f"unguarded `{BACKTRACKING}`, extrapolated ({growth:.2f}× per character)", f"a×{args.length}!",
                 "none", f"≈ {human_time(unguarded)}", "1×", "(not run)", ""))
    for timeout in args.timeouts:
        result = dsl.matches(BACKTRACKING, text, timeout=timeout)
        if result is not False:
            failures.append(f"guarded {BACKTRACKING} returned {result!r} at timeout {timeout}")
        seconds = median_time(lambda t=timeout: dsl.matches(BACKTRACKING, text, timeout=t), args.repeats)
        verdict = "met" if seconds <= timeout + SLACK_S else "missed"
        rows.append((f"`dsl.matches(\"{BACKTRACKING}\", ...)`", f"a×{args.length}!", f"{timeout * 1000:,.0f} ms",
                     human_time(seconds), f"{unguarded / seconds:,.0f}× faster", "no match (timed out)",
                     f"≤ timeout + {SLACK_S * 1000:.0f} ms: {verdict}"))
    if dsl.matches(LINEAR, text) is not True:
        failures.append(f"{LINEAR} did not match {text!r}")
    seconds = median_time(lambda: dsl.matches(LINEAR, text), max(args.repeats, 100))
    rows.append((f"`dsl.matches(\"{LINEAR}\", ...)` (a normal program)", f"a×{args.length}!",
                 f"{dsl.MATCH_TIMEOUT_S * 1000:,.0f} ms", human_time(seconds), "", "match", ""))
    if failures:
        print("\n".join(failures), file=sys.stderr)
        return 1

    print(f"unguarded seconds by length: {', '.join(f'{n}: {t:.4f}' for n, t in baseline.items())}")
    print("| case | string | timeout | median time | vs unguarded | result | goal |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(map(cell, row)) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
