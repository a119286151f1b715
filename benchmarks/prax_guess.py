"""How long a PraX guess takes on the page: warm (both bundled listeners loaded) and the first after start.

Warm: the page's guess (`apps.prax.actions.update`: both listeners, the page's 100 samples each) for every set of the
people's evaluation set (tests/fixtures/prax_people, 2-10 examples); baseline: the same listeners without the search
(their samples ranked as upstream), same sets, same run. First guess: a fresh `demohub serve` (this checkout); from the
moment it prints its address, Chromium opens /prax, types "2023-01-05", presses Enter, and the time until the first
regex shows (the search's) and until the listeners' guesses show; medians of fresh hubs.

Run: python benchmarks/prax_guess.py [--hubs 3] [--limit N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import fresh_hub, print_table  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
GOAL = 1.5  # seconds: issue #38's warm guess


def warm(limit: int | None) -> list[list[object]]:
    from apps.prax import DEMO, actions, dsl
    from apps.prax.evaluate import PEOPLE_SPECS, load_specs
    from apps.prax.pipeline import MAX_NEW_TOKENS
    from shared.context import DemoContext

    ctx = DemoContext(DEMO)
    specs = load_specs(PEOPLE_SPECS, limit)
    names = ("tiny-literal", "tiny-pragmatic")

    def listeners_only(examples):  # before issue #38: each listener's samples (up to upstream's 128 tokens), ranked
        checked = dsl.validate_examples(examples)  # as upstream
        for name in names:
            with ctx.compute(name) as pipe:
                ours, pipe.max_new_tokens = pipe.max_new_tokens, MAX_NEW_TOKENS
                try:
                    pipe.synthesize_batch([checked], k=actions.SHOWN, num_samples=actions.PAGE_SAMPLES,
                                          seed=actions.SEED, validate=False, search=False)
                finally:
                    pipe.max_new_tokens = ours

    def page(examples):  # the page's guess now: the search's first, then each listener's with the search's
        actions.search_panels(examples, *names)
        actions.update(ctx, examples, *names, actions.PAGE_SAMPLES, None)

    rows = []
    for label, guess in (("listeners only (before: up to 128 tokens, samples ranked as upstream)", listeners_only),
                         ("page now (search, then both listeners with it)", page)):
        guess(specs[0]["examples"])  # loads both listeners
        times = []
        for spec in specs:
            from apps.prax import search

            search._scored.cache_clear()  # each guess pays for its search
            start = time.perf_counter()
            guess(spec["examples"])
            times.append(time.perf_counter() - start)
        times.sort()
        rows.append([label, len(times), f"{statistics.median(times):.2f} s", f"{times[int(0.9 * len(times))]:.2f} s",
                     f"{times[-1]:.2f} s", sum(t > GOAL for t in times)])
    base = float(rows[0][2].split()[0])
    for row in rows:
        row.append(f"{float(row[2].split()[0]) / base:.2f}×")
    return rows


def first_guess() -> tuple[float, float, float]:
    """(start → address printed, address → the search's regex on the page, address → the listeners' guesses)."""
    from playwright.sync_api import expect, sync_playwright

    with fresh_hub(capture=True) as (proc, url, start):
        for line in proc.stdout:
            if url in line:
                break
        printed = time.perf_counter()
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox",
                                                                         "--disable-background-networking"])
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{url}/prax")
            box = page.get_by_label("Example string")
            box.fill("2023-01-05")
            box.press("Enter")
            panel = page.locator("h4", has_text="PraX listener").locator("xpath=..")
            expect(panel.locator("code").first).to_be_visible(timeout=120_000)  # a regex: the search's
            searched = time.perf_counter()
            expect(panel).to_contain_text("samples fit every example", timeout=120_000)
            listened = time.perf_counter()
            browser.close()
        return printed - start, searched - printed, listened - printed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hubs", type=int, default=3, help="fresh hubs for the first guess (0: none)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N example sets (warm)")
    args = parser.parse_args(argv)
    print_table(["guess (warm, both listeners, 100 samples each)", "sets", "median", "90th percentile", "slowest",
                 f"sets over {GOAL} s", "median vs before"], warm(args.limit))
    if not args.hubs:
        return
    print()
    runs = [first_guess() for _ in range(args.hubs)]
    print_table(["fresh hub", "start → address printed", "address → the search's regex shown",
                 "address → the listeners' guesses shown"],
                [[f"median of {len(runs)}", *(f"{statistics.median(r[i] for r in runs):.2f} s" for i in range(3))]])


if __name__ == "__main__":
    main()
