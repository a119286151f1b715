"""Hubs started as commands, the way an operator starts one: ``demohub serve`` in its own process (``start_hub``),
and a machine whose cores are busy with other work (``busy_cores``)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import requests

from benchmarks.common import proc_status, restart_peak

REPO = Path(__file__).resolve().parents[1]  # the checkout these tests belong to


def checkout_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's environment) for a command a test starts (the hub, the CLI, a script): it
    imports this checkout, the one the test belongs to, not whatever copy an editable install points at."""
    environment = dict(os.environ if env is None else env)
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), environment.get("PYTHONPATH")]))
    return environment


@dataclass
class RunningHub:
    url: str
    process: subprocess.Popen
    root: Path  # holds cwd/, hf-cache/, gradio/, state/ and hub.log

    @property
    def log(self) -> str:
        return (self.root / "hub.log").read_text(errors="replace")

    def status(self, field: str) -> int:
        """A /proc/<pid>/status figure in kB (VmRSS, VmHWM)."""
        return proc_status(field, self.process.pid) // 1024

    def reset_peak_memory(self) -> None:
        restart_peak(self.process.pid)

    def files_under(self, name: str) -> list[Path]:
        return sorted(p for p in (self.root / name).rglob("*") if p.is_file())


def start_hub(root: Path, args: list[str], env: dict[str, str | None], port: int, poll: float = 0.5,
              command: list[str] | None = None, timeout: float = 120) -> RunningHub:
    """``demohub serve --port PORT ARGS`` in its own process, in an empty working directory under ``root``, with its
    own caches; returns once ``/config`` answers (checked every ``poll`` seconds). ``command`` replaces
    ``python -m apps.cli serve`` (this checkout's) by another start command, run with ``env`` as given."""
    for name in ("cwd", "hf-cache", "gradio", "state", "converted"):
        (root / name).mkdir(parents=True, exist_ok=True)
    environment = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "PYTEST_CURRENT_TEST")}
    environment.update(HF_HUB_CACHE=str(root / "hf-cache"), GRADIO_TEMP_DIR=str(root / "gradio"),
                       DEMOHUB_STATE_DIR=str(root / "state"), DEMOHUB_CONVERTED_CACHE=str(root / "converted"),
                       GRADIO_ANALYTICS_ENABLED="False", HF_HUB_DISABLE_TELEMETRY="1", OMP_NUM_THREADS="1",
                       PYTHONUNBUFFERED="1")
    environment.update(env)
    environment = {k: v for k, v in environment.items() if v is not None}  # None in ``env``: unset
    if command is None:
        environment = checkout_env(environment)
        command = [sys.executable, "-m", "apps.cli", "serve"]
    log = open(root / "hub.log", "w")  # noqa: SIM115 - closed with the process
    process = subprocess.Popen([*command, "--port", str(port), *args],
                               cwd=root / "cwd", env=environment, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"demohub serve exited ({process.returncode}):\n{(root / 'hub.log').read_text()}")
        try:
            if requests.get(f"{url}/config", timeout=2).status_code in (200, 401):  # 401: a hub behind --auth
                return RunningHub(url, process, root)
        except requests.ConnectionError:
            pass
        time.sleep(poll)
    process.kill()
    raise AssertionError(f"demohub serve did not answer within {timeout:.0f} s:\n{(root / 'hub.log').read_text()}")


@contextmanager
def busy_cores():
    """Every core busy with other work (one spinning process per core), as on a shared server."""
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
    try:
        yield
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
