"""bf16 against fp32 on this CPU: how often Tag2Text's tags and captions and PraX's top guesses change, and the speed.

Run: python benchmarks/reduced_precision.py [--images 64] [--batches 1 8] [--repeats 3] [--threads 2]
         [--prax-specs 100] [--prax-samples 50]
     python benchmarks/reduced_precision.py --smoke   (tiny sizes, under a minute: what tests/benchmarks runs)

Every model is run twice in the same process, fp32 and bf16 with the same weights and the same inputs:

- Tag2Text, tiny checkpoint: the tests' tiny official-layout checkpoint (tests/fixtures/tiny_tag2text.py) read by our
  loader; ``--images`` seeded noise pictures through the pipeline's preprocessing and ``predict_pixels`` (tags, then
  a caption guided by them), 8 at a time.
- Tag2Text, full size: Swin-B 384 + BERT-base (372M parameters) with seeded random weights, built as
  benchmarks/tag2text_decode.py builds it (``init_random(build_model(...))``), with the demo's settings (3 beams,
  max_length 50). Random weights put every tag near probability 0.5, where none passes the 0.68 threshold, so the tag
  biases are drawn from N(-5, 2): about a photo's worth of tags (~7) pass, a few near the threshold. ``--images``
  seeded noise tensors through ``predict_pixels``, 8 at a time.
- PraX: the bundled listeners (tiny-literal, tiny-pragmatic: real trained weights) on the first ``--prax-specs``
  held-out RSA specs (checkpoints/prax/heldout-rsa.json), sampled with the same seeds in both precisions.

Reported per image: whether the shown tag set changed, whether the caption changed, and whether the caption changed
when both precisions caption from the same (fp32's) tags, which isolates the caption decoder. With random weights
these rates are pessimistic: the decoder's next-token probabilities are nearly uniform, so bf16's rounding (8
significant bits) reorders beams that a trained model separates by a wide margin, and how many tags sit near the
threshold depends on the drawn biases. PraX's rates come from trained weights: top-1 accuracy (automata equivalence)
in each precision and the share of specs whose top guess changed.

Speed: per stage at each of ``--batches``, fp32 and bf16 timed alternately (``paired_times`` of
tag2text_decode.py, so load drift hits both), the median of per-pair ratios fp32 / bf16. The decoding row forces both
to the full max_length (min_length = max_length) so that they do the same number of steps; the whole call does not.
The machine's load average is printed: other processes skew absolute times (ratios less so).
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from apps.tag2text.config import Tag2TextConfig  # noqa: E402
from apps.tag2text.model import Tag2Text, build_model  # noqa: E402
from apps.tag2text.pipeline import Tag2TextPipeline, class_thresholds  # noqa: E402
from benchmarks.common import print_table  # noqa: E402
from benchmarks.tag2text_decode import paired_times, stage_calls  # noqa: E402
from tests.fixtures.tiny_tag2text import init_random, tiny_config, write_tiny_checkpoint  # noqa: E402

SEED = 0
CHUNK = 8  # images per forward pass, as the pipeline's default batch_size
TAG_BIAS = (-5.0, 2.0)  # mean, std of the full-size model's tag biases (see the docstring)
PRAX_SPECS = ROOT / "checkpoints" / "prax" / "heldout-rsa.json"
PRAX_LISTENERS = ("tiny-literal", "tiny-pragmatic")


def with_tag_biases(model: Tag2Text, seed: int = SEED) -> Tag2Text:
    """Tag biases from N(TAG_BIAS): a few tags pass the threshold, most are far below it, some are near it."""
    gen = torch.Generator().manual_seed(seed)
    mean, std = TAG_BIAS
    with torch.no_grad():
        model.fc.b.copy_(mean + std * torch.randn(model.fc.b.shape, generator=gen))
    return model


def pipelines_from_model(model: Tag2Text) -> tuple[Tag2TextPipeline, Tag2TextPipeline]:
    """(fp32, bf16) pipelines over the same weights (the copy is taken before either pipeline fuses its QKV)."""
    half = copy.deepcopy(model)
    return Tag2TextPipeline(model), Tag2TextPipeline(half, dtype=torch.bfloat16)


def pipelines_from_checkpoint(folder: Path) -> tuple[Tag2TextPipeline, Tag2TextPipeline]:
    """(fp32, bf16) pipelines read from an official-layout checkpoint folder by our loader."""
    return (Tag2TextPipeline.from_pretrained(folder),
            Tag2TextPipeline.from_pretrained(folder, dtype=torch.bfloat16))


def noise_pictures(n: int, seed: int = SEED) -> list[Image.Image]:
    rng = np.random.default_rng(seed)
    return [Image.fromarray(rng.integers(0, 256, (96, 80, 3), dtype=np.uint8)) for _ in range(n)]


class Outcome(NamedTuple):
    tags: frozenset[int]  # the shown tags (deleted ones removed), by tag index
    scores: torch.Tensor  # every tag's probability
    caption: str


def compare(full: list[Outcome], half: list[Outcome], guided_full: list[str], guided_half: list[str]) -> dict:
    """Per-image changes from fp32 (``full``) to bf16 (``half``); ``guided_*``: captions from fp32's tags."""
    n = len(full)
    pairs = list(zip(full, half, strict=True))
    return {
        "images": n,
        "tags per image": sum(len(a.tags) for a in full) / n,
        "tag set changed": sum(a.tags != b.tags for a, b in pairs) / n,
        "tags flipped per image": sum(len(a.tags ^ b.tags) for a, b in pairs) / n,
        "max score diff": max((a.scores - b.scores).abs().max().item() for a, b in pairs),
        "caption changed": sum(a.caption != b.caption for a, b in pairs) / n,
        "caption changed, same tags": sum(a != b for a, b in zip(guided_full, guided_half, strict=True)) / n,
    }


