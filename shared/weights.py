"""Resolve a WeightSet to a local folder: bundled -> Hugging Face cache -> download.

Order (DESIGN.md): ``$DEMOHUB_CHECKPOINTS/<demo>/<set>`` or the bundled ``checkpoints/<demo>/<set>``, then the
HF cache with ``local_files_only=True`` (no network), then ``snapshot_download`` at the pinned revision unless
``HF_HUB_OFFLINE=1``. A miss raises ``WeightsUnavailable`` naming the repo, the size and the command to run.
"""

from __future__ import annotations

import fnmatch
import os
from enum import Enum
from pathlib import Path

from shared.errors import WeightsUnavailable
from shared.registry import Demo, WeightSet

REPO_ROOT = Path(__file__).resolve().parents[1]
BUNDLED_ROOT = REPO_ROOT / "checkpoints"
_TRUE = {"1", "true", "yes", "on"}


class WeightState(str, Enum):
    BUNDLED = "bundled"
    CACHED = "cached"
    DOWNLOADABLE = "downloadable"
    UNAVAILABLE = "unavailable"

    @property
    def here(self) -> bool:
        """On this machine: usable with no download."""
        return self in (WeightState.BUNDLED, WeightState.CACHED)


def offline() -> bool:
    """Read at call time (huggingface_hub reads its constant once, at import)."""
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in _TRUE


def hf_cache_dir() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")
    return Path(home) / "hub"


def download_command(demo_id: str, ws: WeightSet) -> str:
    return f"demohub download {demo_id} --weights {ws.name}"


def local_folder(demo_id: str, ws: WeightSet) -> Path | None:
    """``$DEMOHUB_CHECKPOINTS/<demo>/<set>`` or the bundled ``checkpoints/<demo>/<set>``, if present."""
    roots = [Path(p) for p in os.environ.get("DEMOHUB_CHECKPOINTS", "").split(os.pathsep) if p]
    for root in [*roots, BUNDLED_ROOT]:
        folder = root / demo_id / ws.name
        if folder.is_dir() and any(folder.iterdir()):
            return folder
    return None


def _complete(folder: Path, ws: WeightSet) -> bool:
    """Every literal pattern is present and every glob pattern matches at least one file."""
    files = [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()]
    for pattern in ws.allow_patterns:
        if not any(fnmatch.fnmatch(f, pattern) for f in files):
            return False
    return bool(files)


def cached_folder(ws: WeightSet) -> Path | None:
    """The snapshot folder in the HF cache at the pinned revision, with no network, or None."""
    if not ws.repo_id:
        return None
    from huggingface_hub import snapshot_download

    try:
        folder = Path(snapshot_download(
            ws.repo_id, revision=ws.revision, allow_patterns=list(ws.allow_patterns) or None,
            cache_dir=hf_cache_dir(), local_files_only=True,
        ))
    except (FileNotFoundError, OSError, ValueError):  # LocalEntryNotFoundError is a FileNotFoundError
        return None
    return folder if _complete(folder, ws) else None


def state(demo_id: str, ws: WeightSet) -> WeightState:
    if local_folder(demo_id, ws) is not None:
        return WeightState.BUNDLED
    if cached_folder(ws) is not None:
        return WeightState.CACHED
    if ws.repo_id and not offline():
        return WeightState.DOWNLOADABLE
    return WeightState.UNAVAILABLE


def unavailable(demo_id: str, ws: WeightSet, reason: str) -> WeightsUnavailable:
    if not ws.repo_id:
        return WeightsUnavailable(
            f"The {demo_id} weights '{ws.name}' are not bundled in this installation ({reason}). "
            f"Reinstall from a full clone or set DEMOHUB_CHECKPOINTS to a folder holding {demo_id}/{ws.name}/."
        )
    return WeightsUnavailable(
        f"The {demo_id} weights '{ws.name}' ({ws.repo_id}@{ws.revision[:12]}, {ws.size_text}) are not available: "
        f"{reason}. On a machine with internet run `{download_command(demo_id, ws)}` "
        f"(or copy the Hugging Face cache to {hf_cache_dir()}), then try again."
    )


def download(demo_id: str, ws: WeightSet) -> Path:
    """Fetch the weight set into the HF cache at its pinned revision, with a progress bar."""
    if not ws.repo_id:
        raise unavailable(demo_id, ws, "it has no Hub repository to download from")
    if offline():
        raise unavailable(demo_id, ws, "HF_HUB_OFFLINE=1 is set and they are not in the cache")
    from huggingface_hub import snapshot_download

    try:
        folder = snapshot_download(
            ws.repo_id, revision=ws.revision, allow_patterns=list(ws.allow_patterns) or None,
            cache_dir=hf_cache_dir(),
        )
    except Exception as error:  # network, auth, revision: all end in the same actionable message
        raise unavailable(demo_id, ws, f"the download failed ({type(error).__name__}: {error})") from error
    return Path(folder)


def resolve(demo_id: str, ws: WeightSet, allow_download: bool = True) -> Path:
    """The local folder holding ``ws``, downloading it only if allowed and online."""
    folder = local_folder(demo_id, ws) or cached_folder(ws)
    if folder is not None:
        return folder
    if not allow_download:
        raise unavailable(demo_id, ws, "they are not in the cache and downloading is turned off")
    return download(demo_id, ws)



def summary(demo: Demo) -> str:
    """One line on a demo's weights for a landing-page card."""
    states = [state(demo.id, ws) for ws in demo.weight_sets]
    ready = sum(s.here for s in states)
    if ready:
        return f"weights: {ready} of {len(states)} sets ready offline"
    if any(s is WeightState.DOWNLOADABLE for s in states):
        smallest = min((ws for ws in demo.weight_sets if ws.repo_id), key=lambda ws: ws.size_bytes)
        return f"weights: download needed (from {smallest.size_text})"
    return "weights: not available offline"
