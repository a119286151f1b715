"""How a random Llama of Llama-2-7B's width carries weight noise: top-1 agreement and logit error of bf16, int8 and
int4 against fp32, on a 4-layer model with random weights (what the 3D-MoLM full-size benchmark's agreement column is
read against, BENCHMARKS.md).

Run: python benchmarks/quantize_floor.py [--layers 4] [--threads 2]      (about 3 GB of RAM, a few minutes)
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import print_table  # noqa: E402
from shared.quantize import quantize_linears  # noqa: E402


@torch.inference_mode()
def main(argv: list[str] | None = None) -> int:
    from transformers import LlamaConfig, LlamaForCausalLM

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=100)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    config = LlamaConfig(vocab_size=402, hidden_size=4096, intermediate_size=11008, num_hidden_layers=args.layers,
                         num_attention_heads=32, num_key_value_heads=32)
    fp32 = LlamaForCausalLM(config).eval()
    ids = torch.randint(0, config.vocab_size, (1, args.tokens))
    reference = fp32(ids).logits[0].float()
    bf16 = copy.deepcopy(fp32).to(torch.bfloat16)
    del fp32
    logits = {"bf16": bf16(ids).logits[0].float()}
    for mode in ("int8", "int4"):
        model = copy.deepcopy(bf16)
        quantize_linears(model, mode)
        logits[mode] = model(ids).logits[0].float()
    top2 = reference.topk(2, dim=-1).values
    gap = ((top2[:, 0] - top2[:, 1]) / reference.std(dim=-1)).median().item()
    spread = (reference - reference.mean(dim=-1, keepdim=True)).norm()
    print(f"Note: a {args.layers}-layer Llama of width 4,096 (11,008 in the MLP), random weights, {args.tokens} random "
          f"tokens; median gap between the top two logits: {gap:.2f} of the logits' spread (standard deviation).")
    print()
    print_table(["weights", "top-1 agreement with fp32", "top-1 agreement with bf16", "logits off fp32 (relative)"],
                [[name, f"{(values.argmax(-1) == reference.argmax(-1)).float().mean():.0%}",
                  f"{(values.argmax(-1) == logits['bf16'].argmax(-1)).float().mean():.0%}",
                  f"{((values - reference).norm() / spread).item():.1%}"] for name, values in logits.items()])
    return 0


if __name__ == "__main__":
    sys.exit(main())
