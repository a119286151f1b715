"""benchmarks/molm3d_llm_cpu.py in its smoke mode (tiny sizes): each weights option (bf16, int8, int4) in its own
process, every request kind with both decodings, in order, with times that add up, the quantised models counted
smaller by the pool, and agreement with bf16 measured (no speed is asserted: speeds are the benchmark's, in
BENCHMARKS.md)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "molm3d_llm_cpu.py"


def table(stdout: str, header: str) -> list[list[str]]:
    lines = stdout.split(f"| {header}", 1)[1].split("\n\n", 1)[0].splitlines()[2:]  # after the header and rule
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in lines if line.startswith("| ")]


def test_smoke_run_measures_every_option_request_and_decoding():
    done = subprocess.run([sys.executable, str(SCRIPT), "--smoke"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    options = table(done.stdout, "weights | model ready")
    assert [r[0] for r in options] == ["bf16", "int8", "int4"]
    units = {"KB": 1e3, "MB": 1e6, "GB": 1e9}
    pool_bytes = [float(r[2].split()[0]) * units[r[2].split()[1]] for r in options]
    assert pool_bytes[0] > pool_bytes[1] > pool_bytes[2] > 0
    assert options[0][6] == "(baseline)"
    assert all(0 <= float(r[6].rstrip("%")) <= 100 for r in options[1:])
    gib = [[float(cell.split()[0]) for cell in r[3:6]] for r in options]  # peak loading, resident, peak in all
    assert all(0 < loading <= whole and 0 < resident <= whole for loading, resident, whole in gib)
    rows = table(done.stdout, "weights | request")
    assert [(r[0], r[1], r[2]) for r in rows] == [(w, kind, decoding) for w in ("bf16", "int8", "int4")
                                                  for kind in ("description", "property (LogP)",
                                                               "property, 16 tokens", "new question, 16 tokens")
                                                  for decoding in ("official", "fast")]
    for row in rows:
        first_token, first_words, _, tokens, whole = (float(re.match(r"[\d.]+", cell).group()) for cell in row[3:8])
        assert first_token <= first_words <= whole and tokens >= 16  # the official minimum: 16 tokens
        assert row[9].split(" / ")[0] in ("yes", "no")
        answering, whole = float(row[10].split()[0]), gib[[r[0] for r in options].index(row[0])][2]
        assert 0 < answering <= whole  # the peak while answering, within the process's
    assert [r[9] for r in rows[:4:2]] == ["yes / yes", "yes / yes"]  # bf16's official answers are the reference
    cached = table(done.stdout, "weights | ready from the cache")  # int8, int4 loaded again from their cache
    assert [(r[0], r[6]) for r in cached] == [(w, d) for w in ("int8", "int4") for d in ("official", "fast")]
    assert all(r[9] == "yes" for r in cached), "the cached model answers as the model it was made from"
    assert all(float(r[3].split()[0]) > 0 and float(r[10].split()[0]) >= float(r[4].split()[0]) > 0 for r in cached)
