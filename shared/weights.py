"""Resolve a WeightSet to a local folder: bundled -> Hugging Face cache -> download.

Order: ``$DEMOHUB_CHECKPOINTS/<demo>/<set>`` or the bundled ``checkpoints/<demo>/<set>``, then the HF cache with
``local_files_only=True`` (no network), then ``snapshot_download`` unless ``HF_HUB_OFFLINE=1``. A miss raises
``WeightsUnavailable`` naming the repo, the size and the command to run.

Revisions: a weight set names a branch (``main``) or a full commit SHA. A download records the commit it received in
the weights lock file (``checkpoints/weights.lock``, or ``~/.cache/demohub/weights.lock`` where the checkout is
read-only, or ``$DEMOHUB_WEIGHTS_LOCK``); from then on every resolve and download of that set uses that commit, so
a moving branch on the Hub cannot change the weights under a running hub. ``pin(demo_id, ws)`` says which it is.
"""

from __future__ import annotations

import contextvars
import fnmatch
import json
import math
import os
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path

from shared.errors import WeightsUnavailable, log, report
from shared.registry import Demo, WeightSet, human_bytes

REPO_ROOT = Path(__file__).resolve().parents[1]
BUNDLED_ROOT = REPO_ROOT / "checkpoints"
_TRUE = {"1", "true", "yes", "on"}
DISK_MARGIN = 0.10
DISK_RESERVE_BYTES = 1_000_000_000


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


LOCK_NAME = "weights.lock"
_lock_file_lock = threading.Lock()


def _state_dir() -> Path:
    return Path(os.environ.get("DEMOHUB_STATE_DIR") or Path.home() / ".cache" / "demohub")


def lock_paths() -> list[Path]:
    """Lock files read, first match wins: ``$DEMOHUB_WEIGHTS_LOCK``, else the checkout's then the user cache's."""
    if os.environ.get("DEMOHUB_WEIGHTS_LOCK"):
        return [Path(os.environ["DEMOHUB_WEIGHTS_LOCK"])]
    return [BUNDLED_ROOT / LOCK_NAME, _state_dir() / LOCK_NAME]


def lock_path() -> Path:
    """The lock file a download writes: the checkout's ``checkpoints/weights.lock`` if writable, else the cache's."""
    if os.environ.get("DEMOHUB_WEIGHTS_LOCK"):
        return Path(os.environ["DEMOHUB_WEIGHTS_LOCK"])
    if _writable(BUNDLED_ROOT):
        return BUNDLED_ROOT / LOCK_NAME
    return _state_dir() / LOCK_NAME


def _writable(folder: Path) -> bool:
    return folder.is_dir() and os.access(folder, os.W_OK)


def _read_lock(path: Path) -> dict[str, dict]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        raise WeightsUnavailable(f"The weights lock file {path} cannot be read ({error}); fix or delete it.") from None
    return data.get("weights", {}) if isinstance(data, dict) else {}


def _is_sha(revision: str | None) -> bool:
    return bool(revision) and len(revision) == 40 and all(c in "0123456789abcdef" for c in revision)


@dataclass(frozen=True)
class Pin:
    """Which commit a weight set resolves to. ``source``: "registry" (a SHA in the demo's registration), "lock" (a
    recorded download), "bundled" (a folder shipped in checkpoints/), or "unpinned" (a moving branch)."""

    revision: str
    source: str

    @property
    def pinned(self) -> bool:
        return self.source != "unpinned"

    def __str__(self) -> str:
        if self.source == "bundled":
            return "bundled"
        if self.source == "unpinned":
            return f"unpinned ({self.revision})"
        return f"pinned {self.revision[:12]} ({self.source})"


def pin(demo_id: str, ws: WeightSet) -> Pin:
    if not ws.repo_id:
        return Pin("", "bundled")
    if _is_sha(ws.revision):
        return Pin(ws.revision, "registry")
    for path in lock_paths():
        entry = _read_lock(path).get(f"{demo_id}/{ws.name}")
        if entry and entry.get("repo_id") == ws.repo_id and _is_sha(entry.get("revision")):
            return Pin(entry["revision"], "lock")
    return Pin(ws.revision, "unpinned")


def record_pin(demo_id: str, ws: WeightSet, commit: str) -> Path | None:
    """Write the commit a download received into the lock file (unless the set is pinned already); its path."""
    if not _is_sha(commit) or pin(demo_id, ws).pinned:
        return None
    path = lock_path()
    with _lock_file_lock:
        entries = _read_lock(path)
        entries[f"{demo_id}/{ws.name}"] = {
            "repo_id": ws.repo_id, "revision": commit, "branch": ws.revision,
            "recorded": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"comment": "Commits the demo weights were downloaded at; `demohub download` writes this. "
                                      "Commit it to pin the weights (a Space reads it too).",
                           "weights": dict(sorted(entries.items()))}, indent=2) + "\n"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    return path


