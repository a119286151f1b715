"""The first call after start: `demohub serve`, then, right after its first HTTP 200, one PraX `/synthesize` call
through gradio_client with its default settings (a fresh Client, bundled tiny-literal listener); baseline: the same
call again on the same hub, with a fresh Client too (the hundredth call's cost).

Run: python benchmarks/first_call.py [--repeats 3] [--busy]
Rows: the hub as it starts by default (model code imported in the background once serving) and with --no-warm (the
first model call imports it). --busy keeps one spinning process per core running meanwhile. Each repeat is a fresh
hub; medians of the repeats.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import urllib.request
from contextlib import nullcontext
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import fresh_hub, print_table  # noqa: E402
from tests.commands import busy_cores  # noqa: E402

EXAMPLES = [{"string": "ab1", "label": "+"}, {"string": "cd2", "label": "+"}, {"string": "x", "label": "-"}]


def call(url: str) -> float:
    from gradio_client import Client

    start = time.perf_counter()
    answer = Client(url, verbose=False).predict(EXAMPLES, "tiny-literal", 3, api_name="/synthesize")
    assert answer["candidates"], answer
    return time.perf_counter() - start


def one_hub(flags: list[str]) -> tuple[float, float, float]:
    """(start → first 200, first 200 → first answer, a later call) for a fresh hub."""
    with fresh_hub(flags) as (_, url, start):
        while True:
            try:
                with urllib.request.urlopen(url + "/", timeout=1) as response:
                    if response.status == 200:
                        break
            except OSError:
                if time.perf_counter() - start > 180:
                    raise TimeoutError("the hub did not answer within 180 s") from None
                time.sleep(0.05)
        ready = time.perf_counter() - start
        first = call(url)
        later = statistics.median(call(url) for _ in range(3))
        return ready, first, later


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--busy", action="store_true", help="one spinning process per core while measuring")
    args = parser.parse_args(argv)
    rows = []
    with busy_cores() if args.busy else nullcontext():
        for label, flags in (("default (model code imported in the background once serving)", []),
                             ("--no-warm (the first model call imports it)", ["--no-warm"])):
            runs = [one_hub(flags) for _ in range(args.repeats)]
            ready, first, later = (statistics.median(r[i] for r in runs) for i in range(3))
            rows.append([label, f"{ready:.2f} s", f"{first:.2f} s", f"{ready + first:.2f} s", f"{later:.2f} s",
                         f"{first / later:.2f}×"])
    cores = f"{os.cpu_count()} cores busy with other work" if args.busy else "an otherwise idle machine"
    print(f"Note: on {cores}; medians of {args.repeats} fresh hubs each.\n")
    print_table(["hub", "start → first HTTP 200", "first 200 → first PraX answer", "start → first answer",
                 "a later call (baseline)", "first / later"], rows)


if __name__ == "__main__":
    main()
