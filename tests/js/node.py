"""Node.js for the JavaScript client tests: the pinned ``@gradio/client`` in tests/js/node_modules (``npm ci``).

A missing Node.js or install fails the test with the sentence that says how to get it; nothing is skipped."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

JS_DIR = Path(__file__).resolve().parent
NODE_MODULES = JS_DIR / "node_modules"
CLIENT_DIST = NODE_MODULES / "@gradio" / "client" / "dist"
BROWSER_BUILD = CLIENT_DIST / "browser.js"  # the ESM build for browsers (self-contained but for a lazy import)
RESULT = "@@RESULT "  # prefix of the one line of JSON a script prints for its test


def pinned_client_version() -> str:
    return json.loads((JS_DIR / "package.json").read_text())["dependencies"]["@gradio/client"]


def node() -> str:
    """The ``node`` executable, with the pinned ``@gradio/client`` installed; otherwise the test fails saying how."""
    exe = shutil.which("node")
    if exe is None:
        pytest.fail("Node.js is missing: install Debian's nodejs and npm (`apt-get install -y nodejs npm`), then "
                    "`npm ci --prefix tests/js`; scripts/test does both.")
    installed = CLIENT_DIST.parent / "package.json"
    if not installed.exists():
        pytest.fail("@gradio/client is not installed for the JavaScript tests: run `npm ci --prefix tests/js` "
                    "(scripts/test does).")
    version = json.loads(installed.read_text())["version"]
    if version != pinned_client_version():
        pytest.fail(f"tests/js/node_modules holds @gradio/client {version}, not the pinned "
                    f"{pinned_client_version()}: run `npm ci --prefix tests/js`.")
    return exe


def run_node(script: Path, *args: str, cwd: Path | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
    """Run ``node script args`` (its bare imports resolve from tests/js/node_modules); fail the test on a non-zero
    exit with what the script printed."""
    env = {**os.environ, "NO_COLOR": "1"}
    proc = subprocess.run([node(), str(script), *args], cwd=cwd or JS_DIR, env=env, capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        pytest.fail(f"node {script.name} exited with {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def result_of(proc: subprocess.CompletedProcess):
    """The JSON a script printed on its ``@@RESULT`` line."""
    lines = [line for line in proc.stdout.splitlines() if line.startswith(RESULT)]
    assert len(lines) == 1, f"expected one {RESULT.strip()} line in:\n{proc.stdout[-3000:]}"
    return json.loads(lines[0][len(RESULT):])
