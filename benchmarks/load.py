"""Hub under load: throughput and p50/p95 latency at 1, 8 and 32 concurrent clients (PraX and Tag2Text endpoints).

Run: python benchmarks/load.py [--requests 48] [--concurrency 1 8 32]
One hub process (apps.hub.launch) on loopback, bundled PraX weights and a tiny Tag2Text checkpoint in the official
layout, each demo running 4 model calls at once (`--demo-concurrency 4`); each client sends its share of requests
one after another. The ratio column is throughput relative to one client, measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import free_port  # noqa: E402

SPEC = [{"string": "ab1", "label": "+"}, {"string": "cd2", "label": "+"}, {"string": "x", "label": "-"}]


def one_request(client, i: int, image) -> float:
    start = time.perf_counter()
    if i % 2:
        client.predict(image, 0.68, "", api_name="/tag_image")
    else:
        client.predict(SPEC, "tiny-literal", 3, api_name="/synthesize")
    return time.perf_counter() - start


def run_level(url: str, concurrency: int, requests: int, image_path: str) -> tuple[float, list[float]]:
    from gradio_client import Client, handle_file

    clients = [Client(url, verbose=False) for _ in range(concurrency)]
    image = handle_file(image_path)
    per_client = [list(range(c, requests, concurrency)) for c in range(concurrency)]
    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        latencies = [t for ts in pool.map(lambda c: [one_request(clients[c], i, image) for i in per_client[c]],
                                          range(concurrency)) for t in ts]
    wall = time.perf_counter() - start
    for client in clients:
        client.close()
    return requests / wall, latencies


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=48)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    args = parser.parse_args(argv)

    from PIL import Image

    from tests.fixtures.tiny_tag2text import write_tiny_checkpoint

    work = Path(tempfile.mkdtemp(prefix="demohub-load-"))
    write_tiny_checkpoint(work / "ckpts" / "tag2text" / "tag2text-swin-14m")
    image = work / "image.png"
    Image.radial_gradient("L").convert("RGB").resize((128, 128)).save(image)
    os.environ.update(HF_HUB_OFFLINE="1", HF_HUB_CACHE=str(work / "hub"),
                      DEMOHUB_CHECKPOINTS=str(work / "ckpts"), GRADIO_ANALYTICS_ENABLED="False")
    from apps import hub
    from apps.settings import ServeSettings

    blocks, (_, url, _) = hub.launch(ServeSettings(port=free_port(), demo_concurrency=4), prevent_thread_lock=True)
    run_level(url, 2, 4, str(image))  # warm up: load both models once
    rows, base = [], None
    for level in args.concurrency:
        throughput, latencies = run_level(url, level, max(args.requests, level), str(image))
        base = base or throughput
        q = statistics.quantiles(latencies, n=20)
        rows.append(f"| {level} | {throughput:.2f} req/s | {statistics.median(latencies):.2f} s | {q[18]:.2f} s | "
                    f"{throughput / base:.2f}× |")
    blocks.close()
    print("| concurrent clients | throughput | p50 latency | p95 latency | throughput vs 1 client |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
