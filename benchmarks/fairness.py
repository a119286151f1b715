"""Fairness: PraX latency while another demo is busy, against PraX on an idle hub (same run).

Run: python benchmarks/fairness.py [--requests 20] [--steps 200]
One hub (apps.hub.launch, default settings: one queue group per demo, no device lock on the CPU) on loopback, bundled
PraX weights and a tiny GeoDiffusion checkpoint in the official layout. Idle: PraX `/synthesize` requests one after
another. Busy: the same while two other visitors keep GeoDiffusion `/generate` jobs of `--steps` denoising steps
running back to back. The goal (issue #12): busy p95 within 2x of idle p95. For comparison, the same busy run on a
hub whose model events all share one queue group (the design before #12), rebuilt here by overriding
`apps.ui.model_events`: PraX then waits behind GeoDiffusion's queue.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import free_port  # noqa: E402

SPEC = [{"string": "ab1", "label": "+"}, {"string": "cd2", "label": "+"}, {"string": "x", "label": "-"}]
LAYOUT = '{"camera": "front", "bbox": [["car", 0.1, 0.4, 0.3, 0.6], ["pedestrian", 0.5, 0.3, 0.6, 0.9]]}'


def prax_latencies(url: str, n: int) -> list[float]:
    from gradio_client import Client

    client = Client(url, verbose=False)
    times = []
    for _ in range(n):
        start = time.perf_counter()
        client.predict(SPEC, "tiny-literal", 3, api_name="/synthesize")
        times.append(time.perf_counter() - start)
    client.close()
    return times


def keep_busy(url: str, steps: int, stop: threading.Event, durations: list[float]) -> None:
    from gradio_client import Client

    client = Client(url, verbose=False)
    while not stop.is_set():
        start = time.perf_counter()
        client.predict(LAYOUT, "nuimages-256x256", 0, steps, 5.0, api_name="/generate")
        durations.append(time.perf_counter() - start)
    client.close()


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[18]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args(argv)

    from tests.fixtures.tiny_geodiffusion import build_tiny_checkpoint

    work = Path(tempfile.mkdtemp(prefix="demohub-fairness-"))
    build_tiny_checkpoint(work / "ckpts" / "geodiffusion" / "nuimages-256x256", dataset="nuimages")
    os.environ.update(HF_HUB_OFFLINE="1", HF_HUB_CACHE=str(work / "hub"), DEMOHUB_CHECKPOINTS=str(work / "ckpts"),
                      DEMOHUB_STATE_DIR=str(work / "state"), GRADIO_ANALYTICS_ENABLED="False")
    rows = [measure(args, shared_group=False), measure(args, shared_group=True)]
    idle = rows[0][0]
    print(f"| PraX `/synthesize` ({args.requests} requests) | p50 | p95 | p95 vs idle |")
    print("|---|---|---|---|")
    print(f"| idle hub | {statistics.median(idle):.2f} s | {p95(idle):.2f} s | 1.00× |")
    for (_, busy, durations), design in zip(rows, ("a queue group per demo (now)",
                                                   "one shared queue group (before #12)"), strict=True):
        print(f"| {design}, while 2 visitors keep GeoDiffusion busy ({args.steps} steps, {len(durations)} jobs, median "
              f"{statistics.median(durations):.1f} s each) | {statistics.median(busy):.2f} s | {p95(busy):.2f} s | "
              f"{p95(busy) / p95(idle):.2f}× |")


def measure(args, shared_group: bool) -> tuple[list[float], list[float], list[float]]:
    """(idle PraX latencies, busy PraX latencies, GeoDiffusion job durations) on a freshly launched hub."""
    import importlib

    from apps import DEMOS, hub, ui
    from apps.settings import ServeSettings

    pages = [importlib.import_module(demo.page) for demo in DEMOS]  # each holds its own name for model_events
    if shared_group:
        for page in pages:
            page.model_events = lambda ctx: {"concurrency_id": "gpu", "concurrency_limit": ctx.concurrency}
    try:
        blocks, (_, url, _) = hub.launch(ServeSettings(port=free_port()), prevent_thread_lock=True)
    finally:
        for page in pages:
            page.model_events = ui.model_events
    prax_latencies(url, 3)  # load the listener
    idle = prax_latencies(url, args.requests)
    stop, durations = threading.Event(), []
    workers = [threading.Thread(target=keep_busy, args=(url, args.steps, stop, durations)) for _ in range(2)]
    for worker in workers:
        worker.start()
    time.sleep(2)  # the GeoDiffusion jobs are running and queued
    busy = prax_latencies(url, args.requests)
    stop.set()
    for worker in workers:
        worker.join()
    blocks.close()
    return idle, busy, durations


if __name__ == "__main__":
    main()
