"""Rerun every benchmark and rewrite BENCHMARKS.md: machine, library versions, and per benchmark its command,
baseline, result and ratio (each script measures its own baseline in the same run).

Run: python benchmarks/run_all.py [--only WORD ...]   (--only: rerun the benchmarks whose title contains a WORD and
keep every other section of the existing file as it is; each section records the date it was measured)

A rerun section holds what its script printed (tables and ``Note:`` lines) and, after it, the section's ``> `` notes
written by hand, which survive every rerun; sections measured by hand (``BY_HAND``) are never rerun.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# (title, what the baseline is, command)
BENCHMARKS = [
    ("Hub cold start", "`python -c \"import gradio\"` in the same run; goal ≤ 1.5×",
     "python benchmarks/hub_cold_start.py --repeats 3"),
    ("PraX: regex match timeout on catastrophic backtracking", "the unguarded `regex` match of `(a|a)+b` at "
     "16/18/20 a's in the same run, extrapolated to 40 a's; goal: the guarded `dsl.matches` returns within timeout + "
     "100 ms", "python benchmarks/prax_dsl.py"),
    ("PraX: incremental RSA example choice", "a plain Python-loop RSA on the same matrix; goal < 100 ms in total",
     "python benchmarks/prax_rsa.py"),
    ("Tag2Text: caption decoding with a KV cache", "the same beam search recomputing every step (no cache), same "
     "random model; goal ≥ 3× faster. Per-stage times at batch 1 and 8", "python benchmarks/tag2text_decode.py"),
    ("GeoDiffusion: location-token tokenizer", "`CLIPTokenizer.from_pretrained` with the 65,536 added tokens of the "
     "256×256 grid; goal ≥ 50× faster load, identical ids", "python benchmarks/geodiffusion_tokenizer.py --repeats 3"),
    ("GeoDiffusion: fast sampling vs the official samplers", "the official samplers in the same run on the same "
     "full-size random models: PNDM 100 steps (nuImages, 101 UNet evaluations) and DPM-Solver++ 50 steps (COCO-Stuff); "
     "rows extrapolated from 2 × 4-step calls per sampler, one whole fast call timed as a check; goal ≥ 2× less time "
     "per image", "python benchmarks/geodiffusion_sampling.py"),
    ("3D-MoLM: conformer, encoder and tiny pipeline timings", "absolute CPU timings (no upstream baseline runs here)",
     "python benchmarks/molm3d_pipeline.py --repeats 3"),
    ("3D-MoLM: the language model at full size on a CPU", "bf16 (3D-MoLM's dtype on a CPU) with the "
     "official decoding (5 beams, the paper's stage-3 settings), in the same run on the same weights; the project's "
     "own answer path on a Llama-2-7B-shaped model with random weights (2 threads), each weights option (bf16, "
     "DEMOHUB_QUANTIZE's int8 and int4) in its own process. Goal (issue #28): a description in ≤ 60 s and a "
     "property in ≤ 10 s with the best opt-in option, first words within 10 s, peak memory ≤ 6 GB with int4",
     "python benchmarks/molm3d_llm_cpu.py"),
    ("3D-MoLM's int8/int4 on a trained Llama (SmolLM2-135M-Instruct)", "float32 (the GGUF file dequantised) and "
     "bf16 (3D-MoLM's CPU dtype) in the same run on the same prompts and text; each option quantised by "
     "`shared/quantize.py` as 3D-MoLM quantises its Llama; goal (issue #40): int4 ≥ 95% and int8 ≥ 99% of greedy "
     "tokens as bf16's", "python benchmarks/quantize_trained.py --variants"),
    ("Quantised layers on a CPU, by rows", "bf16 on the same Llama-2-7B MLP weight (11,008 x 4,096, seeded random), "
     "timed alternately in the same run; what `shared/quantize.py`'s packed/widened thresholds rest on, and why "
     "int4's new question waits longer than bf16's (#40, item 3)", "python benchmarks/quantize_layers.py"),
    ("PraX: bundled pragmatic vs literal listener", "`tiny-literal` on the same held-out specs, same run, 50 listener "
     "samples per spec, 3 sampling seeds; the paper claims pragmatic training wins on informative examples",
     "python benchmarks/prax_listeners.py --samples 50"),
    ("PraX on the example sets people wrote", "each bundled listener's samples alone, ranked as upstream (before issue "
     "#38), same sets, same run; goal: the default listener finds a consistent regex for ≥ 95% of sets and puts the "
     "intended one first for ≥ 25%, pragmatic ≥ literal", "python benchmarks/prax_people.py"),
    ("PraX: a guess on the page, warm and first after start", "the listeners without the search (before issue #38), "
     "same sets, same run; goal: a warm guess ≤ 1.5 s, the first guess ≤ 5 s after the hub prints its address",
     "python benchmarks/prax_guess.py --hubs 3"),
    ("Tag2Text: memory of a batch zip", "every image of the zip decoded at full size and kept (the intake before "
     "#12), each case in a fresh process; goal: the 12 × 7000² zip refused with < 300 MB growth",
     "python benchmarks/upload_memory.py"),
    ("Hub under load (PraX + Tag2Text endpoints)", "throughput with one client, same run",
     "python benchmarks/load.py --requests 48 --concurrency 1 8 32"),
    ("Fairness: PraX while GeoDiffusion is busy", "PraX p95 on the idle hub, same run; goal ≤ 2×",
     "python benchmarks/fairness.py --requests 40 --steps 200"),
    ("Reduced precision: bf16 against fp32 on CPU", "the same models in fp32 (the CPU default), same weights, "
     "same inputs, same run; fp32 and bf16 timed alternately, each ratio the median of the per-pair ratios fp32 / "
     "bf16. Tag2Text: the tiny official-layout checkpoint of the tests and the full-size model (Swin-B 384 + "
     "BERT-base, 372M parameters) with seeded random weights and tag biases drawn from N(-5, 2), so that a photo's "
     "worth of tags pass the 0.68 threshold; the demo's settings (3 beams, max_length 50). \"Caption changed, same "
     "tags\": both precisions caption from fp32's tags, which isolates the caption decoder. PraX: the bundled "
     "listeners (trained weights) on the first 100 held-out RSA specs, same sampling seeds; top-1 by automata "
     "equivalence",
     "python benchmarks/reduced_precision.py"),
    ("Hub first call after start", "the same PraX call later on the same hub (a fresh gradio_client each time), "
     "same run; the first must be answered, not time out", "python benchmarks/first_call.py --repeats 3"),
    ("Hub first call after start, busy cores", "as above, with one spinning process per core throughout",
     "python benchmarks/first_call.py --repeats 3 --busy"),
    ("PraX on Ray Serve: 1 vs 2 replicas", "Ray Serve with 1 replica (and the in-process pool), same run",
     "python benchmarks/ray_replicas.py --clients 8 --requests 48"),
]
# Sections measured by hand (they need code outside this repository, e.g. the official implementation): never rerun
# here, always kept as they are in BENCHMARKS.md.
BY_HAND = ("Tag2Text: official code vs ours (run by hand)",
           "MERT: official code vs ours (run by hand)",
           "CodeSage: official code vs ours (run by hand)",
           "GPU check: bf16 and fp16 at full size on an H200 (run by hand)",
           "Request budgets: the largest request per endpoint and the hostile ones, before and after (run by hand)",
           "A client's share: an honest visitor while one client attacks, before and after (run by hand)")
LIBRARIES = ("torch", "gradio", "transformers", "diffusers", "huggingface_hub", "rdkit", "numpy")


def version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def run(command: str) -> str:
    # ``python`` in a command is this interpreter (run_all.py works from a venv that is not activated)
    argv = command.replace("python ", f"{sys.executable} ", 1) if command.startswith("python ") else command
    result = subprocess.run(argv, shell=True, cwd=ROOT, capture_output=True, text=True, timeout=1800,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    return report(result.stdout) if result.returncode == 0 and "|" in result.stdout else (
        f"Failed (exit {result.returncode}):\n\n```\n{(result.stderr or result.stdout)[-1500:]}\n```")


def report(stdout: str) -> str:
    """What a benchmark printed for BENCHMARKS.md: its tables and its own ``Note:`` lines, blocks kept apart."""
    blocks, current = [], []
    for line in stdout.splitlines():
        if line.startswith("|") or line.startswith("Note:"):
            if current and current[-1].startswith("|") != line.startswith("|"):
                blocks.append(current)
                current = []
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    return "\n\n".join("\n".join(block) for block in [*blocks, current] if block)


def hand_notes(section: str) -> str:
    """The ``> `` paragraphs of a section: notes written by hand, kept when the benchmark above them is rerun."""
    return "\n".join(line for line in section.splitlines() if line.startswith(">"))


def existing_sections(path: Path) -> dict[str, str]:
    """``## title`` → that section's text (title line excluded) in an existing BENCHMARKS.md."""
    if not path.exists():
        return {}
    sections: dict[str, str] = {}
    for chunk in path.read_text(encoding="utf-8").split("\n## ")[1:]:
        title, _, body = chunk.partition("\n")
        sections[title.strip()] = body.strip("\n")
    return sections


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "BENCHMARKS.md")
    parser.add_argument("--only", nargs="+", metavar="WORD", help="rerun only benchmarks whose title has a WORD")
    args = parser.parse_args(argv)
    existing = existing_sections(args.out)
    kept = existing if args.only else {}
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else ""
    machine = (f"{os.cpu_count()} CPU cores ({cpu}), "
               f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB RAM, no GPU")
    lines = [
        "# Benchmarks", "",
        "Rewritten by `python benchmarks/run_all.py`. Every number is measured against a baseline in the same run on "
        "the same machine; the command that produced each table is above it. Lines starting with `>` are notes "
        "written by hand: a rerun keeps them under its new table. Sections marked \"run by hand\" need code outside "
        "this repository and are never rerun.", "",
        f"- Date: {datetime.date.today().isoformat()}",
        f"- Machine: {machine}" + (" (this run; sections kept from earlier runs may differ)" if args.only else ""),
        f"- Python {platform.python_version()}; " + ", ".join(f"{n} {version(n)}" for n in LIBRARIES), "",
    ]
    for title, baseline, command in BENCHMARKS:
        rerun = not args.only or any(word.lower() in title.lower() for word in args.only)
        if not rerun and title in kept:
            lines += [f"## {title}", "", kept[title], ""]
            continue
        print(f"running: {command}", file=sys.stderr)
        lines += [f"## {title}", "", f"Command: `{command}`", "", f"Baseline: {baseline}.", "",
                  f"Measured: {datetime.date.today().isoformat()} on {machine}.", "", run(command), ""]
        if notes := hand_notes(existing.get(title, "")):
            lines += [notes, ""]
    for title in BY_HAND:
        if title in existing:
            lines += [f"## {title}", "", existing[title], ""]
    args.out.write_text("\n".join(lines), encoding="utf-8")
    print(args.out.read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
