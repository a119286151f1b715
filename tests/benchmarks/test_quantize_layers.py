"""benchmarks/quantize_layers.py: its smoke mode times every option on a small layer and checks that the widened
products are the packed kernels' up to bf16's rounding."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "quantize_layers.py"
OPTIONS = ["bf16", "int8", "int4", "int4 kernel", "int4 widened"]


def test_smoke_mode_times_each_option_by_rows_and_the_widened_products_agree_with_the_kernels():
    done = subprocess.run([sys.executable, str(SCRIPT), "--smoke"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    header = next(line for line in lines if line.startswith("| rows |"))
    assert [cell.strip() for cell in header.strip("|").split("|")][2:7] == [f"{o} (ms, × bf16)" for o in OPTIONS]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines if re.match(r"\| \d+ \|", line)]
    assert [row[0] for row in rows] == ["1", "17", "62"]
    for row in rows:
        times = [re.fullmatch(r"([\d.]+) \(([\d.]+)×\)", cell) for cell in row[2:7]]
        assert all(times) and all(float(t.group(1)) > 0 for t in times), row
        assert times[0].group(2) == "1.00", "bf16 is the baseline"
        assert all(float(cell) < 2e-2 for cell in row[7:9]), f"a widened product left bf16's rounding: {row}"
    assert lines[0].startswith("Note: a layer of 512 x 256") and lines[-1].startswith("Note: bf16's best here: ")
