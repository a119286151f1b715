"""What one Llama-2-7B-shaped layer costs on this CPU with each weights option, by the number of rows it multiplies
(a prompt's tokens, or one per beam while decoding): bf16, and int8 and int4 as ``shared/quantize.py`` runs them (the
packed kernel up to ``PACKED_ROWS`` / ``INT4_PACKED_ROWS`` rows, the weight widened a tile at a time beyond), with
int4's kernel and its widening each forced, all timed alternately in one process. It is what those thresholds and
BENCHMARKS.md's reading of a new question's first token (#40, item 3) rest on.

Run: python benchmarks/quantize_layers.py [--rows 1 5 16 17 48 56 62 64 150 512] [--repeats 7] [--threads 2]
     python benchmarks/quantize_layers.py --smoke   (a small layer, seconds: what tests/benchmarks runs)

The layer is an MLP weight of Llama-2-7B (11,008 x 4,096) with seeded random weights; int4 is calibrated as 3D-MoLM
loads it (AWQ scales from seeded input statistics), so its input scaling is timed too. bf16's arithmetic rate
(GFLOP/s, two per multiply-add) says how close a shape comes to what this CPU's bf16 kernel can do: where bf16 already
runs near its best, a weight that must be unpacked first cannot be multiplied sooner than bf16's. The last columns
compare each widened product with the packed kernel's on the same weights (largest difference over the largest
output), which must stay at the level of bf16's rounding.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import interleaved_times, print_table  # noqa: E402
from shared import quantize  # noqa: E402


def relative_difference(a: torch.Tensor, b: torch.Tensor) -> float:
    """The largest difference between ``a`` and ``b`` over ``b``'s largest magnitude."""
    return ((a.float() - b.float()).abs().max() / b.float().abs().max()).item()


def layer_calls(linear: nn.Linear, int8: quantize.Int8Linear, int4: quantize.Int4Linear,
                x: torch.Tensor) -> dict[str, Callable[[], torch.Tensor]]:
    """The products timed for ``x``: each option as its layer runs it, and int4's kernel and widening forced."""
    scaled = x * int4.input_scale  # what Int4Linear.forward multiplies first
    return {
        "bf16": lambda: linear(x),
        "int8": lambda: int8(x),
        "int4": lambda: int4(x),
        "int4 kernel": lambda: torch._weight_int4pack_mm_for_cpu(scaled, int4.weight_int4, int4.group,
                                                                 int4.scales_and_zeros),
        "int4 widened": lambda: quantize._widened_int4_mm(scaled, int4.weight_int4, int4.scales_and_zeros, int4.group),
    }


@torch.inference_mode()
def measure(out_features: int, in_features: int, rows_list: list[int], repeats: int) -> list[dict]:
    generator = torch.Generator().manual_seed(0)
    linear = nn.Linear(in_features, out_features, bias=False).to(torch.bfloat16)
    nn.init.normal_(linear.weight, std=0.02, generator=generator)
    statistics_in = torch.rand(in_features, generator=generator) * 4 + 0.01  # each input channel's mean square
    int8 = quantize.Int8Linear(linear)
    int4 = quantize.Int4Linear(linear, quantize.INT4_GROUPS[0], statistics_in)
    scale8 = int8.scale.to(torch.bfloat16)
    results = []
    for rows in rows_list:
        x = torch.randn(rows, in_features, generator=generator).to(torch.bfloat16)
        calls = layer_calls(linear, int8, int4, x)
        times = interleaved_times(calls, repeats)
        bf16 = times["bf16"]
        row = {"rows": rows, "ms": {name: statistics.median(t) * 1e3 for name, t in times.items()},
               "vs bf16": {name: statistics.median(a / b for a, b in zip(t, bf16, strict=True))
                           for name, t in times.items()}}
        row["gflops"] = 2 * rows * in_features * out_features / statistics.median(bf16) / 1e9
        row["int8 widened vs packed"] = relative_difference(
            quantize._widened_mm(x, int8.weight_int8) * scale8, torch._weight_int8pack_mm(x, int8.weight_int8, scale8))
        row["int4 widened vs kernel"] = relative_difference(calls["int4 widened"](), calls["int4 kernel"]())
        results.append(row)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[1, 5, 16, 17, 48, 56, 62, 64, 150, 512])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--smoke", action="store_true", help="a 512 x 256 layer, rows 1, 17, 62, 3 repeats")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.smoke:
        shape, rows_list, repeats = (512, 256), [1, 17, 62], 3
    else:
        shape, rows_list, repeats = (11008, 4096), args.rows, args.repeats
    print(f"Note: a layer of {shape[0]} x {shape[1]} (outputs x inputs), {args.threads} threads, "
          f"torch {torch.__version__}, "
          f"int8 packed up to {quantize.PACKED_ROWS} rows, int4 up to {quantize.INT4_PACKED_ROWS}")
    results = measure(*shape, rows_list, repeats)
    names = ["bf16", "int8", "int4", "int4 kernel", "int4 widened"]
    print_table(["rows", "bf16 GFLOP/s"] + [f"{name} (ms, × bf16)" for name in names]
                + ["int8 widened vs packed", "int4 widened vs kernel"],
                [[r["rows"], f"{r['gflops']:.0f}"]
                 + [f"{r['ms'][name]:.2f} ({r['vs bf16'][name]:.2f}×)" for name in names]
                 + [f"{r['int8 widened vs packed']:.1e}", f"{r['int4 widened vs kernel']:.1e}"] for r in results])
    best = max(results, key=lambda r: r["gflops"])
    print(f"Note: bf16's best here: {best['gflops']:.0f} GFLOP/s at {best['rows']} rows; "
          + "its share of that by rows: "
          + ", ".join(f"{r['rows']} rows {r['gflops'] / best['gflops']:.0%}" for r in results) + ".")
    return 0


if __name__ == "__main__":
    sys.exit(main())
