"""3D-MoLM on a CPU at full size: the project's own answer path (conformer -> Uni-Mol -> Q-Former queries -> the
prompt -> the pipeline's decoding) on a Llama-2-7B-shaped language model with random weights, per task kind and
decoding (issue #28, item 1).

Run: python benchmarks/molm3d_llm_cpu.py [--threads 2] [--dtype bf16]      (about 13.5 GB of RAM in bf16, minutes)
     python benchmarks/molm3d_llm_cpu.py --smoke                            (tiny sizes: what the tests run)

What it measures, for a description, a property (LogP) and a free question, with the official decoding (5 beams) and
the fast one (greedy), in one process on the same weights: seconds until the first token is chosen (the conformer,
the encoder and the prompt's prefill), until the first words are on the page (the first partial text, ``on_text``,
after ``STREAM_EVERY`` tokens), per new token after the first, and for the whole answer; and the process's peak memory.
Random weights never choose the end of the answer, so every answer runs to its task's token limit: the whole-answer
times are the longest an answer takes. The language model has Llama-2-7B's 32 layers of width 4,096 (11,008 in the
MLP) in ``--dtype``; its vocabulary is the test tokenizer's (a few hundred pieces: the real 32,001 would add 131 M
parameters to the LM head, 2% of the weights each step reads). Uni-Mol, the Q-Former and the projection are at their
released sizes in fp32, as the pipeline keeps them.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import print_table  # noqa: E402

MOLECULE = "CC(=O)Oc1ccccc1C(=O)O"  # aspirin
REQUESTS = {"description": dict(task="caption"), "property (LogP)": dict(task="logp"),
            "free question": dict(task="description", question="Is this molecule soluble in water?")}
DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}


def build_pipeline(smoke: bool, dtype: torch.dtype, folder: Path):
    from transformers import LlamaConfig, LlamaForCausalLM

    from apps.molm3d.pipeline import MoLM3DPipeline
    from apps.molm3d.qformer import MolQFormer, QFormerConfig
    from apps.molm3d.tokenizer import MoLMTokenizer
    from apps.molm3d.unimol import UniMolConfig
    from tests.fixtures.tiny_molm3d import train_tokenizer

    train_tokenizer(folder / "tokenizer.model")
    tokenizer = MoLMTokenizer(folder / "tokenizer.model")
    if smoke:
        unimol = UniMolConfig(num_layers=2, embed_dim=32, ffn_dim=64, num_heads=4, num_kernels=8)
        qformer = QFormerConfig(hidden_size=32, num_layers=2, intermediate_size=64, encoder_width=32,
                                llm_hidden_size=64)
        llama = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4)
    else:  # the released sizes: Uni-Mol 15 x 512, Q-Former 12 x 768, Llama-2-7B
        unimol, qformer = UniMolConfig(), QFormerConfig()
        llama = dict(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32, num_attention_heads=32)
    torch.manual_seed(0)
    encoder = MolQFormer(unimol, qformer).eval()
    config = LlamaConfig(vocab_size=len(tokenizer), num_key_value_heads=llama["num_attention_heads"],
                         max_position_embeddings=4096, **llama)
    default = torch.get_default_dtype()
    torch.set_default_dtype(dtype)  # built in its dtype: a 7B model in fp32 first would need 27 GB
    try:
        llm = LlamaForCausalLM(config).eval()
    finally:
        torch.set_default_dtype(default)
    return MoLM3DPipeline(encoder, llm, tokenizer, "cpu", dtype)


def measure(pipe, request: dict, decoding: str) -> dict[str, float]:
    """One answer: when its first token was chosen, when its first words showed, its length and its time."""
    marks: dict[str, float] = {}
    start = time.perf_counter()

    def progress(step: int, total: int) -> None:
        if step == 2:  # step 1 is the conformer; the first token's step comes after the prefill
            marks.setdefault("first token", time.perf_counter() - start)
        marks["tokens"] = step - 1

    def partial(text: str) -> None:
        marks.setdefault("first words", time.perf_counter() - start)

    pipe(MOLECULE, decoding=decoding, callback=progress, on_text=partial, **request)
    whole = time.perf_counter() - start
    tokens = int(marks.get("tokens", 0))
    per_token = (whole - marks["first token"]) / max(1, tokens - 1)
    return {"first token": marks["first token"], "first words": marks.get("first words", whole),
            "per token": per_token, "tokens": tokens, "whole": whole}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (the tests' run)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    load = [os.getloadavg()[0]]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        pipe = build_pipeline(args.smoke, DTYPES[args.dtype], Path(folder))
        built = time.perf_counter() - started
        weights = sum(p.numel() * p.element_size() for p in pipe.llm.parameters())
        pipe(MOLECULE, task="logp", decoding="fast", max_new_tokens=2, min_new_tokens=2)  # warm-up
        rows = []
        for kind, request in REQUESTS.items():
            for decoding in ("official", "fast"):
                m = measure(pipe, request, decoding)
                rows.append([kind, decoding, f"{m['first token']:.1f} s", f"{m['first words']:.1f} s",
                             f"{m['per token']:.2f} s", m["tokens"], f"{m['whole']:.1f} s"])
                load.append(os.getloadavg()[0])
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"Note: 3D-MoLM answer path on CPU, {'smoke-test sizes' if args.smoke else 'Llama-2-7B shape'}, "
          f"language model {args.dtype} ({weights / 1e9:.2f} GB of weights), torch {torch.__version__}, "
          f"{args.threads} thread(s); model built in {built:.0f} s; {time.perf_counter() - started:.0f} s in all; "
          f"peak memory of the process {peak / 2**30:.1f} GiB; load average {' -> '.join(f'{x:.2f}' for x in load)}.")
    print()
    print_table(["request", "decoding", "first token chosen", "first words on the page", "per new token",
                 "new tokens", "whole answer"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