@torch.inference_mode()
def changes(full: Tag2TextPipeline, half: Tag2TextPipeline, pixels: torch.Tensor) -> dict:
    """``predict_pixels`` (tags, then a caption from them) on (N, 3, S, S) fp32 pixels, CHUNK at a time, in both
    precisions; then both caption again from fp32's tags."""
    thresholds = class_thresholds(full.config)
    out_full, out_half, guided_full, guided_half = [], [], [], []
    for start in range(0, len(pixels), CHUNK):
        chunk_full = pixels[start:start + CHUNK]
        chunk_half = chunk_full.to(half.dtype)
        no_user_tags = [()] * len(chunk_full)
        predicted_full = full.predict_pixels(chunk_full, no_user_tags, thresholds)
        predicted_half = half.predict_pixels(chunk_half, no_user_tags, thresholds)
        out_full += [Outcome(frozenset(p.indices), p.scores, p.caption) for p in predicted_full]
        out_half += [Outcome(frozenset(p.indices), p.scores, p.caption) for p in predicted_half]
        guide = [p.caption_tags for p in predicted_full]
        guided_full += full.caption(full.model.visual_encoder(chunk_full), guide)
        guided_half += half.caption(half.model.visual_encoder(chunk_half), guide)
    return compare(out_full, out_half, guided_full, guided_half)


def tiny_changes(images: int) -> dict:
    """The tiny official-layout checkpoint read by our loader; noise pictures through the pipeline's preprocessing."""
    with tempfile.TemporaryDirectory() as tmp:
        write_tiny_checkpoint(tmp)
        full, half = pipelines_from_checkpoint(Path(tmp))
    return changes(full, half, full.pixel_values(noise_pictures(images)))


def stage_ratios(full: Tag2TextPipeline, half: Tag2TextPipeline, pixels: torch.Tensor, repeats: int) -> dict:
    """stage -> (fp32 s, bf16 s, median fp32/bf16 ratio of alternately timed pairs)."""
    calls_full, calls_half = stage_calls(full, pixels, full_length=True), stage_calls(half, pixels, full_length=True)
    return {stage: paired_times(calls_full[stage], calls_half[stage], repeats) for stage in calls_full}


def prax_changes(listener: str, n_specs: int, samples: int) -> dict[str, float]:
    """One bundled listener in both precisions on the held-out RSA specs: accuracy, top-guess changes, time."""
    from apps.prax import DEMO, dsl
    from apps.prax.equivalence import equivalent
    from apps.prax.evaluate import load_specs
    from apps.prax.pipeline import PraxPipeline
    from shared import weights

    folder = weights.resolve(DEMO.id, DEMO.weight_set(listener), allow_download=False)
    specs = load_specs(PRAX_SPECS, n_specs)
    examples = [dsl.validate_examples(s["examples"], allow_empty=True) for s in specs]
    found, plans = {}, {}
    for name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        pipe = PraxPipeline.from_pretrained(folder, dtype=dtype)
        # The same generate() calls in both precisions, so that both draw from the same random streams: the request
        # memory budget would otherwise cut bf16's smaller batches differently (a changed guess would then be the
        # split's doing, not the precision's). One call per batch of 16 specs (the pipeline's max_batch allows it).
        pipe.batch_limit = lambda longest, pipe=pipe: pipe.max_batch
        plans[name] = [pipe.calls(examples[b:b + 16], samples) for b in range(0, len(specs), 16)]
        start, top = time.perf_counter(), []
        for b in range(0, len(specs), 16):  # as apps.prax.evaluate.score: 16 specs per batch, seed + batch start
            # the listener's own guesses (samples ranked as upstream): the search beside it is the same in both
            results = pipe.synthesize_batch(examples[b:b + 16], k=1, num_samples=samples, seed=SEED + b,
                                            validate=False, search=False)
            top += [r.top1 for r in results]
        found[name] = (top, time.perf_counter() - start)
    assert plans["fp32"] == plans["bf16"], "both precisions must make the same generate() calls"
    (top_full, t_full), (top_half, t_half) = found["fp32"], found["bf16"]
    correct = {name: sum(bool(g) and equivalent(g, s["program"]) for g, s in zip(top, specs, strict=True)) / len(specs)
               for name, (top, _) in found.items()}
    return {"specs": len(specs), "top-1 fp32": correct["fp32"], "top-1 bf16": correct["bf16"],
            "top guess changed": sum(a != b for a, b in zip(top_full, top_half, strict=True)) / len(specs),
            "fp32 s": t_full, "bf16 s": t_half}


