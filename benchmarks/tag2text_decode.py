"""Tag2Text on CPU: per-stage times of our pipeline at batch 1 and 8, and caption decoding with vs without the KV cache.

Run: python benchmarks/tag2text_decode.py [--size full|small] [--repeats 3] [--threads 2]

One random model (seeded; full size by default: Swin-B 384, 372M parameters), the same process and the same inputs
for every variant; medians of the repeats. Stages: image encoder (Swin-B), tagging head (3,429 label queries ->
tag logits), tag encoder, caption decoding (3 beams, max_length 30, min_length 10 as in the official comparison),
and the whole call (``predict_pixels``: tags + caption). The cached and uncached decodes (max_length 50, the demo's
and the official inference script's) are timed alternately and their ratio taken per pair; both are forced to the
full ``max_length`` (min_length = max_length) so that they do identical work per step; the uncached variant
re-runs the whole prefix every step, which is what the official code does under current transformers. For the
official code itself, see ``benchmarks/tag2text_official.py``.
The machine's load average is printed: on a shared machine other processes skew absolute numbers (ratios less so).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from apps.tag2text.config import BertSize, Tag2TextConfig  # noqa: E402
from apps.tag2text.decoding import beam_search  # noqa: E402
from apps.tag2text.model import build_model  # noqa: E402
from apps.tag2text.pipeline import Tag2TextPipeline, class_thresholds  # noqa: E402
from benchmarks.common import interleaved_times, median_time  # noqa: E402
from tests.fixtures.tiny_tag2text import init_random  # noqa: E402

SMALL = Tag2TextConfig(
    embed_dim=64, depths=(2, 2, 6, 2), num_heads=(2, 4, 8, 16),
    text=BertSize(hidden_size=384, num_hidden_layers=6, num_attention_heads=6, intermediate_size=1536),
    tagging=BertSize(hidden_size=384, num_hidden_layers=2, num_attention_heads=4, intermediate_size=1536),
)
CACHE_MAX_LENGTH = 50
TAGS = ["dog", "beach", "frisbee", "sky", "sand", "ocean", "wave", "person"]


def paired_times(first, second, repeats: int) -> tuple[float, float, float]:
    """Medians of ``first`` and ``second`` timed alternately (so load drift hits both), and the median ratio."""
    times = interleaved_times({"first": first, "second": second}, repeats)
    a, b = times["first"], times["second"]
    return statistics.median(a), statistics.median(b), statistics.median(x / y for x, y in zip(a, b, strict=True))


def stage_calls(pipe: Tag2TextPipeline, pixels: torch.Tensor, full_length: bool = False) -> dict[str, Callable]:
    """The stages of one call on ``pixels`` (cast to the pipeline's dtype) as callables. ``full_length``: decoding is
    forced to the full max_length (min_length = max_length), so that two precisions decode the same number of steps."""
    model, c = pipe.model, pipe.config
    pixels = pixels.to(pipe.dtype)
    thresholds = class_thresholds(c)
    with torch.inference_mode():
        embeds = model.visual_encoder(pixels)
        tags = [TAGS] * len(pixels)
        encoded = pipe.encode_tags(embeds, tags)
    min_length = c.max_length if full_length else c.min_length
    decoding = (f"caption decoding ({c.max_length - len(pipe.prompt_ids)} steps)" if full_length
                else "caption decoding (beam search)")

    @torch.inference_mode()
    def decode():
        return beam_search(model.text_decoder, encoded, pipe.prompt_ids, num_beams=c.num_beams,
                           max_length=c.max_length, min_length=min_length, eos_token_id=102)

    return {
        "image encoder (Swin-B)": torch.inference_mode()(lambda: model.visual_encoder(pixels)),
        "tagging head (3,429 queries)": torch.inference_mode()(lambda: model.tag_logits(embeds)),
        "tag encoder": torch.inference_mode()(lambda: pipe.encode_tags(embeds, tags)),
        decoding: decode,
        "whole call (tags + caption)": lambda: pipe.predict_pixels(pixels, [()] * len(pixels), thresholds),
    }


def stage_times(pipe: Tag2TextPipeline, pixels: torch.Tensor, repeats: int) -> dict[str, float]:
    return {stage: median_time(call, repeats, warmup=True) for stage, call in stage_calls(pipe, pixels).items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", choices=["small", "full"], default="full")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    config = replace(SMALL if args.size == "small" else Tag2TextConfig(), max_length=30, min_length=10)
    pipe = Tag2TextPipeline(init_random(build_model(config), seed=0))
    pixels = torch.randn(8, 3, config.image_size, config.image_size, generator=torch.Generator().manual_seed(0))
    load_before = os.getloadavg()[0]

    with torch.inference_mode():
        stages = {batch: stage_times(pipe, pixels[:batch], args.repeats) for batch in (1, 8)}
        # cache vs no cache: the demo's max_length (50, as the official inference script), and the same number of
        # steps for both (min_length = max_length)
        pipe.config = replace(config, max_length=CACHE_MAX_LENGTH, min_length=CACHE_MAX_LENGTH)
        embeds = pipe.model.visual_encoder(pixels[:1])
        tags = [TAGS[:3]]
        assert pipe.caption(embeds, tags, use_cache=True) == pipe.caption(embeds, tags, use_cache=False), \
            "cache changed the caption"
        t_nocache, t_cache, ratio = paired_times(lambda: pipe.caption(embeds, tags, use_cache=False),
                                                 lambda: pipe.caption(embeds, tags, use_cache=True), args.repeats)
        pipe.config = config

    params = sum(p.numel() for p in pipe.model.parameters())
    steps = CACHE_MAX_LENGTH - len(pipe.prompt_ids)
    print(f"Tag2Text CPU benchmark: {args.size} random model ({params / 1e6:.1f}M parameters), fp32, "
          f"torch {torch.__version__}, {args.threads} thread(s), {config.num_beams} beams, max_length "
          f"{config.max_length}, min_length {config.min_length}, {args.repeats} repeats (median), "
          f"load average {load_before:.2f} -> {os.getloadavg()[0]:.2f}")
    print()
    print("| stage | batch 1 | batch 8 | batch 8 per image | images/s at batch 8 vs 1 |")
    print("|---|---|---|---|---|")
    for stage in stages[1]:
        one, eight = stages[1][stage], stages[8][stage]
        print(f"| {stage} | {one:.2f} s | {eight:.2f} s | {eight / 8:.2f} s | {one * 8 / eight:.2f}x |")
    print()
    print("| benchmark | without KV cache | with KV cache | ratio | goal |")
    print("|---|---|---|---|---|")
    print(f"| caption decode, 1 image, {config.num_beams} beams, {steps} steps | {t_nocache:.2f} s | {t_cache:.2f} s "
          f"| {ratio:.1f}x faster | >= 3x |")


if __name__ == "__main__":
    main()
