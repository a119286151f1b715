"""The README's two commands are the ones that work: CI (.ci/run) runs exactly the README's test command, which sets
itself up (scripts/test), and both install at the pinned versions of constraints.txt. What scripts/test installs is
tested by running it: CI runs it on a fresh clone of every submission (no string search of the script here)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from shared.weights import REPO_ROOT


def readme_commands() -> list[str]:
    """The README's first two code blocks, one command each: the start command, then the test command."""
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", readme, re.S)[:2]
    assert all(len(block.strip().splitlines()) == 1 for block in blocks), blocks
    return [block.split("#")[0].strip() for block in blocks]


def test_the_readme_starts_with_the_start_and_the_test_command_each_in_its_block():
    start, test = readme_commands()
    assert (start, test) == ("scripts/serve", "scripts/test")
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert readme.index("```bash") < readme.index("\n## "), "the two commands come before the first section"


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


def test_the_readme_start_command_sets_itself_up_and_serves_from_a_fresh_clone(tmp_path):
    """``scripts/serve`` as pasted, in a fresh copy of this checkout: it makes the copy's own ``.venv``, installs the
    pinned stack and the copy itself, and serves the hub of the copy. To keep the test offline and short, the new
    ``.venv`` sees this environment's packages (a ``.pth`` line), so torch and the stack are already there and the
    install is the copy's own editable package."""
    import subprocess
    import sys
    import sysconfig

    import requests

    from tests.commands import start_hub
    from tests.conftest import free_port
    from tests.mutants.run import copy_checkout

    clone = tmp_path / "clone"
    copy_checkout(clone)
    subprocess.run([sys.executable, "-m", "venv", str(clone / ".venv")], check=True, timeout=300)
    site = next((clone / ".venv" / "lib").glob("python3*/site-packages"))
    (site / "this-environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {name: None for name in ("VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONPATH", "PYTHONHOME")}  # a new shell's
    env["PATH"] = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if not p.startswith(sys.prefix))
    hub = start_hub(tmp_path / "hub", [], {**env, "HF_HUB_OFFLINE": "1"}, free_port(),
                    command=[str(clone / "scripts" / "serve")], timeout=600)
    try:
        page = requests.get(hub.url + "/", timeout=60)
        served_by = Path(f"/proc/{hub.process.pid}/cmdline").read_bytes().split(b"\0")
        imported = subprocess.run([str(clone / ".venv" / "bin" / "python"), "-c", "import apps; print(apps.__file__)"],
                                  capture_output=True, text=True, cwd=tmp_path, timeout=60,
                                  env={k: v for k, v in {**os.environ, **env}.items() if v is not None}).stdout
    finally:
        hub.process.terminate()
        hub.process.wait(timeout=30)
    assert page.status_code == 200 and "Paper Demo Hub" in page.text
    assert served_by[1] == str(clone / ".venv" / "bin" / "demohub").encode(), served_by  # exec'd into the copy's
    assert Path(imported.strip()).is_relative_to(clone), imported  # the copy's own editable install