def percent(share: float, n: int) -> str:
    return f"{100 * share:.0f}% ({round(share * n)} of {n})"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=64, help="inputs per Tag2Text model")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8], help="batch sizes of the speed table")
    parser.add_argument("--repeats", type=int, default=3, help="timed pairs per stage (median)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--prax-specs", type=int, default=100, help="held-out specs per PraX listener (0: skip)")
    parser.add_argument("--prax-samples", type=int, default=50, help="listener samples per spec")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (the tests' run): a small model, few inputs")
    args = parser.parse_args(argv)
    if args.smoke:
        args.images, args.batches, args.repeats, args.prax_specs, args.prax_samples = 4, [1, 2], 1, 3, 5
    torch.set_num_threads(args.threads)
    load = [os.getloadavg()[0]]
    start = time.perf_counter()

    rates = {"Tag2Text, tiny official-layout checkpoint (noise pictures)": tiny_changes(args.images)}
    config = tiny_config() if args.smoke else Tag2TextConfig()
    label = "smoke-test model" if args.smoke else "full size, 372M parameters"
    full, half = pipelines_from_model(with_tag_biases(init_random(build_model(config), seed=SEED)))
    pixels = torch.randn(args.images, 3, config.image_size, config.image_size,
                         generator=torch.Generator().manual_seed(SEED))
    rates[f"Tag2Text, {label}, random weights (noise tensors)"] = changes(full, half, pixels)
    load.append(os.getloadavg()[0])
    speed = {batch: stage_ratios(full, half, pixels[:batch], args.repeats) for batch in args.batches}
    load.append(os.getloadavg()[0])
    prax = {name: prax_changes(name, args.prax_specs, args.prax_samples) for name in PRAX_LISTENERS} \
        if args.prax_specs else {}
    load.append(os.getloadavg()[0])

    from shared.device import cpu_bf16_support

    print(f"Note: bf16 vs fp32 on CPU: torch {torch.__version__}, {args.threads} thread(s), bf16 on this CPU: "
          f"{cpu_bf16_support().summary()}; Tag2Text {config.num_beams} beams, max_length {config.max_length}; "
          f"{args.repeats} timed pair(s) per stage (median); {time.perf_counter() - start:.0f} s in all; load average "
          f"{' -> '.join(f'{x:.2f}' for x in load)}")
    print()
    print_table(["Tag2Text model", "images", "tags per image (fp32)", "tag set changed", "tags flipped per image",
                 "max score change", "caption changed", "caption changed, same tags"],
                [[model, c["images"], f"{c['tags per image']:.1f}", percent(c["tag set changed"], c["images"]),
                  f"{c['tags flipped per image']:.2f}", f"{c['max score diff']:.4f}",
                  percent(c["caption changed"], c["images"]), percent(c["caption changed, same tags"], c["images"])]
                 for model, c in rates.items()])
    print()
    print_table([f"Tag2Text stage ({label})", "batch", "fp32", "bf16", "fp32 / bf16"],
                [[stage, batch, f"{t_full:.2f} s", f"{t_half:.2f} s", f"{ratio:.2f}×"]
                 for batch, rows in speed.items() for stage, (t_full, t_half, ratio) in rows.items()])
    if prax:
        print()
        print_table(["PraX listener (bundled)", "held-out RSA specs", "top-1 fp32", "top-1 bf16", "top guess changed",
                     "fp32", "bf16", "fp32 / bf16"],
                    [[f"`{name}` ({args.prax_samples} samples per spec)", p["specs"], f"{p['top-1 fp32']:.2f}",
                      f"{p['top-1 bf16']:.2f}", percent(p["top guess changed"], p["specs"]), f"{p['fp32 s']:.1f} s",
                      f"{p['bf16 s']:.1f} s", f"{p['fp32 s'] / p['bf16 s']:.2f}×"] for name, p in prax.items()])

if __name__ == "__main__":
    main()