def local_folder(demo_id: str, ws: WeightSet) -> Path | None:
    """``$DEMOHUB_CHECKPOINTS/<demo>/<set>`` or the bundled ``checkpoints/<demo>/<set>``, if present."""
    roots = [Path(p) for p in os.environ.get("DEMOHUB_CHECKPOINTS", "").split(os.pathsep) if p]
    for root in [*roots, BUNDLED_ROOT]:
        folder = root / demo_id / ws.name
        if folder.is_dir() and any(folder.iterdir()):
            return folder
    return None


def _weight_files(folder: Path, ws: WeightSet) -> list[str]:
    """The files under ``folder`` (relative, POSIX) that the weight set's patterns select (all, if it has none)."""
    files = [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()]
    if not ws.allow_patterns:
        return files
    return [f for f in files if any(fnmatch.fnmatch(f, pattern) for pattern in ws.allow_patterns)]


def _complete(folder: Path, ws: WeightSet) -> bool:
    """Every literal pattern is present and every glob pattern matches at least one file."""
    files = _weight_files(folder, ws)
    return bool(files) and all(any(fnmatch.fnmatch(f, pattern) for f in files) for pattern in ws.allow_patterns)


def cached_folder(demo_id: str, ws: WeightSet) -> Path | None:
    """The snapshot folder in the HF cache at the set's revision (its pin, else its branch), no network, or None."""
    if not ws.repo_id:
        return None
    from huggingface_hub import snapshot_download

    try:
        folder = Path(snapshot_download(
            ws.repo_id, revision=pin(demo_id, ws).revision, allow_patterns=list(ws.allow_patterns) or None,
            repo_type=ws.repo_type, cache_dir=hf_cache_dir(), local_files_only=True,
        ))
    except (FileNotFoundError, OSError, ValueError):  # LocalEntryNotFoundError is a FileNotFoundError
        return None
    return folder if _complete(folder, ws) else None


def state(demo_id: str, ws: WeightSet, ask_hub: bool = True) -> WeightState:
    """Where the weights are: here (bundled or cached), downloadable (a Hub repository, the Hub answers and no
    download of them failed in the last ``RETRY_SECONDS``), or unavailable. Every page message reads this.
    ``ask_hub=False`` (nobody here may download) never contacts the Hub: what is not here is unavailable."""
    if local_folder(demo_id, ws) is not None:
        return WeightState.BUNDLED
    if cached_folder(demo_id, ws) is not None:
        return WeightState.CACHED
    if ask_hub and ws.repo_id and hub_problem() is None and retry_minutes(demo_id, ws) is None:
        return WeightState.DOWNLOADABLE
    return WeightState.UNAVAILABLE


def retry_minutes(demo_id: str, ws: WeightSet) -> int | None:
    """Minutes until this server tries the weight set's download again after a failure (None: nothing failed)."""
    return _downloads.retry_minutes(_download_key(demo_id, ws)) if ws.repo_id else None


DEFAULT_ENDPOINT = "https://huggingface.co"
HUB_PROBE_SECONDS = 2.0  # how long the quick probe waits for the Hub to answer
HUB_PROBE_TTL = 300  # seconds an answer is remembered


class _HubProbe:
    """Can this machine reach the Hub? One quick request per endpoint, its answer remembered for ``HUB_PROBE_TTL``."""

    def __init__(self):
        self.lock = threading.Lock()
        # endpoint -> (when, why not in a sentence, and with the network library's reason; None: it answered)
        self.answers: dict[str, tuple[float, tuple[str, str] | None]] = {}

    def problem(self, endpoint: str, timeout: float) -> tuple[str, str] | None:
        with self.lock:  # one probe at a time: a page render that finds it running waits for its answer
            known = self.answers.get(endpoint)
            if known is not None and time.monotonic() - known[0] < HUB_PROBE_TTL:
                return known[1]
            answer = _probe(endpoint, timeout)
            if answer is not None:  # the library's words (an errno) are the operator's: the log and `doctor` have them
                log.warning("the Hugging Face Hub cannot be reached: %s", answer[1])
            self.answers[endpoint] = (time.monotonic(), answer)
            return answer

    def forget(self) -> None:
        with self.lock:
            self.answers.clear()


_hub_probe = _HubProbe()


def forget_hub_probe() -> None:
    """Ask the Hub afresh on the next state (tests; an operator's `demohub doctor`)."""
    _hub_probe.forget()


