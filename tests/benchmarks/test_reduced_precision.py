"""benchmarks/reduced_precision.py: its smoke mode (tiny sizes) measures every model and prints its three tables."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "reduced_precision.py"


def test_smoke_mode_prints_change_rates_speed_and_prax():
    done = subprocess.run([sys.executable, str(SCRIPT), "--smoke"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "bf16 on this CPU: " in out and ("native (" in out or "emulated (" in out)
    rows = [line for line in out.splitlines() if line.startswith("| ") and not line.startswith("|---")]
    changes = [r for r in rows if r.startswith("| Tag2Text, ")]
    assert [r.split(" | ")[0] for r in changes] == ["| Tag2Text, tiny official-layout checkpoint (noise pictures)",
                                                     "| Tag2Text, smoke-test model, random weights (noise tensors)"]
    for row in changes:
        shares = [int(a) / int(b) for a, b in re.findall(r"(\d+) of (\d+)", row)]
        assert len(shares) == 3 and all(0 <= s <= 1 for s in shares), row
    speed = [r for r in rows if re.match(r"\| (image encoder|tagging head|tag encoder|caption decoding|whole call)", r)]
    assert len(speed) == 5 * 2  # five stages at batches 1 and 2
    assert all(float(re.search(r"\| ([\d.]+)× \|$", r).group(1)) > 0 for r in speed), speed
    prax = [r for r in rows if r.startswith("| `tiny-")]
    assert [r.split("`")[1] for r in prax] == ["tiny-literal", "tiny-pragmatic"]
    assert all(re.search(r"\| 3 \| [01]\.\d\d \| [01]\.\d\d \| \d+% \(\d of 3\) \|", r) for r in prax), prax
