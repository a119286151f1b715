"""PraX throughput and latency on Ray Serve with 1 and 2 replicas (and in process, for reference), same run.

Run: python benchmarks/ray_replicas.py [--clients 8] [--requests 48] [--weights tiny-pragmatic]

A local Ray instance (this process's `ray.init`, as `demohub serve --ray` starts one), PraX's bundled weights, the
page's call (`apps.prax.actions.synthesize`: 100 samples, top 5, progress streamed back) through the same
DemoContext the hub's pages use. `--clients` threads send `--requests` calls in all (each spec different, so nothing
is cached), against: the in-process pool (one pipeline, one call at a time, as `demohub serve` with its default
--demo-concurrency 1); Ray Serve with 1 replica; with 2 replicas. Each replica reserves one CPU (num_cpus: 1, so one
torch thread) and accepts `--max-ongoing` calls (run one after another); the in-process pipeline uses one thread too.
Printed: calls/s, median and p95 latency, throughput ratio against 1 replica.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def specs(n: int) -> list[list[dict]]:
    letters = "abcdefgh"
    return [[{"string": letters[i % 8] + letters[(i // 8) % 8] * (i % 3 + 1), "label": "+"},
             {"string": "z" * (i % 4 + 1), "label": "-"}] for i in range(n)]


def measure(ctx, weights: str, clients: int, requests: int) -> dict:
    from apps.prax import actions

    work = specs(requests)
    actions.synthesize(ctx, work[0], weights)  # warm: loaded (or deployed) before the clock starts

    def one(spec):
        start = time.perf_counter()
        actions.synthesize(ctx, spec, weights, callback=lambda step, total: None)
        return time.perf_counter() - start

    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as executor:
        latencies = sorted(executor.map(one, work))
    wall = time.perf_counter() - start
    return {"throughput": requests / wall, "median": statistics.median(latencies),
            "p95": latencies[max(0, int(round(0.95 * len(latencies))) - 1)]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=48)
    parser.add_argument("--weights", default="tiny-pragmatic")
    parser.add_argument("--max-ongoing", type=int, default=2, help="max_ongoing_requests per replica (default 2, "
                        "as serve.yaml; 1 leaves a replica idle while Serve's router finds it free)")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import ray
    import torch

    from apps import DEMOS, get_demo
    from apps.settings import ServeSettings
    from shared.pool import ModelPool
    from shared.ray_pool import RayPool, ServeConfig

    torch.set_num_threads(1)
    load = os.getloadavg()[0]
    demo = get_demo("prax")
    rows = [("in process (1 pipeline)", measure(ServeSettings().context(demo, ModelPool()), args.weights,
                                                args.clients, args.requests))]
    ray.init(include_dashboard=False, log_to_driver=False, object_store_memory=200 * 1024**2)
    for replicas in (1, 2):
        config = ServeConfig.parse({"demos": {"prax": {"num_replicas": replicas,
                                                       "max_ongoing_requests": args.max_ongoing,
                                                       "ray_actor_options": {"num_cpus": 1}}}}, DEMOS)
        pool = RayPool(DEMOS, config)
        pool.deploy([(demo.id, args.weights)])
        rows.append((f"Ray Serve, {replicas} replica{'s' * (replicas > 1)}",
                     measure(ServeSettings().context(demo, pool), args.weights, args.clients, args.requests)))
        from ray import serve

        serve.delete(pool.app_name((demo.id, args.weights)))
    ray.shutdown()

    base = rows[1][1]["throughput"]
    print(f"PraX `{args.weights}`, {args.requests} calls from {args.clients} clients, {os.cpu_count()} CPUs, "
          f"load average at start: {load:.1f}\n")
    print("| serving | calls/s | median s | p95 s | throughput vs 1 replica |")
    print("|---|---|---|---|---|")
    for name, row in rows:
        print(f"| {name} | {row['throughput']:.2f} | {row['median']:.2f} | {row['p95']:.2f} | "
              f"{row['throughput'] / base:.2f}x |")


if __name__ == "__main__":
    main()
