"""Tag2Text on CPU: caption decoding with vs without the KV cache, and tagging throughput at batch 1 vs 8.

Run: python benchmarks/tag2text_decode.py [--size small|full] [--repeats 3] [--threads 1]

One random model (seeded), the same process and the same inputs for every variant; medians of the repeats, the
cached and uncached decodes timed alternately and their ratio taken per pair.
Decoding is forced to the full ``max_length`` (50 tokens with the 4-token prompt, 3 beams) in both variants so
they do identical work per step; the uncached variant re-runs the whole prefix every step, which is what the
official code does under current transformers. The machine's load average is printed: on a shared machine
other processes skew absolute numbers (ratios less so).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from apps.tag2text.config import BertSize, Tag2TextConfig  # noqa: E402
from apps.tag2text.model import build_model  # noqa: E402
from apps.tag2text.pipeline import Tag2TextPipeline  # noqa: E402
from benchmarks.common import median_time  # noqa: E402
from tests.fixtures.tiny_tag2text import init_random  # noqa: E402

SMALL = Tag2TextConfig(
    embed_dim=64, depths=(2, 2, 6, 2), num_heads=(2, 4, 8, 16),
    text=BertSize(hidden_size=384, num_hidden_layers=6, num_attention_heads=6, intermediate_size=1536),
    tagging=BertSize(hidden_size=384, num_hidden_layers=2, num_attention_heads=4, intermediate_size=1536),
)


def paired_times(first, second, repeats: int) -> tuple[float, float, float]:
    """Medians of ``first`` and ``second`` timed alternately (so load drift hits both), and the median ratio."""
    first()
    second()
    a, b = [], []
    for _ in range(repeats):
        for fn, out in ((first, a), (second, b)):
            start = time.perf_counter()
            fn()
            out.append(time.perf_counter() - start)
    return statistics.median(a), statistics.median(b), statistics.median(x / y for x, y in zip(a, b, strict=True))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", choices=["small", "full"], default="small")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    config = SMALL if args.size == "small" else Tag2TextConfig()
    config = replace(config, min_length=config.max_length)  # same number of steps with and without the cache
    pipe = Tag2TextPipeline(init_random(build_model(config), seed=0))
    rng = np.random.default_rng(123)
    images = [rng.integers(0, 256, (300, 400, 3), dtype=np.uint8) for _ in range(8)]
    load_before = os.getloadavg()[0]

    with torch.inference_mode():
        embeds = pipe.model.visual_encoder(pipe.pixel_values(images[:1]))
        tags = [["dog", "beach", "frisbee"]]
        cached_caption = pipe.caption(embeds, tags, use_cache=True)
        assert cached_caption == pipe.caption(embeds, tags, use_cache=False), "cache changed the caption"
        t_nocache, t_cache, ratio = paired_times(lambda: pipe.caption(embeds, tags, use_cache=False),
                                                 lambda: pipe.caption(embeds, tags, use_cache=True), args.repeats)

        def tag(batch):
            return lambda: pipe.model(pipe.pixel_values(images[:batch]))

        t_tag1 = median_time(tag(1), args.repeats, warmup=True)
        t_tag8 = median_time(tag(8), args.repeats, warmup=True)

    params = sum(p.numel() for p in pipe.model.parameters())
    steps = config.max_length - len(pipe.prompt_ids)
    print(f"Tag2Text CPU benchmark: {args.size} random model ({params / 1e6:.1f}M parameters), "
          f"torch {torch.__version__}, {args.threads} thread(s), {args.repeats} repeats (median), "
          f"load average {load_before:.2f} -> {os.getloadavg()[0]:.2f}")
    print()
    print("| benchmark | without KV cache | with KV cache | ratio | goal |")
    print("|---|---|---|---|---|")
    print(f"| caption decode, 1 image, {config.num_beams} beams, {steps} steps | {t_nocache:.2f} s | {t_cache:.2f} s "
          f"| {ratio:.1f}x faster | >= 3x |")
    print()
    print("| tagging (Swin + recognition decoder) | images/s |")
    print("|---|---|")
    print(f"| batch 1 | {1 / t_tag1:.2f} |")
    print(f"| batch 8 | {8 / t_tag8:.2f} |")
    print(f"| batch 8 / batch 1 | {t_tag1 * 8 / t_tag8:.2f}x |")


if __name__ == "__main__":
    main()
