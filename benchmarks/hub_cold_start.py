"""Hub cold start: `demohub serve` until the first HTTP 200, as a ratio to `python -c "import gradio"`.

Run: python benchmarks/hub_cold_start.py [--repeats 3]
Both are measured in the same run, on the same machine, offline (HF_HUB_OFFLINE=1); medians of the repeats.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import free_port  # noqa: E402


def time_import_gradio(env: dict) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import gradio"], env=env, check=True)
    return time.perf_counter() - start


def time_serve(env: dict, timeout: float = 120.0) -> float:
    port = free_port()
    demohub = shutil.which("demohub") or "demohub"
    start = time.perf_counter()
    proc = subprocess.Popen([demohub, "serve", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while time.perf_counter() - start < timeout:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1) as response:
                    if response.status == 200:
                        return time.perf_counter() - start
            except OSError:
                time.sleep(0.05)
        raise TimeoutError("the hub did not answer within the timeout")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False"}
    time_import_gradio(env)  # warm the file cache for both
    baseline = statistics.median(time_import_gradio(env) for _ in range(args.repeats))
    serve = statistics.median(time_serve(env) for _ in range(args.repeats))
    print("| benchmark | baseline | ours | ratio | goal |")
    print("|---|---|---|---|---|")
    print(f"| hub cold start: `demohub serve` → first HTTP 200 vs `python -c \"import gradio\"` "
          f"| {baseline:.2f} s | {serve:.2f} s | {serve / baseline:.2f}× | ≤ 1.5× |")


if __name__ == "__main__":
    main()