def hub_problem(timeout: float = HUB_PROBE_SECONDS, detail: bool = False) -> str | None:
    """Why the Hugging Face Hub cannot be reached from here (None: it can): ``HF_HUB_OFFLINE=1``, or a quick request
    to the endpoint that got no answer within ``timeout`` (any HTTP answer counts), remembered for 5 minutes. A
    sentence for a page; with ``detail`` (`demohub doctor`) the network library's reason too, e.g. an errno."""
    if offline():
        return "HF_HUB_OFFLINE=1 is set"
    answer = _hub_probe.problem(hub_endpoint() or DEFAULT_ENDPOINT, timeout)
    return None if answer is None else answer[1] if detail else answer[0]


def _probe(endpoint: str, timeout: float) -> tuple[str, str] | None:
    """None when ``endpoint`` answered; else (the sentence, the sentence with the library's reason)."""
    import urllib.error
    import urllib.request

    try:
        urllib.request.urlopen(urllib.request.Request(endpoint, method="HEAD"), timeout=timeout).close()
    except urllib.error.HTTPError:
        return None  # it answered
    except (OSError, ValueError) as error:  # URLError, timeouts, refused connections, a malformed endpoint
        sentence = f"{endpoint} did not answer within {timeout:g} s"
        return sentence, f"{sentence} ({getattr(error, 'reason', error)})"
    return None


def unavailable(demo_id: str, ws: WeightSet, reason: str) -> WeightsUnavailable:
    """The sentence for weights that are not here; it names no server path (visitors read it too)."""
    if not ws.repo_id:
        return WeightsUnavailable(
            f"The {demo_id} weights '{ws.name}' are not bundled in this installation ({reason}). "
            f"Reinstall from a full clone or set DEMOHUB_CHECKPOINTS to a folder holding {demo_id}/{ws.name}/."
        )
    return WeightsUnavailable(
        f"The {demo_id} weights '{ws.name}' ({ws.repo_id}@{pin(demo_id, ws).revision[:12]}, {ws.size_text}) are not "
        f"available: "
        f"{reason}. The operator can fetch them with `{download_command(demo_id, ws)}` on a machine with internet "
        "(or copy a Hugging Face cache that holds them), then try again."
    )


def hub_endpoint() -> str | None:
    """``HF_ENDPOINT``, read at call time (huggingface_hub reads it once, at import)."""
    return os.environ.get("HF_ENDPOINT") or None


def required_bytes(download_bytes: int) -> int:
    """Free disk a download needs: its size, 10 % for temporary files, and 1 GB left for everything else."""
    return int(download_bytes * (1 + DISK_MARGIN)) + DISK_RESERVE_BYTES


def free_bytes(folder: Path) -> int:
    """Free bytes on the disk that holds ``folder`` (or its nearest existing parent)."""
    existing = next(p for p in (folder, *folder.parents) if p.exists())
    return shutil.disk_usage(existing).free


class _Downloads:
    """Hub-wide download rules: one at a time, and a failure is remembered for ``RETRY_SECONDS``."""

    RETRY_SECONDS = 600

    def __init__(self):
        self.lock = threading.Lock()
        self.failures: dict[tuple, tuple[float, str]] = {}

    def retry_minutes(self, key: tuple) -> int | None:
        """Minutes until a failed download may be tried again (None: none failed, or its time is over)."""
        failed = self.failures.get(key)
        if failed is None:
            return None
        left = self.RETRY_SECONDS - (time.monotonic() - failed[0])
        if left <= 0:
            self.failures.pop(key, None)  # another thread may have dropped it too
            return None
        return math.ceil(left / 60)

    def remembered_failure(self, key: tuple) -> str | None:
        minutes = self.retry_minutes(key)
        if minutes is None:
            return None
        return f"{self.failures[key][1]} This server will not try again for another {minutes} minute(s)."


_downloads = _Downloads()


Progress = Callable[[int, int], object]  # (bytes written, bytes expected)


def download(demo_id: str, ws: WeightSet, progress: Progress | None = None) -> Path:
    """Fetch the weight set into the HF cache at its pin (else its branch), after checking that the disk can hold
    it, and record the commit received in the lock file.

    One download runs at a time in the process; a failure is remembered for 10 minutes, so repeated requests do not
    hammer the Hub or the disk. The commit that was sized is the commit that is downloaded. ``progress(done, total)``
    hears the bytes as they are written (from huggingface_hub's worker threads).
    """
    if not ws.repo_id:
        raise unavailable(demo_id, ws, "it has no Hub repository to download from")
    if offline():
        raise unavailable(demo_id, ws, "HF_HUB_OFFLINE=1 is set and they are not in the cache")
    key = _download_key(demo_id, ws)
    remembered = _downloads.remembered_failure(key)
    if remembered:
        raise WeightsUnavailable(remembered)
    if not _downloads.lock.acquire(blocking=False):
        raise WeightsUnavailable(f"Another download is running on this server, so the {demo_id} weights "
                                 f"'{ws.name}' ({ws.size_text}) cannot start now; try again in a few minutes.")
    try:
        return _download(demo_id, ws, progress)
    except WeightsUnavailable as error:
        _downloads.failures[key] = (time.monotonic(), str(error))
        raise
    finally:
        _downloads.lock.release()


