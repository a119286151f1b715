"""Load + encode time: our LocationTokenizer vs CLIPTokenizer.from_pretrained with the added <lN> tokens.

Writes a tokenizer folder in the released format with the real 256x256 grid (65,536 added tokens) to a temp dir,
then times each side in fresh processes (median of --repeats): load, then encode --prompts layout prompts padded to
77. Imports are timed apart (ours needs no transformers). Ids must be identical. Prints a markdown table row.

    python benchmarks/geodiffusion_tokenizer.py [--grid 256] [--repeats 3] [--prompts 100]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHILD = r"""
import json, sys, time
c0, t0 = time.process_time(), time.perf_counter()
kind, folder, grid, prompts_file = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
prompts = json.load(open(prompts_file))
if kind == "ours":
    sys.path.insert(0, sys.argv[5])
    from apps.geodiffusion.tokens import LocationTokenizer
    c1, t1 = time.process_time(), time.perf_counter()
    tok = LocationTokenizer.from_pretrained(folder + "/tokenizer", grid * grid)
    c2, t2 = time.process_time(), time.perf_counter()
    ids = [tok.encode(p) for p in prompts]
else:
    from transformers import CLIPTokenizer
    c1, t1 = time.process_time(), time.perf_counter()
    tok = CLIPTokenizer.from_pretrained(folder + "/tokenizer")
    c2, t2 = time.process_time(), time.perf_counter()
    ids = tok(prompts, padding="max_length", max_length=77, truncation=True).input_ids
c3, t3 = time.process_time(), time.perf_counter()
print(json.dumps({"import": t1 - t0, "load": t2 - t1, "encode": t3 - t2, "load_cpu": c2 - c1, "encode_cpu": c3 - c2,
                  "ids": ids}))
"""


def random_prompts(n: int, grid: int, seed: int = 0) -> list[str]:
    from apps.geodiffusion.layout import CAMERAS, NUIMAGES_CLASSES, GenerationConfig, encode_prompt

    rng = random.Random(seed)
    config = GenerationConfig("nuimages", "A driving scene image of {camera} camera with {bbox}", (grid, grid), 5.0,
                              100, 22, 256, 256)
    prompts = []
    for _ in range(n):
        boxes = []
        for _ in range(rng.randint(0, 22)):
            x1, y1 = rng.random() * 0.9, rng.random() * 0.9
            boxes.append([rng.choice(NUIMAGES_CLASSES), x1, y1, x1 + 0.01 + rng.random() * (0.99 - x1),
                          y1 + 0.01 + rng.random() * (0.99 - y1)])
        prompts.append(encode_prompt({"camera": rng.choice(CAMERAS), "bbox": boxes}, config))
    return prompts


def run(kind: str, folder: Path, grid: int, prompts_file: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, kind, str(folder), str(grid), str(prompts_file), str(ROOT)],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    from tests.fixtures.tiny_geodiffusion import write_tokenizer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grid", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--prompts", type=int, default=100)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_tokenizer(folder / "tokenizer", (args.grid, args.grid))
        prompts_file = folder / "prompts.json"
        prompts_file.write_text(json.dumps(random_prompts(args.prompts, args.grid)))
        results = {kind: [run(kind, folder, args.grid, prompts_file) for _ in range(args.repeats)]
                   for kind in ("official", "ours")}
    identical = all(r["ids"] == results["official"][0]["ids"] for runs in results.values() for r in runs)
    med = {kind: {k: statistics.median(r[k] for r in runs)
                  for k in ("import", "load", "encode", "load_cpu", "encode_cpu")}
           for kind, runs in results.items()}
    both = {k: med[k]["load"] + med[k]["encode"] for k in med}
    cpu = {k: med[k]["load_cpu"] + med[k]["encode_cpu"] for k in med}
    print(f"| grid | added tokens | load: official / ours (s) | load speed-up | load+encode {args.prompts} prompts: "
          "official / ours (s) | speed-up | same, CPU time (s) | CPU speed-up | imports: official / ours (s) "
          "| ids identical |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print(f"| {args.grid}x{args.grid} | {args.grid ** 2:,} | {med['official']['load']:.3f} / {med['ours']['load']:.3f} "
          f"| {med['official']['load'] / med['ours']['load']:.0f}x | {both['official']:.3f} / {both['ours']:.3f} "
          f"| {both['official'] / both['ours']:.0f}x | {cpu['official']:.3f} / {cpu['ours']:.3f} "
          f"| {cpu['official'] / cpu['ours']:.0f}x | {med['official']['import']:.2f} / {med['ours']['import']:.2f} "
          f"| {'yes' if identical else 'NO'} |")
    if not identical:
        sys.exit(1)


if __name__ == "__main__":
    main()
