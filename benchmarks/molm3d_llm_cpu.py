"""3D-MoLM on a CPU at full size: the project's own answer path (conformer -> Uni-Mol -> Q-Former queries -> the
prompt -> the pipeline's decoding) on a Llama-2-7B-shaped language model with random weights, per task kind, decoding
and weights option (issue #28, items 1, 2 and 5).

Run: python benchmarks/molm3d_llm_cpu.py [--threads 2] [--weights bf16,int8,int4]   (14 GB of RAM, 14 GB of disk,
                                                                                  40 minutes)
     python benchmarks/molm3d_llm_cpu.py --smoke                                   (tiny sizes: what the tests run)

First a process writes the language model's folder in the official layout (fp16 ``.bin`` shards split where the
released ones are, a config, an r=8 LoRA beside it) with random weights. Then each weights option runs in a process of
its own (so each peak memory is its own) and loads that folder through 3D-MoLM's loader (``load_llama``): bf16 as
released (``from_pretrained``, then the LoRA merged), and ``DEMOHUB_QUANTIZE``'s int8 and int4 (the shards streamed
tensor by tensor into an empty model, each Linear merged and quantised as it arrives). For a description, a property
(LogP) at its token limit and at a real answer's 16 tokens, and a new free question (16 tokens), with the official
decoding (5 beams) and the fast one (greedy), it measures: seconds until the first token is chosen (the conformer, the
encoder and the prompt's prefill: a warm-up asks each request once about another molecule, so its prompt's start is
stored, as on a hub in use, except for the new question, asked with only the preamble every prompt shares stored),
until the first words are on the page (the first partial text, ``on_text``, after ``STREAM_EVERY`` tokens), per new
token after the first, for the whole answer and the process's peak memory while it ran (VmHWM, started again before
each answer); the process's peak memory while loading and in all, its resident memory once the model is ready, and
the bytes the model pool counts. Agreement with bf16 and the official decoding: the answer's text (the same or not),
and the top-1 next-token agreement along bf16's official answer (teacher-forced: each option's most likely token at
each position of that answer, compared with bf16's).
Random weights seldom choose the end of an answer, so most answers run to their token limit (the table counts the
tokens written); they also make the top candidates near-ties, so answer-level agreement here is a pessimistic
measure. The language model has Llama-2-7B's
32 layers of width 4,096 (11,008 in the MLP); its vocabulary is the test tokenizer's (a few hundred pieces: the real
32,001 would add 131 M parameters to the LM head, 2% of the weights each step reads). Uni-Mol, the Q-Former and the
projection are at their released sizes in fp32, as the pipeline keeps them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import print_table, proc_status, restart_peak  # noqa: E402
from shared.registry import human_bytes  # noqa: E402

MOLECULE = "CC(=O)Oc1ccccc1C(=O)O"  # aspirin
REQUESTS = {"description": dict(task="caption"), "property (LogP)": dict(task="logp"),
            "property, 16 tokens": dict(task="logp", max_new_tokens=16),  # a real number's answer: the official
            # decoding writes at least 16 tokens, and a number ends soon after; random weights never end, so capped
            "new question, 16 tokens": dict(question="Which functional groups does this molecule have?",
                                            max_new_tokens=16)}
NEW = "new question, 16 tokens"  # asked with no stored start of its own: the first visitor to ask it (the preamble
# every prompt shares stays stored, as on a hub that has answered anything)
OTHER_MOLECULE = "CN1C=NC2=C1C(=O)N(C(=O)N2C)C"  # caffeine: the warm-up asks every other request about it once
DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}
WEIGHTS = ("bf16", "int8", "int4")  # the model's dtype (--dtype), then DEMOHUB_QUANTIZE's
CACHED_CHECK = "property, 16 tokens"  # what a quantised option loaded again from its cache answers (as the first did)


SHARD_BYTES = 10_000_000_000  # the official llama-2-7b-hf splits at about this size (9.98 GB + 3.5 GB in fp16)


def llama_config(smoke: bool, vocab_size: int):
    from transformers import LlamaConfig

    if smoke:
        sizes = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4)
    else:  # Llama-2-7B
        sizes = dict(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32, num_attention_heads=32)
    return LlamaConfig(vocab_size=vocab_size, num_key_value_heads=sizes["num_attention_heads"],
                       max_position_embeddings=4096, rms_norm_eps=1e-6, tie_word_embeddings=False, **sizes)


def write_checkpoint(smoke: bool, folder: Path) -> None:
    """The language model's folder in the official layout (``config.json``, fp16 ``pytorch_model-0000N-of-0000M.bin``
    shards with their index, ``tokenizer.model``: the test tokenizer) with random weights, N(0, 0.02) as Llama's
    initialisation draws them, and a LoRA (r=8 on the seven projections, as 3D-MoLM's) beside it, ``lora.pt``."""
    from accelerate import init_empty_weights
    from transformers import LlamaForCausalLM

    from apps.molm3d.llm import LORA_TARGETS
    from tests.fixtures.tiny_molm3d import LORA_R, train_tokenizer

    folder.mkdir(parents=True, exist_ok=True)
    train_tokenizer(folder / "tokenizer.model")
    import sentencepiece as spm

    config = llama_config(smoke, spm.SentencePieceProcessor(model_file=str(folder / "tokenizer.model"))
                          .get_piece_size())
    config.save_pretrained(folder)
    with init_empty_weights():
        shapes = {name: p.shape for name, p in LlamaForCausalLM(config).named_parameters()}
    generator = torch.Generator().manual_seed(0)
    shards: list[dict[str, torch.Tensor]] = [{}]
    size = 0
    for name, shape in shapes.items():
        if size + shape.numel() * 2 > SHARD_BYTES and shards[-1]:
            shards.append({})
            size = 0
        tensor = torch.ones(shape) if name.endswith("norm.weight") else torch.randn(shape, generator=generator) * 0.02
        shards[-1][name] = tensor.to(torch.float16)
        size += shape.numel() * 2
    weight_map, total = {}, 0
    for i, shard in enumerate(shards, 1):
        file = f"pytorch_model-{i:05d}-of-{len(shards):05d}.bin"
        torch.save(shard, folder / file)
        weight_map.update(dict.fromkeys(shard, file))
        total += sum(t.numel() * 2 for t in shard.values())
        shard.clear()
    (folder / "pytorch_model.bin.index.json").write_text(json.dumps({"metadata": {"total_size": total},
                                                                     "weight_map": weight_map}))
    lora = {}
    for name, shape in shapes.items():
        module = name.removesuffix(".weight")
        if module.rsplit(".", 1)[-1] in LORA_TARGETS:
            out_features, in_features = shape
            lora[f"{module}.lora_A.default.weight"] = (torch.randn(LORA_R, in_features, generator=generator)
                                                      * 0.02).to(torch.bfloat16)
            lora[f"{module}.lora_B.default.weight"] = (torch.randn(out_features, LORA_R, generator=generator)
                                                      * 0.02).to(torch.bfloat16)
    torch.save(lora, folder / "lora.pt")


def load(smoke: bool, dtype: torch.dtype, folder: Path, quantization: str | None):
    """The pipeline with the language model loaded by 3D-MoLM's loader (``apps.molm3d.pipeline.load_language_model``:
    LoRA merged, then, with ``quantization``, quantised shard by shard, int4 calibrated) and the encoder at its
    released size, random, in fp32."""
    from apps.molm3d.pipeline import MoLM3DPipeline, load_language_model
    from apps.molm3d.qformer import MolQFormer, QFormerConfig
    from apps.molm3d.tokenizer import MoLMTokenizer
    from apps.molm3d.unimol import UniMolConfig

    tokenizer = MoLMTokenizer(folder / "tokenizer.model")
    if smoke:
        unimol = UniMolConfig(num_layers=2, embed_dim=32, ffn_dim=64, num_heads=4, num_kernels=8)
        qformer = QFormerConfig(hidden_size=32, num_layers=2, intermediate_size=64, encoder_width=32,
                                llm_hidden_size=64)
    else:  # the released sizes: Uni-Mol 15 x 512, Q-Former 12 x 768
        unimol, qformer = UniMolConfig(), QFormerConfig()
    torch.manual_seed(0)
    encoder = MolQFormer(unimol, qformer).eval()
    lora = torch.load(folder / "lora.pt", weights_only=True)
    llm = load_language_model(folder, lora, tokenizer, encoder, "cpu", dtype, quantization)
    return MoLM3DPipeline(encoder, llm, tokenizer, "cpu", dtype, quantization)


def peak_bytes() -> int:
    """This process's peak resident memory since it started or since ``restart_peak`` (VmHWM)."""
    return proc_status("VmHWM")


def measure(pipe, request: dict, decoding: str) -> dict:
    """One answer: when its first token was chosen, when its first words showed, its length, time, text and the
    process's peak memory while it ran (the KV cache: five beams of a 7B Llama's hold about 0.5 MB a token each)."""
    marks: dict[str, float] = {}
    before = restart_peak()
    start = time.perf_counter()

    def progress(step: int, total: int) -> None:
        if step == 2:  # step 1 is the conformer; the first token's step comes after the prefill
            marks.setdefault("first token", time.perf_counter() - start)
        if step == marks.get("tokens", 0) + 2:  # one step a token; an answer that ends early jumps to (total, total)
            marks["tokens"] = step - 1

    def partial(text: str) -> None:
        marks.setdefault("first words", time.perf_counter() - start)

    out = pipe(MOLECULE, decoding=decoding, callback=progress, on_text=partial, **request)
    whole = time.perf_counter() - start
    tokens = int(marks.get("tokens", 0))
    per_token = (whole - marks["first token"]) / max(1, tokens - 1)
    return {"first token": marks["first token"], "first words": marks.get("first words", whole),
            "per token": per_token, "tokens": tokens, "whole": whole, "text": out.text, "peak": peak_bytes(),
            "peak before": before}


@torch.inference_mode()
def top1_along(pipe, request: dict, answer: str) -> list[int]:
    """The model's most likely next token at each position of ``answer`` (teacher-forced after the prompt)."""
    from apps.molm3d.pipeline import build_prompt, conf

    inputs = pipe.check_inputs(MOLECULE, **request)
    confs = [conf.featurize(inputs.molecules[0], seed=inputs.seed)]
    embeds, mask = pipe._inputs(confs, [build_prompt(inputs.instruction, confs[0].smiles)])
    ids = torch.tensor([pipe.tokenizer.encode(answer)[:64]])
    answer_embeds = pipe.llm.get_input_embeddings()(ids).to(embeds.dtype)
    logits = pipe.llm(inputs_embeds=torch.cat([embeds, answer_embeds], 1),
                      attention_mask=torch.cat([mask, torch.ones_like(ids)], 1)).logits[0]
    prompt = embeds.shape[1]
    return logits[prompt - 1:prompt - 1 + ids.shape[1]].argmax(-1).tolist()


def resident_bytes() -> int:
    """This process's resident memory now, after returning freed memory to the system."""
    from shared.pool import release_memory

    release_memory()
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def run_option(args: argparse.Namespace) -> dict:
    """One weights option in this process: load, measure; the reference answers come from bf16's run. With
    ``--cached`` (a quantised option loaded again, from the cache its first process wrote): load, then answer
    ``CACHED_CHECK`` only."""
    from shared.pool import estimate_bytes

    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    reference = json.loads(Path(args.reference).read_text()) if args.reference else {}
    pipe = load(args.smoke, DTYPES[args.dtype], Path(args.checkpoint), None if args.one == "bf16" else args.one)
    ready = time.perf_counter() - started
    load_peak = peak_bytes()
    resident = resident_bytes()
    pool_bytes = estimate_bytes(pipe.llm)
    if args.cached:
        rows = [{**measure(pipe, REQUESTS[CACHED_CHECK], decoding), "request": CACHED_CHECK, "decoding": decoding}
                for decoding in ("official", "fast")]
        return {"weights": args.one, "ready": ready, "load peak": load_peak, "resident": resident,
                "pool bytes": pool_bytes, "rows": rows,
                "peak": max(load_peak, peak_bytes(), *(r["peak"] for r in rows))}
    for kind, request in REQUESTS.items():  # warm-up: each instruction's prompt start stored, as on a hub in use
        if kind != NEW:
            pipe(OTHER_MOLECULE, decoding="fast", **{**request, "max_new_tokens": 1, "min_new_tokens": 1})
    rows, agree, total = [], 0, 0
    for kind, request in REQUESTS.items():
        for decoding in ("official", "fast"):
            if kind == NEW:
                pipe._prefixes.clear()  # the instructions' stored starts: this question comes first
            m = measure(pipe, request, decoding)
            m.update(request=kind, decoding=decoding, load=os.getloadavg()[0])
            rows.append(m)
        official = reference.get(kind, {}).get("official") or next(
            r["text"] for r in rows if r["request"] == kind and r["decoding"] == "official")
        choices = top1_along(pipe, request, official)
        if kind in reference:
            wanted = reference[kind]["top1"]
            agree, total = agree + sum(a == b for a, b in zip(choices, wanted, strict=True)), total + len(wanted)
        reference.setdefault(kind, {"official": official, "top1": choices})
    return {"weights": args.one, "ready": ready, "seconds": time.perf_counter() - started, "load peak": load_peak,
            "peak": max([load_peak, peak_bytes(), *(r[key] for r in rows for key in ("peak", "peak before"))]),
            "resident": resident,
            "pool bytes": pool_bytes, "rows": rows, "reference": reference,
            "top1": agree / total if total else None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16", help="the language model's dtype")
    parser.add_argument("--weights", default=",".join(WEIGHTS), help="options to compare, the first is the baseline")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (the tests' run)")
    parser.add_argument("--one", choices=WEIGHTS, help=argparse.SUPPRESS)  # a child process: this option alone
    parser.add_argument("--write", action="store_true", help=argparse.SUPPRESS)  # a child process: the checkpoint
    parser.add_argument("--checkpoint", help=argparse.SUPPRESS)  # the folder written by --write
    parser.add_argument("--reference", help=argparse.SUPPRESS)  # the baseline's answers (JSON)
    parser.add_argument("--cached", action="store_true", help=argparse.SUPPRESS)  # a child: the load from the cache
    args = parser.parse_args(argv)
    if args.write:
        write_checkpoint(args.smoke, Path(args.checkpoint))
        return 0
    if args.one:
        print(json.dumps(run_option(args)))
        return 0
    options = args.weights.split(",")
    if not set(options) <= set(WEIGHTS) or options[0] != "bf16":
        parser.error(f"--weights: options among {', '.join(WEIGHTS)}, the first bf16 (the baseline)")
    results, cached = [], []
    with tempfile.TemporaryDirectory() as folder:
        reference, checkpoint = Path(folder) / "reference.json", Path(folder) / "llama-2-7b-hf"
        os.environ["DEMOHUB_CONVERTED_CACHE"] = str(Path(folder) / "converted")  # the children's: none cached before
        smoke = ["--smoke"] if args.smoke else []
        started = time.perf_counter()
        subprocess.run([sys.executable, __file__, "--write", "--checkpoint", str(checkpoint), *smoke], check=True)
        written = time.perf_counter() - started
        for option in options:
            command = [sys.executable, __file__, "--one", option, "--threads", str(args.threads), "--dtype",
                       args.dtype, "--checkpoint", str(checkpoint), *smoke,
                       *(["--reference", str(reference)] if results else [])]
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode:
                sys.stderr.write(done.stderr)
                return done.returncode
            results.append(json.loads(done.stdout.strip().splitlines()[-1]))
            if len(results) == 1:
                reference.write_text(json.dumps(results[0]["reference"]))
            if option != "bf16":  # loaded again, in a new process, from the quantised model the first one cached
                done = subprocess.run([*command, "--cached"], capture_output=True, text=True)
                if done.returncode:
                    sys.stderr.write(done.stderr)
                    return done.returncode
                cached.append(json.loads(done.stdout.strip().splitlines()[-1]))
        cache_bytes = {path.name.split("-")[1]: path.stat().st_size
                       for path in (Path(folder) / "converted").glob("llama-*.safetensors")}
        shards = sorted(checkpoint.glob("*.bin"))
        sizes = " + ".join(human_bytes(path.stat().st_size) for path in shards)
    baseline = {(r["request"], r["decoding"]): r for r in results[0]["rows"]}
    loads = [f"{r['load']:.2f}" for result in results for r in result["rows"]]
    print(f"Note: 3D-MoLM answer path on CPU, {'smoke-test sizes' if args.smoke else 'Llama-2-7B shape'}, language "
          f"model loaded from {len(shards)} fp16 .bin shards ({sizes}, written in {written:.0f} s) into "
          f"{args.dtype}, torch {torch.__version__}, {args.threads} thread(s), each option in its own process; "
          f"load average over the answers {min(loads)}-{max(loads)}.")
    print()
    print_table(["weights", "model ready (loaded, LoRA merged, quantised)", "model bytes the pool counts",
                 "peak while loading", "resident once ready", "peak of the process",
                 "top-1 agreement with bf16 (official answers)"],
                [[r["weights"], f"{r['ready']:.0f} s", human_bytes(r["pool bytes"]),
                  f"{r['load peak'] / 2**30:.1f} GiB", f"{r['resident'] / 2**30:.1f} GiB",
                  f"{r['peak'] / 2**30:.1f} GiB", "(baseline)" if r["top1"] is None else f"{r['top1']:.1%}"]
                 for r in results])
    print()
    rows = []
    for result in results:
        for r in result["rows"]:
            base = baseline[(r["request"], r["decoding"])]
            same = [base["text"] == r["text"], baseline[(r["request"], "official")]["text"] == r["text"]]
            rows.append([result["weights"], r["request"], r["decoding"], f"{r['first token']:.1f} s",
                         f"{r['first words']:.1f} s", f"{r['per token']:.2f} s", r["tokens"],
                         f"{r['whole']:.1f} s", f"{base['whole'] / r['whole']:.2f}×",
                         " / ".join("yes" if x else "no" for x in same), f"{r['peak'] / 2**30:.1f} GiB"])
    print_table(["weights", "request", "decoding", "first token chosen", "first words on the page", "per new token",
                 "new tokens", "whole answer", "vs bf16, same decoding",
                 "same answer as bf16: same decoding / official", "peak memory while answering"], rows)
    if cached:
        print()
        first = {(r["weights"], row["request"], row["decoding"]): row for r in results for row in r["rows"]}
        ready = {r["weights"]: r["ready"] for r in results}
        print_table(["weights", "ready from the cache", "ready quantising (the process above)", "cache file",
                     "peak while loading", "request", "decoding", "first token chosen", "whole answer",
                     "same answer as the process above", "peak of the process"],
                    [[r["weights"], f"{r['ready']:.1f} s", f"{ready[r['weights']]:.0f} s",
                      human_bytes(cache_bytes.get(r["weights"], 0)), f"{r['load peak'] / 2**30:.1f} GiB",
                      row["request"], row["decoding"], f"{row['first token']:.1f} s", f"{row['whole']:.1f} s",
                      "yes" if row["text"] == first[(r["weights"], row["request"], row["decoding"])]["text"] else "no",
                      f"{r['peak'] / 2**30:.1f} GiB"] for r in cached for row in r["rows"]])
    return 0


if __name__ == "__main__":
    sys.exit(main())
