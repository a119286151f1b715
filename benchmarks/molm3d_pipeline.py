"""3D-MoLM CPU timings: conformer building, the full-size Uni-Mol + Q-Former encoder, and the tiny pipeline.

- featurize: ETKDG + MMFF + Uni-Mol inputs for the page's four examples (median of --repeats).
- encoder: our full-size Uni-Mol (15x512) + Q-Former (12x768) + llm_proj, random weights, fp32, batch 1 and 4.
- tiny pipeline: one property question with the official decoding (5 beams, 16-64 new tokens) on the tiny snapshot.
- tiny pipeline answer_batch: the same question about the four examples in one batch.
- with --snapshot PATH (the real Sihangli/3D-MoLM folder): load time and one answer (slow on CPU; bf16 by default).

    python benchmarks/molm3d_pipeline.py [--repeats 5] [--threads 2] [--snapshot PATH]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from apps.molm3d.actions import EXAMPLES  # noqa: E402
from benchmarks.common import median_time  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--snapshot", type=Path, default=None)
    args = parser.parse_args()

    import torch

    from apps.molm3d.conformer import featurize
    from apps.molm3d.pipeline import MoLM3DPipeline
    from apps.molm3d.qformer import MolQFormer
    from apps.molm3d.unimol import collate
    from tests.fixtures.tiny_molm3d import build_tiny_snapshot

    torch.set_num_threads(args.threads)
    rows = []
    for smiles, _ in EXAMPLES:
        conf = featurize(smiles)
        rows.append((f"featurize {conf.num_heavy_atoms} heavy atoms", median_time(lambda s=smiles: featurize(s),
                                                                                 args.repeats)))
    encoder = MolQFormer().eval()
    confs = [featurize(s) for s, _ in EXAMPLES]
    with torch.no_grad():
        for batch in ([confs[-1]], confs):
            inputs = collate(batch)
            rows.append((f"encoder full size, batch {len(batch)}", median_time(lambda i=inputs: encoder(**i),
                                                                               args.repeats)))
    with tempfile.TemporaryDirectory() as folder:
        pipe = MoLM3DPipeline.from_pretrained(build_tiny_snapshot(folder), device="cpu", dtype=torch.float32)
        rows.append(("tiny pipeline, logp, 5 beams", median_time(lambda: pipe(EXAMPLES[0][0], task="logp"),
                                                                 args.repeats)))
        molecules = [s for s, _ in EXAMPLES]
        rows.append((f"tiny pipeline answer_batch, {len(molecules)} molecules, logp, 5 beams",
                     median_time(lambda: pipe.answer_batch(molecules, task="logp"), args.repeats)))
    if args.snapshot:
        start = time.perf_counter()
        real = MoLM3DPipeline.from_pretrained(args.snapshot, device="cpu", dtype=torch.bfloat16)
        rows.append(("official weights: load", time.perf_counter() - start))
        start = time.perf_counter()
        answer = real(EXAMPLES[2][0], task="logp")
        rows.append((f"official weights: logp ({answer.text!r})", time.perf_counter() - start))
    print(f"| step (torch threads={args.threads}) | seconds |\n|---|---|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.3f} |")


if __name__ == "__main__":
    main()
