"""benchmarks/molm3d_attention_cpu.py in its smoke mode (tiny sizes): each weights option in its own process, both
decodings, sdpa (the baseline) against eager, with the speed-up computed from the two columns it shows (no speed is
asserted: speeds are the benchmark's, in BENCHMARKS.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.benchmarks.test_molm3d_llm_cpu import table

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "molm3d_attention_cpu.py"


def test_smoke_run_times_both_attentions_for_every_option_and_decoding():
    done = subprocess.run([sys.executable, str(SCRIPT), "--smoke", "--weights", "bf16,int8", "--tokens", "6"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = table(done.stdout, "weights | decoding")
    assert [(r[0], r[1]) for r in rows] == [(w, d) for w in ("bf16", "int8") for d in ("official", "fast")]
    for row in rows:
        sdpa, eager = (float(cell.removesuffix(" s")) for cell in row[2:4])
        assert sdpa > 0 and eager > 0
        speed_up = float(row[4].removesuffix("×"))  # from the unrounded times: within the columns' rounding
        assert (sdpa - 5e-4) / (eager + 5e-4) - 5e-3 <= speed_up <= (sdpa + 5e-4) / max(eager - 5e-4, 1e-9) + 5e-3
        assert row[7] in ("yes", "no")
