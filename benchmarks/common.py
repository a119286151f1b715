"""Helpers shared by the benchmark scripts."""

from __future__ import annotations

import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def median_time(fn: Callable[[], object], repeats: int, warmup: bool = False) -> float:
    """Median wall time of ``fn()`` over ``repeats`` runs (after one uncounted run if ``warmup``)."""
    if warmup:
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def interleaved_times(fns: dict[str, Callable[[], object]], repeats: int) -> dict[str, list[float]]:
    """Wall times of each of ``fns`` over ``repeats`` rounds, one call of each per round (after one uncounted call of
    each), so that the machine's load drift hits all of them alike."""
    for fn in fns.values():
        fn()
    times = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return times


def proc_status(field: str, pid: int | str = "self") -> int:
    """A memory figure of ``/proc/<pid>/status`` in bytes (VmRSS, VmHWM: the resident memory and its peak)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024  # Linux writes kB
    raise KeyError(f"{field} is not in /proc/{pid}/status")


def restart_peak(pid: int | str = "self") -> int:
    """Start a process's peak resident memory (VmHWM) again from its resident memory now (Linux >= 4.0); returns the
    peak up to here, in bytes."""
    peak = proc_status("VmHWM", pid)
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM := VmRSS
    return peak


def print_table(headers: list[str], rows: list[list[object]]) -> None:
    """A markdown table on stdout (what run_all.py copies into BENCHMARKS.md)."""
    print("| " + " | ".join(headers) + " |")
    print("|" + "---|" * len(headers))
    for row in rows:
        print("| " + " | ".join(str(cell) for cell in row) + " |")


def free_port() -> int:
    """A free TCP port on loopback (benchmarks serve only on this machine)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def fresh_hub(flags: list[str] = (), capture: bool = False) -> Iterator[tuple[subprocess.Popen, str, float]]:
    """``demohub serve`` of this checkout on a free port, offline, in a fresh temporary folder (its state and uploads
    there): (the process, its URL, when it was started); stopped and cleaned up on exit. ``capture``: its output on
    ``proc.stdout`` (text), else discarded."""
    port, folder = free_port(), tempfile.mkdtemp()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False", "GRADIO_TEMP_DIR": folder,
           "DEMOHUB_STATE_DIR": folder, "PYTHONPATH": str(ROOT)}
    output = subprocess.PIPE if capture else subprocess.DEVNULL
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "apps.cli", "serve", "--port", str(port), *flags], env=env,
                            cwd=folder, stdout=output, stderr=subprocess.STDOUT if capture else subprocess.DEVNULL,
                            text=True)
    try:
        yield proc, f"http://127.0.0.1:{port}", start
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(folder, ignore_errors=True)


def random_stable_diffusion(tiny: bool = False, vocab_size: int | None = None):
    """A diffusers ``StableDiffusionPipeline`` with random weights and the PNDM scheduler of the released GeoDiffusion
    nuImages checkpoints (no tokenizer: callers pass prompt embeddings). Stable Diffusion 1.5's published UNet, VAE
    and CLIP text encoder sizes (GeoDiffusion fine-tunes SD 1.5 and adds location tokens to the vocabulary), or tiny
    ones (``tiny``, for CPU smoke runs). ``vocab_size``: default 49408 + 65536 (the 256x256 location grid), tiny
    49408 + 16 (the tiny checkpoints' 4x4 grid). Speed does not depend on the weights' values."""
    from diffusers import AutoencoderKL, PNDMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    if tiny:
        unet = UNet2DConditionModel(sample_size=8, block_out_channels=(32, 64), layers_per_block=1,
                                    down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                                    up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), cross_attention_dim=32,
                                    attention_head_dim=8)
        vae = AutoencoderKL(block_out_channels=(8, 8, 8, 8), layers_per_block=1, latent_channels=4, norm_num_groups=8,
                            down_block_types=("DownEncoderBlock2D",) * 4, up_block_types=("UpDecoderBlock2D",) * 4)
        text = CLIPTextConfig(vocab_size=vocab_size or 49408 + 16, hidden_size=32, intermediate_size=37,
                              num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=77)
    else:
        unet = UNet2DConditionModel(sample_size=64, cross_attention_dim=768, attention_head_dim=8)
        vae = AutoencoderKL(block_out_channels=(128, 256, 512, 512), layers_per_block=2, latent_channels=4,
                            down_block_types=("DownEncoderBlock2D",) * 4, up_block_types=("UpDecoderBlock2D",) * 4)
        text = CLIPTextConfig(vocab_size=vocab_size or 49408 + 65536, hidden_size=768, intermediate_size=3072,
                              num_hidden_layers=12, num_attention_heads=12, max_position_embeddings=77)
    pndm = PNDMScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", skip_prk_steps=True,
                         set_alpha_to_one=False, steps_offset=1)
    sd = StableDiffusionPipeline(vae=vae, text_encoder=CLIPTextModel(text), tokenizer=None, unet=unet, scheduler=pndm,
                                 safety_checker=None, feature_extractor=None, requires_safety_checker=False)
    sd.set_progress_bar_config(disable=True)
    return sd
