"""Tag2Text batch intake: peak memory of reading a zip of large images, ours against a plain full decode.

Run: python benchmarks/upload_memory.py
Each case runs in a fresh process and reports its peak RSS growth (VmHWM after writing 5 to /proc/self/clear_refs).
Baseline, same run: every image of the zip opened and decoded at full size and kept, as the intake did before #12.
Cases: the review's zip (12 PNGs of 7000×7000, 1.9 MB), refused from its headers; 12 photos of 4000×3000 (JPEG),
accepted and reduced while decoding.
"""

from __future__ import annotations

import io
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]

MEASURE = """
import io, sys, zipfile
from pathlib import Path
sys.path.insert(0, {root!r})
from PIL import Image
from benchmarks.common import proc_status, restart_peak
from apps.tag2text import images
from shared.errors import UserInputError
restart_peak()
before = proc_status("VmRSS")
outcome = ""
if {mode!r} == "full":
    with zipfile.ZipFile({path!r}) as z:
        kept = [Image.open(io.BytesIO(z.read(i))).convert("RGB") for i in z.infolist()]
    outcome = f"{{len(kept)}} decoded at full size"
else:
    try:
        kept, _ = images.collect_images([{path!r}])
        outcome = f"{{len(kept)}} accepted, kept at {{kept[0].image.size[0]}}×{{kept[0].image.size[1]}}"
    except UserInputError as error:
        outcome = "refused: " + str(error).split(";")[0]
print((proc_status("VmHWM") - before) / 2**20, outcome)
"""


def write_zip(path: Path, image: Image.Image, fmt: str, count: int) -> Path:
    buffer = io.BytesIO()
    image.save(buffer, fmt, **({"compress_level": 9} if fmt == "PNG" else {"quality": 90}))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for i in range(count):
            archive.writestr(f"img_{i:02d}.{fmt.lower()}", buffer.getvalue())
    return path


def peak(path: Path, mode: str) -> tuple[float, str]:
    code = MEASURE.format(root=str(ROOT), path=str(path), mode=mode)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), " ".join(out[1:])


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="demohub-upload-memory-"))
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:3000, 0:4000]
    smooth = np.stack([x / 16, y / 12, (x + y) / 28], axis=-1)  # colour gradients plus sensor-like noise
    photo = Image.fromarray(np.clip(smooth + rng.normal(0, 6, smooth.shape), 0, 255).astype(np.uint8))
    cases = [("12 PNGs of 7000×7000 (one colour, as in the review)",
              write_zip(work / "bomb.zip", Image.new("RGB", (7000, 7000), (30, 120, 200)), "PNG", 12)),
             ("12 JPEG photos of 4000×3000", write_zip(work / "photos.zip", photo, "JPEG", 12))]
    print("| zip | size | full decode (baseline) | ours | ours vs baseline |")
    print("|---|---|---|---|---|")
    for name, path in cases:
        base, base_outcome = peak(path, "full")
        ours, outcome = peak(path, "ours")
        print(f"| {name} | {path.stat().st_size / 1e6:.2f} MB | {base:,.0f} MiB ({base_outcome}) | {ours:,.1f} MiB "
              f"({outcome}) | {ours / base:.3f}× |")


if __name__ == "__main__":
    main()
