"""benchmarks/geodiffusion_sampling.py runs: its smoke mode (tiny models) times both samplers through the real
GeoDiffusionPipeline, extrapolating from a short call or timing whole calls, and prints the table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "geodiffusion_sampling.py"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300)


def rows(stdout: str) -> list[list[str]]:
    lines = [line for line in stdout.splitlines() if line.startswith("| ") and not line.startswith("| image")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


EXTRAPOLATED = "extrapolated from 2 × 4-step calls per sampler"
CHECK = "whole call timed (check of the extrapolation)"
NAMES = [("64²", "PNDM (nuImages' official)", "4 (5)"), ("64²", "DPM-Solver++ (COCO-Stuff's official)", "3 (3)"),
         ("64²", "DPM-Solver++ (fast sampling)", "2 (2)")]


def test_smoke_mode_extrapolates_both_samplers_from_short_calls_and_checks_one_whole_call():
    done = run("--smoke")
    assert done.returncode == 0, done.stderr[-3000:]
    table = rows(done.stdout)
    assert [tuple(r[:3]) for r in table] == [*NAMES, NAMES[-1]]
    assert [r[7] for r in table] == [EXTRAPOLATED] * 3 + [CHECK]
    per_evaluation, fixed = float(table[0][3].split()[0]), float(table[0][4])
    # The fixed cost is a difference of two noisy timings (it was -1.23 s on a loaded machine): only the table's
    # arithmetic is checked, never its sign.
    assert per_evaluation > 0 and all(r[3:5] == table[0][3:5] for r in table[:3])
    seconds = [float(r[6]) for r in table]
    assert seconds[:3] == pytest.approx([fixed + n * per_evaluation for n in (5, 3, 2)], rel=0.02)
    assert [float(r[8].removesuffix("×")) for r in table] == pytest.approx([s / seconds[2] for s in seconds], rel=0.02)
    assert all(r[5].endswith(" ms") for r in table[:3]) and table[3][5] == "–"
    check_gap, check_median = table[3][3].split()
    assert 0 < float(check_gap) <= float(check_median.strip("()"))  # the check's own gaps: the least, then the median
    float(table[3][4])  # its fixed cost is a number (of either sign)
    assert "load average" in done.stdout and "2 threads" in done.stdout


def test_smoke_mode_can_time_whole_calls():
    done = run("--smoke", "--whole")
    assert done.returncode == 0, done.stderr[-3000:]
    table = rows(done.stdout)
    assert [tuple(r[:3]) for r in table] == NAMES and {r[7] for r in table} == {"whole call timed"}
    assert all(float(r[6]) > 0 for r in table) and table[2][8] == "1.00×"


def test_too_few_probe_steps_are_refused():
    done = run("--smoke", "--probe-steps", "2")
    assert done.returncode == 2 and "--probe-steps must be at least 3" in done.stderr
