"""GPU check: full-size models with random weights in fp16/bf16, for a machine with CUDA (run it whenever one is lent).

Run: python benchmarks/gpu_check.py [--dtype bf16|fp16] [--quick]        (on a CUDA machine; under 5 minutes)
     python benchmarks/gpu_check.py --smoke                             (tiny sizes on the CPU: what CI runs)

Measures, each model built at its released size with seeded random weights (no download; speed and memory do not
depend on the values):

- Tag2Text (Swin-B 384 + recognition head + tag encoder + 12-layer caption decoder): images/s of a whole pipeline
  call (tags + 3-beam caption) at batch 1 and 8;
- GeoDiffusion (Stable Diffusion 1.5 UNet / VAE / CLIP text encoder): seconds per 512x512 image at 50 steps with
  the PNDM scheduler and with DPM-Solver++ at 20 steps ("fast sampling");
- MERT: MERT-v1-95M and its ten probing heads: seconds per 30 s clip and per 3-minute track in 5 s windows (batched
  and one window per pass), and the share of top-1 labels that stay as in fp32 on the same GPU;
- 3D-MoLM: Uni-Mol + Q-Former encoder throughput (molecules/s, 8 molecules of 40 atoms), and Llama-2-7B-shaped
  greedy generation tokens/s from ``inputs_embeds`` (the way 3D-MoLM feeds the molecule tokens), with transformers'
  dynamic KV cache and with the static one the pipeline decodes with on a GPU (compiled with CUDA graphs), and the
  share of tokens the two give alike;

with peak GPU memory (``torch.cuda.max_memory_allocated``) of each. Prints a markdown table for BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


@dataclass
class Row:
    model: str
    measure: str
    value: float
    unit: str
    peak_bytes: int | None


class Bench:
    def __init__(self, device: torch.device, dtype: torch.dtype, repeats: int):
        self.device, self.dtype, self.repeats = device, dtype, repeats
        self.rows: list[Row] = []

    def sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def seconds(self, fn: Callable[[], object]) -> float:
        """Median seconds of ``fn`` after one warm-up run."""
        fn()
        self.sync()
        times = []
        for _ in range(self.repeats):
            start = time.perf_counter()
            fn()
            self.sync()
            times.append(time.perf_counter() - start)
        return float(np.median(times))

    @contextlib.contextmanager
    def peak(self) -> Iterator[list[int | None]]:
        """Yields a one-item list that holds the peak allocated bytes of the block afterwards (None on CPU)."""
        box: list[int | None] = [None]
        if self.device.type == "cuda":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats(self.device)
        yield box
        if self.device.type == "cuda":
            box[0] = torch.cuda.max_memory_allocated(self.device)

    def add(self, model: str, measure: str, value: float, unit: str, peak: int | None) -> None:
        self.rows.append(Row(model, measure, value, unit, peak))
        print(f"  {model}: {measure}: {value:.3g} {unit}", flush=True)


def seeded_(module: torch.nn.Module, seed: int = 0, std: float = 0.02) -> torch.nn.Module:
    """Seeded N(0, std) weights, norms at weight 1 and bias 0, on whatever device the module lives."""
    gen = torch.Generator(device="cpu").manual_seed(seed)
    with torch.no_grad():
        for sub in module.modules():
            is_norm = isinstance(sub, (torch.nn.LayerNorm, torch.nn.GroupNorm))
            for name, p in sub.named_parameters(recurse=False):
                if is_norm:
                    p.fill_(1.0 if name == "weight" else 0.0)
                else:
                    p.copy_((torch.randn(p.shape, generator=gen) * std).to(p.dtype))
    return module


def tag2text(b: Bench, smoke: bool) -> None:
    from apps.tag2text.config import Tag2TextConfig
    from apps.tag2text.model import build_model
    from apps.tag2text.pipeline import Tag2TextPipeline

    if smoke:
        from tests.fixtures.tiny_tag2text import tiny_config

        config = tiny_config()
    else:
        config = replace(Tag2TextConfig(), max_length=30, min_length=10)
    with b.peak() as peak:
        model = seeded_(build_model(config, device=b.device, dtype=b.dtype))
        pipe = Tag2TextPipeline(model, device=b.device, dtype=b.dtype)
        rng = np.random.default_rng(0)
        images = [rng.integers(0, 256, (384, 384, 3), dtype=np.uint8) for _ in range(8)]
        rates = {n: n / b.seconds(lambda n=n: pipe(images[:n])) for n in (1, 8)}
    for n, rate in rates.items():
        b.add("Tag2Text", f"images/s, batch {n} (tags + 3-beam caption)", rate, "img/s", peak[0])


def geodiffusion(b: Bench, smoke: bool) -> None:
    from apps.geodiffusion.pipeline import fast_sampling
    from benchmarks.common import random_stable_diffusion

    size, steps, fast_steps = (64, 4, 2) if smoke else (512, 50, 20)
    with b.peak() as peak:
        sd = random_stable_diffusion(tiny=smoke)  # PNDM, as the nuImages checkpoints
        sd.to(b.device, b.dtype)
        ids = torch.randint(0, sd.text_encoder.config.vocab_size, (2, 77), device=b.device)
        with torch.no_grad():
            embeds = sd.text_encoder(ids)[0]

        def generate(pipe, n_steps: int):
            generator = torch.Generator(device=b.device).manual_seed(0)
            return pipe(prompt_embeds=embeds[:1], negative_prompt_embeds=embeds[1:], height=size, width=size,
                        num_inference_steps=n_steps, guidance_scale=7.5, generator=generator, output_type="np")

        official = b.seconds(lambda: generate(sd, steps))
        fast_pipe = fast_sampling(sd)  # the demo's own fast sampler: DPM-Solver++ on the same models
        fast = b.seconds(lambda: generate(fast_pipe, fast_steps))
    b.add("GeoDiffusion", f"s per {size}² image, {steps} steps (PNDM)", official, "s", peak[0])
    b.add("GeoDiffusion", f"s per {size}² image, {fast_steps} steps (DPM-Solver++, fast sampling)", fast, "s", peak[0])


def molm3d(b: Bench, smoke: bool) -> None:
    from transformers import LlamaConfig, LlamaForCausalLM

    from apps.molm3d.qformer import MolQFormer, QFormerConfig
    from apps.molm3d.unimol import UniMolConfig

    if smoke:
        unimol = UniMolConfig(num_layers=2, embed_dim=32, ffn_dim=64, num_heads=4, num_kernels=8)
        qformer = QFormerConfig(hidden_size=32, num_layers=2, intermediate_size=64, encoder_width=32,
                                llm_hidden_size=64)
        llama = LlamaConfig(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                            num_attention_heads=4, num_key_value_heads=4)
        atoms, new_tokens = 12, 8
    else:  # 3D-MoLM's released sizes: Uni-Mol 15x512, Q-Former 12x768, Llama-2-7B (+ <mol> tokens)
        unimol, qformer, atoms, new_tokens = UniMolConfig(), QFormerConfig(), 40, 128
        llama = LlamaConfig(vocab_size=32001, hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                            num_attention_heads=32, num_key_value_heads=32, max_position_embeddings=4096)
    gen = torch.Generator().manual_seed(0)
    batch = 8
    tokens = torch.randint(1, unimol.vocab_size, (batch, atoms), generator=gen).to(b.device)
    coords = torch.randn(batch, atoms, 3, generator=gen) * 2
    distances = torch.cdist(coords, coords).to(b.device, b.dtype)
    edges = (tokens[:, :, None] * unimol.vocab_size + tokens[:, None, :]).to(b.device)
    def encode_seconds() -> float:  # the encoder is freed when this returns, before the 7B model is built
        encoder = seeded_(MolQFormer(unimol, qformer)).to(b.device, b.dtype).eval()
        with torch.no_grad():
            return b.seconds(lambda: encoder(tokens, distances, edges))

    with b.peak() as peak:
        encode = encode_seconds()
    b.add("3D-MoLM", f"encoder (Uni-Mol + Q-Former), {batch} molecules of {atoms} atoms", batch / encode,
          "mol/s", peak[0])
    with b.peak() as peak:
        with torch.device(b.device):
            llm = LlamaForCausalLM(llama)
        llm = llm.to(b.dtype).eval()
        prompt = torch.randn(1, 64, llama.hidden_size, generator=gen).to(b.device, b.dtype) * 0.02

        def generate(**cache):
            with torch.no_grad():
                return llm.generate(inputs_embeds=prompt, max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                                    do_sample=False, pad_token_id=0, **cache)

        seconds = b.seconds(generate)
    b.add("3D-MoLM", f"Llama-2-7B-shaped greedy generation from inputs_embeds, {new_tokens} tokens",
          new_tokens / seconds, "tok/s", peak[0])
    # the pipeline's GPU path (MoLM3DPipeline.static_cache): a static KV cache, which generate compiles with CUDA
    # graphs on a GPU (the warm-up run compiles; on the CPU it runs eagerly)
    with b.peak() as peak:
        seconds = b.seconds(lambda: generate(cache_implementation="static"))
    b.add("3D-MoLM", f"the same, static KV cache (CUDA graphs on a GPU), {new_tokens} tokens", new_tokens / seconds,
          "tok/s", peak[0])
    same = (generate() == generate(cache_implementation="static")).float().mean().item()
    b.add("3D-MoLM", "static-cache tokens equal to the dynamic cache's", 100 * same, "%", None)


def mert(b: Bench, smoke: bool) -> None:
    """MERT-v1-95M and the ten heads at their released sizes: a 30 s clip, a 3-minute track with 5 s windows (batched
    and one at a time), and how many top-1 labels the reduced precision keeps from fp32 (same weights, same GPU)."""
    from transformers import HubertModel

    from apps.mert import BEST_LAYER
    from apps.mert import pipeline as mert_pipeline
    from apps.mert.audio import SAMPLE_RATE, Audio
    from apps.mert.checks import MERTInputs
    from apps.mert.model import ProbingHead, Task, encoder_config
    from tests.fixtures.tiny_mert import TINY, official_config

    released = official_config()
    config = official_config(**TINY) if smoke else released
    clip_s, track_s, window = (6.0, 20.0, 2.0) if smoke else (30.0, 180.0, 5.0)
    classes = {"EMO": 2, "GS": 24, "MTGGenre": 87, "MTGInstrument": 40, "MTGMood": 56, "MTGTop50": 50, "NSynthI": 11,
               "NSynthP": 128, "VocalSetS": 20, "VocalSetT": 10}
    torch.manual_seed(0)
    encoder = HubertModel(encoder_config(config)).eval()
    heads = {name: Task(name, ProbingHead(layer, classes[name], config["hidden_size"]).eval(),
                        tuple(f"{name}-{i}" for i in range(classes[name])))
             for name, layer in BEST_LAYER.items()}
    t = np.arange(int(track_s * SAMPLE_RATE)) / SAMPLE_RATE
    track = (0.3 * np.sin(2 * np.pi * 220 * t) * np.sin(2 * np.pi * 0.5 * t)).astype(np.float32)

    def inputs(x: np.ndarray, seconds: float | None) -> MERTInputs:
        return MERTInputs(Audio(x, len(x) / SAMPLE_RATE, len(x) / SAMPLE_RATE, SAMPLE_RATE, 1), tuple(BEST_LAYER),
                          seconds)

    def tops(pipe) -> list[str]:
        out = pipe.describe(inputs(track, window))
        return [r.labels[0].name for r in out.results] + [v for w in out.windows for v in w.top.values()]

    for task in heads.values():
        task.head.to(b.device)
    reference = tops(mert_pipeline.MERTPipeline(encoder.to(b.device), heads, b.device, torch.float32))
    for task in heads.values():
        task.head.to(b.device, b.dtype)
    pipe = mert_pipeline.MERTPipeline(encoder.to(b.device, b.dtype), heads, b.device, b.dtype)
    with b.peak() as peak:
        clip = b.seconds(lambda: pipe.describe(inputs(track[:int(clip_s * SAMPLE_RATE)], None)))
    b.add("MERT", f"s per {clip_s:.0f} s clip, ten tasks (one encoder pass)", clip, "s", peak[0])
    for batch in (mert_pipeline.GPU_BATCH, 1):
        pipe.batch, default = batch, pipe.batch
        with b.peak() as peak:
            seconds = b.seconds(lambda: pipe.describe(inputs(track, window)))
        pipe.batch = default
        b.add("MERT", f"s per {track_s:.0f} s track, {window:.0f} s windows, {batch} per pass", seconds, "s",
              peak[0])
    labels = tops(pipe)
    same = sum(a == c for a, c in zip(labels, reference, strict=True))
    b.add("MERT", f"top-1 labels equal to fp32 ({len(labels)}: ten tasks whole and per window)",
          100 * same / len(labels), "%", None)


def table(b: Bench) -> str:
    lines = ["| model | measure | value | peak GPU memory |", "|---|---|---|---|"]
    for r in b.rows:
        peak = "—" if r.peak_bytes is None else f"{r.peak_bytes / 2**30:.1f} GiB"
        lines.append(f"| {r.model} | {r.measure} | {r.value:.3g} {r.unit} | {peak} |")
    return "\n".join(lines)


SECTIONS = ["tag2text", "geodiffusion", "molm3d", "mert"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes on the CPU (fp32): checks the script runs")
    parser.add_argument("--quick", action="store_true", help="one timed run each instead of three")
    parser.add_argument("--only", nargs="+", choices=SECTIONS)
    args = parser.parse_args(argv)
    if args.smoke:
        device, dtype = torch.device("cpu"), torch.float32
    elif not torch.cuda.is_available():
        print("No CUDA device: run this on a GPU machine, or pass --smoke for the tiny CPU check.", file=sys.stderr)
        return 2
    else:
        device, dtype = torch.device("cuda"), DTYPES[args.dtype]
    torch.manual_seed(0)
    b = Bench(device, dtype, repeats=1 if args.quick or args.smoke else 3)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU (smoke: tiny sizes)"
    print(f"GPU check on {name}, {str(dtype).removeprefix('torch.')}, torch {torch.__version__}", flush=True)
    start = time.perf_counter()
    for section in args.only or SECTIONS:
        globals()[section](b, args.smoke)
        if device.type == "cuda":
            torch.cuda.empty_cache()
    print(f"\nTotal {time.perf_counter() - start:.0f} s\n")
    print(table(b))
    return 0


if __name__ == "__main__":
    sys.exit(main())
