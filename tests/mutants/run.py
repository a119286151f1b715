"""Apply each mutant of the catalogue (tests/mutants/__init__.py) to a temporary copy of this checkout, run only its
tests there, and print whether they caught it. Exit status 1 when any mutant is missed (its tests passed) or broke
its tests' collection (an error that is not a failing test).

Run: scripts/mutants [--only NAME ...] [--list]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.mutants import MUTANTS, Mutant

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 600  # seconds for one mutant's tests


def tracked_files() -> list[str]:
    """What this checkout holds: tracked files and untracked ones git does not ignore."""
    out = subprocess.run(["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard", "-z"], capture_output=True,
                         check=True).stdout
    return [name for name in out.decode().split("\0") if name and (REPO / name).is_file()]


def copy_checkout(target: Path) -> None:
    for name in tracked_files():
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, destination)
    # A repository of its own, every file untracked: `git ls-files -co --exclude-standard` lists the same files there
    # (a test that copies the checkout again, as the start command's test does, finds them).
    subprocess.run(["git", "init", "-q", str(target)], check=True)
    node_modules = REPO / "tests" / "js" / "node_modules"  # ignored by git, needed by the JavaScript client tests
    if node_modules.is_dir():
        (target / "tests" / "js" / "node_modules").symlink_to(node_modules)


def mutated(text: str, mutant: Mutant) -> str:
    count = text.count(mutant.find)
    if count != 1:
        raise SystemExit(f"mutant {mutant.name}: its text occurs {count} times in {mutant.path}, not once; "
                         "update tests/mutants/__init__.py")
    return text.replace(mutant.find, mutant.replace)


def run_one(copy: Path, mutant: Mutant) -> tuple[str, float, str]:
    """(verdict, seconds, the tests' last lines): caught (a test failed), missed (all passed), or broken."""
    file = copy / mutant.path
    original = file.read_text(encoding="utf-8")
    file.write_text(mutated(original, mutant), encoding="utf-8")
    # No PYTHONPATH of ours: the copy is a second checkout, and its tests must import it by themselves (pytest puts
    # the copy's root first; the commands they start get it from tests.commands.checkout_env), not the editable
    # install's tree, which is the original checkout.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    started = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "--no-header",
                               *mutant.tests], cwd=copy, env=env, capture_output=True, text=True, timeout=TIMEOUT)
        code, output = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as error:
        code, output = -1, f"timed out after {TIMEOUT} s: {(error.stdout or b'')[-500:]!r}"
    finally:
        file.write_text(original, encoding="utf-8")
    verdict = {0: "MISSED", 1: "caught"}.get(code, "broken")
    return verdict, time.monotonic() - started, "\n".join(output.strip().splitlines()[-3:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="run only these mutants (by name)")
    parser.add_argument("--list", action="store_true", help="list the catalogue and stop")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTANTS if not args.only or m.name in args.only]
    if args.list:
        for mutant in chosen:
            print(f"{mutant.name}: {mutant.claim} ({mutant.path}; {len(mutant.tests)} test(s))")
        return 0
    results = []
    with tempfile.TemporaryDirectory(prefix="demohub-mutants-") as tmp:
        copy = Path(tmp) / "checkout"
        copy_checkout(copy)
        for mutant in chosen:
            verdict, seconds, tail = run_one(copy, mutant)
            results.append(verdict)
            print(f"{verdict:7} {mutant.name} ({seconds:.0f} s): {mutant.claim}", flush=True)
            if verdict != "caught":
                print("        " + tail.replace("\n", "\n        "), flush=True)
    caught = results.count("caught")
    print(f"mutants: {caught} passed, {len(results) - caught} failed")
    return 0 if caught == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
