"""Request budgets: the largest request each endpoint allows, and the hostile requests of issue #23, against a public
hub (`demohub serve --host 0.0.0.0`, started here as a command): seconds, growth of the hub's peak memory, the
bounded workers' peak, and the slowest answer another visitor got meanwhile.

Run: python benchmarks/request_budgets.py [--baseline-source DIR] [--timeout 90]
``--baseline-source`` also serves the hub from another checkout of this project (e.g. `git worktree add /tmp/base
7f338dd`, the commit before the budgets) with the same Python environment, one hub after the other, so both are
measured on the same machine in one sitting and printed side by side. Tiny checkpoints in the official layouts
(tests/fixtures) stand in for the official weights: the work a request makes (sampling, decoding, embedding,
parsing) is what is measured, not the model's size.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import requests  # noqa: E402

from benchmarks.common import free_port, print_table, proc_status, restart_peak  # noqa: E402
from tests.security import raw  # noqa: E402

LAYOUT_22 = json.dumps({"camera": "front", "bbox": [["car", 0.02 * i, 0.1, 0.02 * i + 0.1, 0.5] for i in range(22)]})
LONG_EXAMPLES = [{"string": f"{i:02d}" + "ab" * 49, "label": "+-"[i % 2]} for i in range(30)]


def build_checkpoints(root: Path) -> None:
    from tests.fixtures.tiny_geodiffusion import build_tiny_checkpoint
    from tests.fixtures.tiny_molm3d import build_tiny_snapshot
    from tests.fixtures.tiny_tag2text import write_tiny_checkpoint

    write_tiny_checkpoint(root / "tag2text" / "tag2text-swin-14m")
    build_tiny_snapshot(root / "molm3d" / "generalist")
    build_tiny_checkpoint(root / "geodiffusion" / "nuimages-256x256", dataset="nuimages")


def start(source: Path, work: Path, checkpoints: Path, *args: str) -> tuple[subprocess.Popen, str]:
    """``demohub serve --host 0.0.0.0 ARGS`` from ``source`` (a checkout), offline over ``checkpoints``; returns once
    it answers (a hub behind --auth answers 401)."""
    port = free_port()
    work.mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(source), "DEMOHUB_CHECKPOINTS": str(checkpoints), "HF_HUB_OFFLINE": "1",
           "HF_HUB_CACHE": str(work / "hf"), "GRADIO_TEMP_DIR": str(work / "gradio"), "OMP_NUM_THREADS": "1",
           "DEMOHUB_STATE_DIR": str(work / "state"), "GRADIO_ANALYTICS_ENABLED": "False"}
    (work / "cwd").mkdir()
    process = subprocess.Popen([sys.executable, "-m", "apps.cli", "serve", "--host", "0.0.0.0", "--port", str(port),
                                *args], cwd=work / "cwd", env=env, stdout=open(work / "hub.log", "w"),
                               stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(240):
        try:
            if requests.get(url + "/config", timeout=2).status_code in (200, 401):
                return process, url
        except requests.ConnectionError:
            time.sleep(0.5)
    raise SystemExit(f"the hub did not start: {(work / 'hub.log').read_text()[-2000:]}")


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found += [int(c) for c in text]
    return found


def worker_peak(pid: int) -> int:
    """A worker's peak resident memory, 0 once it has exited (a zombie's status holds no memory figures)."""
    try:
        return proc_status("VmHWM", pid)
    except (OSError, KeyError):
        return 0


def reset_peak(pid: int) -> None:
    for p in [pid, *children(pid)]:
        with contextlib.suppress(OSError):
            restart_peak(p)


def jpeg(width: int, height: int) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (120, 160, 200)).save(buffer, "JPEG", quality=50)
    return buffer.getvalue()


def in_session(url: str, config: dict, examples: list[dict], samples: int) -> raw.Answer:
    """The PraX page as a visitor drives it: add each example, then the guesses event with ``samples``."""
    add, update = raw.fn_index(config, "add"), raw.fn_index(config, "update")
    events = [(add, [None, example["string"], None]) for example in examples]
    return raw.in_one_session(url, [*events, (update, [None, "tiny-literal", "tiny-pragmatic", samples, None])],
                              timeout=600)[-1]


def at_once(n: int, action) -> raw.Answer:
    """``n`` copies of ``action`` together; the first one's answer."""
    with concurrent.futures.ThreadPoolExecutor(n) as pool:
        return list(pool.map(lambda _: action(), range(n)))[0]