def _download_key(demo_id: str, ws: WeightSet) -> tuple:
    return ws.repo_type, ws.repo_id, pin(demo_id, ws).revision, ws.allow_patterns


def _download(demo_id: str, ws: WeightSet, progress: Progress | None) -> Path:
    from huggingface_hub import snapshot_download

    common = dict(allow_patterns=list(ws.allow_patterns) or None, repo_type=ws.repo_type, cache_dir=hf_cache_dir(),
                  endpoint=hub_endpoint())
    try:
        plan = snapshot_download(ws.repo_id, revision=pin(demo_id, ws).revision, dry_run=True, **common)
    except Exception as error:  # network, auth, revision: the log has the detail, the visitor a sentence
        raise unavailable(demo_id, ws, f"the Hugging Face Hub could not be reached or refused the request "
                                       f"(error id {report(error)})") from None
    if not plan:
        raise unavailable(demo_id, ws, f"{ws.repo_id} at {pin(demo_id, ws).revision[:12]} holds none of the files "
                                       "it needs")
    size = sum(f.file_size or 0 for f in plan if f.will_download)
    need, free = required_bytes(size), free_bytes(hf_cache_dir())
    if free < need:
        raise WeightsUnavailable(
            f"Not enough free disk for the {demo_id} weights '{ws.name}': the download is {human_bytes(size)}, so it "
            f"needs {human_bytes(need)} free (size + 10 % + 1 GB), and the disk has {human_bytes(free)}. "
            "The operator can free disk space or point HF_HUB_CACHE at a larger disk."
        )
    try:
        folder = snapshot_download(ws.repo_id, revision=plan[0].commit_hash,
                                   tqdm_class=_byte_reporter(progress) if progress else None, **common)
    except Exception as error:
        raise unavailable(demo_id, ws, f"the download failed (error id {report(error)}); nothing half-written "
                                       "is used") from None
    record_pin(demo_id, ws, plan[0].commit_hash)
    return Path(folder)


def _byte_reporter(progress: Progress):
    """A silent tqdm class for ``snapshot_download`` that passes its bytes-written bar on to ``progress``, in the
    caller's context: huggingface_hub updates it from worker threads, and Gradio finds the event in a contextvar."""
    from tqdm.auto import tqdm

    caller = contextvars.copy_context()

    class Discard:
        def write(self, text: str) -> None:
            pass

        def flush(self) -> None:
            pass

    class ByteReporter(tqdm):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, file=Discard(), **kwargs)

        def update(self, n=1):
            shown = super().update(n)
            if self.unit == "B" and str(self.desc).startswith("Reconstructing"):  # bytes written to the cache
                caller.copy().run(progress, int(self.n), int(self.total or 0))
            return shown

    return ByteReporter


def resolve(demo_id: str, ws: WeightSet, allow_download: bool = False, progress: Progress | None = None) -> Path:
    """The local folder holding ``ws``; downloading only if the caller is allowed to (operators, not visitors)."""
    folder = local_folder(demo_id, ws) or cached_folder(demo_id, ws)
    if folder is not None:
        return folder
    if not allow_download:
        if not ws.repo_id:
            raise unavailable(demo_id, ws, "the folder is missing")
        raise WeightsUnavailable(
            f"The {demo_id} weights '{ws.name}' ({ws.size_text}) are not on this server, and visitors cannot start "
            f"downloads here. The operator can fetch them with `{download_command(demo_id, ws)}`."
        )
    return download(demo_id, ws, progress)


def folder_bytes(folder: Path, ws: WeightSet) -> int:
    """Bytes of the weight set's files in ``folder``: the pool's memory hint before loading them."""
    return sum((folder / f).stat().st_size for f in _weight_files(folder, ws))


def summary(demo: Demo, downloads: bool = False) -> str:
    """What runs on this server now, for the hub's card (``downloads``: may visitors start one here)."""
    here = [ws.name for ws in demo.weight_sets if state(demo.id, ws, ask_hub=False).here]
    if here:
        return f"Runs here now, on {', '.join(here)}."
    smallest = min(demo.weight_sets, key=lambda ws: ws.size_bytes or math.inf)
    fetch = ("they download on first use" if downloads and any(
        state(demo.id, ws) is WeightState.DOWNLOADABLE for ws in demo.weight_sets) else "not on this server yet")
    size = smallest.size_text if len(demo.weight_sets) == 1 else f"from {smallest.size_text}"
    model = f"the model needs its weights ({size}), {fetch}"
    if demo.works_without_weights:
        return f"Runs here now: {demo.works_without_weights}; {model}."
    return model[0].upper() + model[1:] + "."
