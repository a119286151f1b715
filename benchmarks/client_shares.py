"""A client's share (issue #35): an honest visitor's latency while one client attacks a public hub, before and after.

Each hub is `demohub serve --host 0.0.0.0` started here as a command, over tiny checkpoints in the official layouts
(tests/fixtures). The honest visitor (127.0.0.9) asks PraX's tiny listener for a regex, one call after another; the
attacker uses other addresses of this machine (127.0.0.2-8). Attacks, each in a loop bounded in count and time:
- **slow drips**: 1,008 connections from 8 addresses (126 each), each declaring a 100 KB body and sending one byte of
  it every 3 s, reopened as the hub closes them;
- **queue flood**: one address starts 66 slow GeoDiffusion jobs (200 denoising steps) through /call, one session each;
- **login guessing** (a hub with --auth): one address sends 200 wrong passwords as fast as it is answered, while the
  right user logs in from another address.

Run: python benchmarks/client_shares.py [--baseline-source DIR] [--calls 8]
``--baseline-source`` also serves the hub from another checkout (e.g. `git worktree add /tmp/base cedafd3`, the commit
before the shares) with the same Python environment, one hub after the other, printed side by side.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import requests  # noqa: E402

from benchmarks.common import print_table  # noqa: E402
from benchmarks.request_budgets import build_checkpoints, commit, start  # noqa: E402
from tests.security import raw  # noqa: E402
from tests.security.attacks import SlowDrips  # noqa: E402

HONEST = "127.0.0.9"
PRAX = [[{"string": "ab1", "label": "+"}, {"string": "cd2", "label": "+"}, {"string": "x", "label": "-"}],
        "tiny-literal", 3]
LAYOUT = '{"camera": "front", "bbox": [["car", 0.1, 0.4, 0.3, 0.6], ["pedestrian", 0.5, 0.3, 0.6, 0.9]]}'
SLOW_JOB = [LAYOUT, "nuimages-256x256", 0, 200, 5.0, "default"]


def honest(url: str, calls: int) -> str:
    """``calls`` PraX answers for the honest visitor, one after another: served / asked, median and worst seconds."""
    http, times, served = raw.from_address(HONEST), [], 0
    for _ in range(calls):
        start = time.monotonic()
        try:
            served += raw.call(url, "synthesize", PRAX, timeout=60, http=http).ok
        except requests.RequestException:
            pass
        times.append(time.monotonic() - start)
    return f"{served}/{calls} served, median {statistics.median(times):.2f} s, worst {max(times):.2f} s"


def drips(url: str, calls: int) -> str:
    with SlowDrips(url, [f"127.0.0.{i}" for i in (2, 3, 4, 5, 6, 7, 8, 10)], per_address=126, interval=3.0,
                   duration=120) as attack:
        try:
            attack.wait_until_open(900, timeout=60)
        except AssertionError:
            pass  # the hub closes them faster than they open: measure anyway
        time.sleep(12)  # past every deadline of the first drips: the hub churns them
        return honest(url, calls) + f" (drips open at most {attack.stats.most_open})"


def flood(url: str, calls: int) -> str:
    greedy = raw.from_address("127.0.0.2")
    raw.call(url, "generate", [LAYOUT, "nuimages-256x256", 0, 1, 5.0, "default"], http=greedy)  # loaded first
    codes = [greedy.post(f"{url}/gradio_api/call/generate", json={"data": SLOW_JOB}, timeout=30).status_code
             for _ in range(66)]
    taken = codes.count(200)
    return honest(url, calls) + f" (attacker: {taken} of 66 taken, others {sorted(set(codes) - {200})})"


def guessing(url: str) -> str:
    guesser, start, through = raw.from_address("127.0.0.2"), time.monotonic(), 0
    for i in range(200):
        reply = guesser.post(f"{url}/login", data={"username": "ada", "password": f"guess-{i}"}, timeout=30)
        through += reply.status_code == 400
    spent = time.monotonic() - start
    real_start = time.monotonic()
    ok = raw.from_address(HONEST).post(f"{url}/login", data={"username": "ada", "password": "lovelace-2024"},
                                       timeout=30).status_code == 200
    return (f"{through} of 200 wrong passwords checked in {spent:.1f} s; the right user from elsewhere "
            f"{'logged in' if ok else 'refused'} in {time.monotonic() - real_start:.2f} s")


def measure(source: Path, work: Path, checkpoints: Path, calls: int) -> list[str]:
    process, url = start(source, work / "hub", checkpoints)
    try:
        honest(url, 2)  # first loads, not measured
        rows = [honest(url, calls), drips(url, calls), flood(url, calls)]
    finally:
        process.kill()
        process.wait(30)
    logins = work / "logins.txt"
    logins.write_text("ada:lovelace-2024\n")
    process, url = start(source, work / "auth-hub", checkpoints, "--auth", str(logins))
    try:
        rows.append(guessing(url))
    finally:
        process.kill()
        process.wait(30)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-source", type=Path, help="another checkout to measure first, side by side")
    parser.add_argument("--calls", type=int, default=8, help="honest calls per attack")
    args = parser.parse_args(argv)
    names = ["idle hub", "1,008 slow drips from 8 addresses", "one address starts 66 slow jobs",
             "200 wrong passwords from one address"]
    with tempfile.TemporaryDirectory(prefix="client-shares-") as tmp:
        work = Path(tmp)
        build_checkpoints(work / "checkpoints")
        ours = measure(ROOT, work / "ours", work / "checkpoints", args.calls)
        if args.baseline_source is None:
            print(f"hub: this checkout at {commit(ROOT)}")
            print_table(["attack", "honest visitor (PraX, 127.0.0.9)"],
                        [[n, o] for n, o in zip(names, ours, strict=True)])
            return
        base = measure(args.baseline_source, work / "base", work / "checkpoints", args.calls)
    print(f"baseline: {args.baseline_source} at {commit(args.baseline_source)}; ours: {commit(ROOT)}")
    print_table(["attack", "baseline", "ours"], [[n, b, o] for n, b, o in zip(names, base, ours, strict=True)])


if __name__ == "__main__":
    main()
