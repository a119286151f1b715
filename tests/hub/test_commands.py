"""The README's two commands are the ones that work: CI (.ci/run) runs exactly the README's test command, which sets
itself up (scripts/test), and both install at the pinned versions of constraints.txt. What scripts/test installs is
tested by running it: CI runs it on a fresh clone of every submission (no string search of the script here)."""

from __future__ import annotations

import re
from pathlib import Path

from shared.weights import REPO_ROOT


def readme_commands() -> list[str]:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```bash\n(.*?)```", readme, re.S).group(1)
    return [line.split("#")[0].strip() for line in block.strip().splitlines()]


def test_the_readme_starts_with_the_start_and_the_test_command():
    venv, cpu_torch, start, test = readme_commands()
    assert venv == "python3 -m venv .venv && . .venv/bin/activate"
    # the CPU build of exactly the torch the stack pins, before the requirements (which would pull the CUDA build)
    pin = re.search(r"^torch==\S+$", (REPO_ROOT / "constraints.txt").read_text(encoding="utf-8"), re.M).group(0)
    assert cpu_torch == f"pip install {pin} --extra-index-url https://download.pytorch.org/whl/cpu"
    assert start == "pip install -r requirements.txt -c constraints.txt && demohub serve"
    assert test == "scripts/test"


def test_ci_runs_exactly_the_readme_test_command_then_the_mutants():
    ci = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    commands = [line.strip() for line in ci.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert commands[-2:] == [readme_commands()[-1], "exec scripts/mutants"]
    assert commands[0] == "set -euo pipefail", "a failing suite stops CI before the mutants"
    assert not [c for c in commands if re.search(r"\b(pip|npm|apt-get|venv)\b", c)], "setup belongs in scripts/test"


def test_a_command_a_test_starts_imports_this_checkout(tmp_path):
    """Every hub, CLI and script a test starts gets ``checkout_env``: from an empty folder, its ``apps`` and
    ``shared`` are this checkout's, whatever copy an editable install of the environment points at."""
    import subprocess
    import sys

    from tests.commands import REPO, checkout_env

    done = subprocess.run([sys.executable, "-c", "import apps, shared; print(apps.__file__); print(shared.__file__)"],
                          capture_output=True, text=True, cwd=tmp_path, env=checkout_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    assert all(Path(line).resolve().is_relative_to(REPO) for line in done.stdout.split()), done.stdout
