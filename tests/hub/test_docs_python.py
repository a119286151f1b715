"""The Python examples of the README and docs/ that use the library (``from apps...``, ``from shared...``, and show
what it gives with ``print``; declarations shown in docs/adding-a-demo.md are fragments of a demo's files) run as
written, each in a fresh interpreter fed on its standard input (``python -``), from the repository root as a newcomer
runs them. Snippets that call a running hub are run against one elsewhere (test_docs_api.py, tests/mcp)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.commands import REPO, checkout_env

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def library_examples() -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        for i, code in enumerate(BLOCK.findall(page.read_text(encoding="utf-8"))):
            if re.search(r"^from (apps|shared)[.\s]", code, re.M) and "print(" in code:  # a use, not a declaration
                found.append((f"{page.relative_to(REPO)}#{i}", code))
    return found


EXAMPLES = library_examples()


def test_the_docs_have_library_examples():
    assert len(EXAMPLES) >= 2 and any("featurize" in code for _, code in EXAMPLES), [name for name, _ in EXAMPLES]


@pytest.mark.parametrize(("name", "code"), EXAMPLES, ids=[name for name, _ in EXAMPLES])
def test_a_library_example_runs_as_written(name, code):
    done = subprocess.run([sys.executable, "-"], input=code, capture_output=True, text=True, cwd=REPO,
                          env={**checkout_env(), "HF_HUB_OFFLINE": "1"}, timeout=300)
    assert done.returncode == 0, f"{name}:\n{done.stderr[-3000:]}"
    assert done.stdout.strip(), f"{name} printed nothing"
