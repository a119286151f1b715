"""benchmarks/molm3d_llm_cpu.py in its smoke mode (tiny sizes): every request kind with both decodings, in order,
with times that add up (no speed is asserted: speeds are the benchmark's, in BENCHMARKS.md)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "molm3d_llm_cpu.py"


def test_smoke_run_measures_every_request_with_both_decodings():
    done = subprocess.run([sys.executable, str(SCRIPT), "--smoke"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line.strip("|").split(" | ") for line in done.stdout.splitlines()
            if line.startswith("| ") and not line.startswith("| request")]
    assert [(r[0].strip(), r[1]) for r in rows] == [(kind, decoding) for kind in ("description", "property (LogP)",
                                                                                 "free question")
                                                    for decoding in ("official", "fast")]
    for row in rows:
        first_token, first_words, _, tokens, whole = (float(re.match(r"[\d.]+", cell).group()) for cell in row[2:])
        assert first_token <= first_words <= whole and tokens >= 16  # random weights run to the token limit
    assert "peak memory of the process" in done.stdout
