"""benchmarks/gpu_check.py is ready for a CUDA machine: its CPU smoke mode (tiny sizes) runs every section here."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import torch

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_check.py"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300)


def test_smoke_mode_measures_every_model_and_prints_the_table():
    done = run("--smoke")
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ") and not line.startswith("| model")]
    assert [r.split(" | ")[0].strip("| ") for r in rows] == (["Tag2Text"] * 2 + ["GeoDiffusion"] * 2 + ["3D-MoLM"] * 4
                                                             + ["MERT"] * 4)
    values = [float(re.search(r"\| ([\d.e+-]+) (img/s|s|mol/s|tok/s|%) \|", r).group(1)) for r in rows]
    assert all(v > 0 for v in values), rows
    # fp32 against fp32: every top-1 label is the reference's (the check compares, it does not assume)
    assert rows[-1].startswith("| MERT | top-1 labels equal to fp32") and "| 100 % |" in rows[-1]
    # the static KV cache the 3D-MoLM pipeline decodes with on a GPU gives the dynamic cache's tokens (on the CPU)
    static = next(r for r in rows if "static-cache tokens equal" in r)
    assert "| 100 % |" in static, static
    assert "DPM-Solver++" in done.stdout and "batch 8" in done.stdout and "inputs_embeds" in done.stdout


def test_without_cuda_it_says_what_to_do():
    if torch.cuda.is_available():
        return  # on a GPU machine the full run is the check
    done = run("--quick")
    assert done.returncode == 2 and "No CUDA device" in done.stderr and "--smoke" in done.stderr
