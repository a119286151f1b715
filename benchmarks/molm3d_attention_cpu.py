"""3D-MoLM on a CPU: the language model's attention as transformers' eager code (what 3D-MoLM runs on a CPU,
``apps.molm3d.llm.CPU_ATTENTION``, as the official code's transformers 4.35 did) against PyTorch's
``scaled_dot_product_attention`` (transformers' default, what 3D-MoLM ran before), on the Llama-2-7B-shaped model of
benchmarks/molm3d_llm_cpu.py (random weights, written in the official layout).

Run: python benchmarks/molm3d_attention_cpu.py [--weights bf16,int8] [--tokens 64] [--rounds 2]   (14 GB of RAM,
                                                                                                   20 minutes)
     python benchmarks/molm3d_attention_cpu.py --smoke                                              (tiny sizes)

Each weights option loads in a process of its own through 3D-MoLM's loader; after a warm-up (the description's
prompt start stored, as on a hub in use), it answers the description ``--rounds`` times with each attention in turn
(sdpa, eager, sdpa, eager, ...), with the official decoding (5 beams) and the fast one (greedy), and reports the
median seconds per new token after the first, the first token's time, and whether the answers are the same text.
Random weights make the top candidates near-ties, so the two attentions' rounding may choose other tokens: the same
text is reported, not required.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import print_table  # noqa: E402
from benchmarks.molm3d_llm_cpu import DTYPES, OTHER_MOLECULE, WEIGHTS, load, measure  # noqa: E402

ATTENTIONS = ("sdpa", "eager")  # the baseline first


def run_option(args: argparse.Namespace) -> dict:
    """One weights option in this process: every attention and decoding, ``args.rounds`` times, interleaved."""
    torch.set_num_threads(args.threads)
    pipe = load(args.smoke, DTYPES["bf16"], Path(args.checkpoint), None if args.one == "bf16" else args.one)
    request = {"task": "caption", "max_new_tokens": args.tokens, "min_new_tokens": args.tokens}
    pipe(OTHER_MOLECULE, decoding="fast", **{**request, "max_new_tokens": 1, "min_new_tokens": 1})  # warm-up
    runs = []
    for _ in range(args.rounds):
        for attention in ATTENTIONS:
            pipe.llm.set_attn_implementation(attention)
            for decoding in ("official", "fast"):
                m = measure(pipe, request, decoding)
                runs.append({"attention": attention, "decoding": decoding, "per token": m["per token"],
                             "first token": m["first token"], "text": m["text"], "tokens": m["tokens"]})
    return {"weights": args.one, "runs": runs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--weights", default="bf16,int8", help=f"options among {', '.join(WEIGHTS)}")
    parser.add_argument("--tokens", type=int, default=64, help="new tokens per answer")
    parser.add_argument("--rounds", type=int, default=2, help="answers per attention and decoding")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (the tests' run)")
    parser.add_argument("--one", choices=WEIGHTS, help=argparse.SUPPRESS)  # a child process: this option alone
    parser.add_argument("--checkpoint", help=argparse.SUPPRESS)  # the folder the child loads
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(run_option(args)))
        return 0
    options = args.weights.split(",")
    if not set(options) <= set(WEIGHTS):
        parser.error(f"--weights: options among {', '.join(WEIGHTS)}")
    writer = Path(__file__).with_name("molm3d_llm_cpu.py")
    smoke = ["--smoke"] if args.smoke else []
    results = []
    with tempfile.TemporaryDirectory() as folder:
        checkpoint = Path(folder) / "llama-2-7b-hf"
        subprocess.run([sys.executable, str(writer), "--write", "--checkpoint", str(checkpoint), *smoke], check=True)
        for option in options:
            done = subprocess.run([sys.executable, __file__, "--one", option, "--checkpoint", str(checkpoint),
                                   "--threads", str(args.threads), "--tokens", str(args.tokens), "--rounds",
                                   str(args.rounds), *smoke], capture_output=True, text=True)
            if done.returncode:
                sys.stderr.write(done.stderr)
                return done.returncode
            results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(f"Note: {'smoke-test sizes' if args.smoke else 'Llama-2-7B shape'}, random weights, the description "
          f"({args.tokens} new tokens), {args.rounds} answers per attention and decoding interleaved, median shown; "
          f"torch {torch.__version__}, {args.threads} thread(s), each weights option in its own process.")
    print()
    rows = []
    for result in results:
        for decoding in ("official", "fast"):
            runs = {a: [r for r in result["runs"] if r["attention"] == a and r["decoding"] == decoding]
                    for a in ATTENTIONS}
            per_token = {a: statistics.median(r["per token"] for r in runs[a]) for a in ATTENTIONS}
            first = {a: statistics.median(r["first token"] for r in runs[a]) for a in ATTENTIONS}
            same = {r["text"] for r in runs["sdpa"]} == {r["text"] for r in runs["eager"]}
            rows.append([result["weights"], decoding, f"{per_token['sdpa']:.3f} s", f"{per_token['eager']:.3f} s",
                         f"{per_token['sdpa'] / per_token['eager']:.2f}×", f"{first['sdpa']:.2f} s",
                         f"{first['eager']:.2f} s", "yes" if same else "no"])
    print_table(["weights", "decoding", "per new token, sdpa (before)", "per new token, eager (now)",
                 "eager's speed-up", "first token, sdpa", "first token, eager", "same answer"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