def cases(url: str, config: dict, work: Path) -> list[tuple[str, object]]:
    big = work / "big.jpg"
    big.write_bytes(jpeg(7000, 7000))  # 49 MP: under the 50 MP limit for one image
    batch = []
    for i in range(64):  # 64 images of 3.8 MP: 243 MP, under the 250 MP limit for a request
        path = work / f"b{i}.jpg"
        path.write_bytes(jpeg(2000, 1900))
        batch.append(path)
    largest_prax = LONG_EXAMPLES[:24]  # 100 samples over 24 examples of 100 characters: just within the work budget
    octanes = ".".join(["CCCCCCCC"] * 32)
    return [
        ("largest: catalog (200-character query)", lambda: raw.call(url, "catalog", ["diffusion " * 20, False])),
        ("largest: synthesize (24 x 100 chars, k 50)", lambda: raw.call(url, "synthesize",
                                                                         [largest_prax, "tiny-literal", 50])),
        ("largest: suggest (24 x 100 chars)", lambda: raw.call(url, "suggest", [largest_prax])),
        ("largest: tag_image (49 MP JPEG)", lambda: raw.call(url, "tag_image", [raw.upload(url, big)[0], 0.68, ""])),
        ("largest: tag_batch (64 images, 243 MP)", lambda: raw.call(url, "tag_batch",
                                                                     [raw.upload(url, *batch), 0.68, ""])),
        ("largest: generate (22 boxes, 200 steps)", lambda: raw.call(
            url, "generate", [LAYOUT_22, "nuimages-256x256", 0, 200, 5.0, "default"])),
        ("largest: encode_layout (22 boxes)", lambda: raw.call(url, "encode_layout", [LAYOUT_22, "nuimages-256x256"])),
        ("largest: molecule_properties (32 octanes)", lambda: raw.call(url, "molecule_properties", [octanes, 42])),
        ("largest: ask (32 octanes, caption)", lambda: raw.call(url, "ask", [octanes, "caption"])),
        ("hostile: 100 KB SMILES of 11,111 benzenes", lambda: raw.call(
            url, "molecule_properties", [".".join(["c1ccccc1"] * 11111), 42])),
        ("hostile: 4 x 72 KB SMILES at once", lambda: at_once(4, lambda: raw.call(
            url, "molecule_properties", [".".join(["c1ccccc1"] * 8000), 42]))),
        ("hostile: C + 14,000 x .[H][H] (98 KB)", lambda: raw.call(
            url, "molecule_properties", ["C" + ".[H][H]" * 14000, 42])),
        ("hostile: 200 MB JSON body", lambda: raw.declared_body(url, "/gradio_api/queue/join", 200_000_000)),
        ("hostile: catalog query of 300 KB", lambda: raw.call(url, "catalog", ["word " * 60_000, False])),
        ("hostile: PraX page, 30 x 100 chars, 500 samples", lambda: in_session(url, config, LONG_EXAMPLES, 500)),
        ("hostile: synthesize 30 x 100 chars (100 samples)", lambda: raw.call(
            url, "synthesize", [LONG_EXAMPLES, "tiny-literal", 5])),
    ]


class Honest(threading.Thread):
    def __init__(self, url: str):
        super().__init__(daemon=True)
        self.url, self.times, self.stop = url, [], threading.Event()

    def run(self):
        while not self.stop.is_set():
            started = time.monotonic()
            try:
                raw.call(self.url, "catalog", ["diffusion", False], timeout=300)
            except requests.RequestException:
                pass
            self.times.append(time.monotonic() - started)
            self.stop.wait(0.25)


def measure(url: str, pid: int, action, timeout: float) -> list[object]:
    reset_peak(pid)
    before = proc_status("VmRSS", pid)
    honest = Honest(url)
    honest.start()
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        future = pool.submit(action)
        try:
            answer = future.result(timeout=timeout)
            seconds = f"{time.monotonic() - started:.1f}"
        except concurrent.futures.TimeoutError:
            answer, seconds = None, f"> {timeout:.0f}"
        except Exception as error:  # noqa: BLE001 - a benchmark reports what happened
            answer, seconds = raw.Answer(False, 0, f"{type(error).__name__}: {error}"), "-"
        honest.stop.set()
        grew = (proc_status("VmHWM", pid) - before) / 1e6
        workers = max((worker_peak(c) for c in children(pid)), default=0) / 1e6
        worst = max(honest.times, default=0.0)
        if answer is None:
            pool.shutdown(wait=False, cancel_futures=True)
    what = "no answer" if answer is None else "answered" if answer.ok else (
        f"refused {answer.status}: {answer.message[:70]}")
    return [seconds, f"{grew:.0f}", f"{workers:.0f}", f"{worst:.1f}", what.replace("|", "/")]


def run_hub(source: Path, work: Path, checkpoints: Path, timeout: float) -> list[list[object]]:
    """Every case against a hub served from ``source``: one row each (seconds, growth, worker peak, honest, answer)."""
    process, url = start(source.resolve(), work, checkpoints)
    try:
        config = requests.get(url + "/config", timeout=30).json()
        raw.call(url, "synthesize", [LONG_EXAMPLES[:2], "tiny-literal", 3])  # first loads, not measured below
        raw.call(url, "molecule_properties", ["CCO", 42])
        return [[name, *measure(url, process.pid, action, timeout)] for name, action in cases(url, config, work)]
    finally:
        process.kill()
        process.wait(30)


def commit(source: Path) -> str:
    return subprocess.run(["git", "-C", str(source), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-source", type=Path, help="another checkout to measure first, side by side")
    parser.add_argument("--timeout", type=float, default=90, help="seconds before a request counts as unanswered")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="request-budgets-") as tmp:
        work = Path(tmp)
        build_checkpoints(work / "checkpoints")
        ours = run_hub(ROOT, work / "ours", work / "checkpoints", args.timeout)
        if args.baseline_source is None:
            print(f"hub: this checkout at {commit(ROOT)}")
            print_table(["request", "seconds", "hub peak growth (MB)", "worker peak (MB)",
                         "slowest honest search (s)", "answer"], ours)
            return
        base = run_hub(args.baseline_source, work / "base", work / "checkpoints", args.timeout)
    print(f"baseline: {args.baseline_source} at {commit(args.baseline_source)}; ours: {commit(ROOT)}")
    print_table(["request", "baseline: s", "baseline: hub peak growth (MB)", "baseline: slowest honest search (s)",
                 "ours: s", "ours: hub peak growth (MB)", "ours: worker peak (MB)", "ours: slowest honest search (s)",
                 "ours: answer"],
                [[o[0], b[1], b[2], b[4], o[1], o[2], o[3], o[4], o[5]] for b, o in zip(base, ours, strict=True)])


if __name__ == "__main__":
    main()
