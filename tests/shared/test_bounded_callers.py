"""The library from anywhere: 3D-MoLM's featurisation (bounded work in a worker process) called as a Python user calls
it, each caller a command in a fresh interpreter in an empty folder: a script without a main guard, ``python -``
(stdin), ``python -c``, a Jupyter kernel, a Ray worker, and a worker killed at its deadline. Inside pytest and the hub
the same call worked all along; these callers failed (the worker re-imported the caller's ``__main__``)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.commands import checkout_env

FIRST_SCRIPT = """\
print("script body runs")
from apps.molm3d.conformer import featurize

conformer = featurize("CCO", seed=42)
print("atoms:", conformer.num_heavy_atoms, conformer.symbols)
"""
DEADLINE_SCRIPT = """\
import time
from shared.bounded import run_bounded
from shared.errors import UserInputError

started = time.monotonic()
try:
    run_bounded(time.sleep, 60, seconds=1, too_long="stopped at its deadline")
except UserInputError as error:
    print(error, round(time.monotonic() - started))
print("next:", run_bounded(divmod, 7, 2, seconds=30, too_long="x"))
"""


def run_python(tmp_path, args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], input=stdin, capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env=checkout_env())


@pytest.mark.parametrize("caller", ["script", "stdin", "-c"])
def test_featurize_from_a_users_first_script(tmp_path, caller):
    script = tmp_path / "first.py"
    script.write_text(FIRST_SCRIPT)
    done = {"script": lambda: run_python(tmp_path, [str(script)]),
            "stdin": lambda: run_python(tmp_path, ["-"], stdin=FIRST_SCRIPT),
            "-c": lambda: run_python(tmp_path, ["-c", FIRST_SCRIPT])}[caller]()
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("script body runs") == 1, "the caller's script ran once, not again in the worker"
    assert "atoms: 3 ['C', 'C', 'O']" in done.stdout
    assert "Error" not in done.stderr, done.stderr[-3000:]


def test_a_scripts_bounded_work_still_dies_at_its_deadline(tmp_path):
    script = tmp_path / "deadline.py"
    script.write_text(DEADLINE_SCRIPT)
    done = run_python(tmp_path, [str(script)])
    assert done.returncode == 0, done.stderr[-3000:]
    assert "stopped at its deadline 1" in done.stdout or "stopped at its deadline 2" in done.stdout, done.stdout
    assert "next: (3, 1)" in done.stdout, "a fresh worker serves the next call"


RAY_SCRIPT = """\
import ray

ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)


@ray.remote
def atoms(smiles):
    from apps.molm3d.conformer import featurize

    return featurize(smiles, seed=42).symbols


print("ray worker:", ray.get(atoms.remote("CCO")))
ray.shutdown()
"""


def test_featurize_in_a_ray_worker(tmp_path):
    pytest.importorskip("ray", reason="Ray is the optional scale-out extra (pip install -e '.[ray]')")
    done = run_python(tmp_path, ["-c", RAY_SCRIPT])
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ray worker: ['C', 'C', 'O']" in done.stdout, done.stdout[-2000:]


JUPYTER_DRIVER = """\
import json, sys
from jupyter_client.manager import start_new_kernel

manager, client = start_new_kernel(kernel_name="python3", cwd=sys.argv[1])  # a notebook's kernel: __main__ is its own
outputs = []


def keep(message):
    content = message["content"]
    if message["msg_type"] == "stream":
        outputs.append(content["text"])
    elif message["msg_type"] == "error":
        outputs.append(f"CELL ERROR {content['ename']}: {content['evalue']}\\n")


try:
    for cell in json.loads(sys.argv[2]):
        client.execute_interactive(cell, timeout=240, output_hook=keep)
finally:
    client.stop_channels()
    manager.shutdown_kernel(now=True)
print("".join(outputs))
"""


def test_featurize_and_a_deadline_in_a_jupyter_kernel(tmp_path):
    """Two notebook cells: the user's first featurisation, then bounded work stopped at its deadline and the next
    call served."""
    import json

    done = run_python(tmp_path, ["-c", JUPYTER_DRIVER, str(tmp_path), json.dumps([FIRST_SCRIPT, DEADLINE_SCRIPT])])
    assert done.returncode == 0, done.stderr[-3000:]
    assert "CELL ERROR" not in done.stdout, done.stdout[-3000:]
    assert done.stdout.count("script body runs") == 1 and "atoms: 3 ['C', 'C', 'O']" in done.stdout, done.stdout
    assert "stopped at its deadline 1" in done.stdout or "stopped at its deadline 2" in done.stdout, done.stdout
    assert "next: (3, 1)" in done.stdout
