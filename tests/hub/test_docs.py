"""The README is for the person who arrives: short, with a picture of every demo and what runs without the Hugging
Face Hub as the registry says it; everything else is in docs/, linked from it, and no link points nowhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from PIL import Image

import apps
from apps.api_docs import anchor
from shared.weights import REPO_ROOT

README = REPO_ROOT / "README.md"
DOCS = sorted((REPO_ROOT / "docs").glob("*.md"))
LINK = re.compile(r"\]\(([^)\s]+)\)|<img src=\"([^\"]+)\"")


def local_links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)  # code is not a link
    return [a or b for a, b in LINK.findall(text) if not re.match(r"[a-z]+:", a or b)]


def test_the_readme_is_short():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines: move operator topics to docs/"


@pytest.mark.parametrize("page", [README, *DOCS], ids=lambda p: p.relative_to(REPO_ROOT).as_posix())
def test_every_link_reaches_a_file_and_its_heading(page):
    for link in local_links(page):
        path, _, fragment = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        assert target.exists(), f"{page.name} links to {link}, which does not exist"
        if fragment:
            headings = re.findall(r"^#+ (.+)$", target.read_text(encoding="utf-8"), re.M)
            assert fragment in {anchor(h) for h in headings}, f"{page.name}: {target.name} has no heading #{fragment}"


def test_every_docs_page_is_linked_from_the_readme():
    linked = {(REPO_ROOT / link.partition("#")[0]).resolve() for link in local_links(README)}
    assert [p.name for p in DOCS if p.resolve() not in linked] == []


@pytest.mark.parametrize("demo", apps.DEMOS, ids=lambda d: d.id)
def test_the_readme_shows_every_demo(demo):
    picture = f"docs/screenshots/{demo.id}.png"
    assert f'<img src="{picture}"' in README.read_text(encoding="utf-8")
    with Image.open(REPO_ROOT / picture) as shot:  # written by scripts/screenshots
        assert shot.format == "PNG" and shot.width == 800
    assert (REPO_ROOT / picture).stat().st_size < 250_000, "keep the clone small: scripts/screenshots quantises"


def test_the_readmes_demos_and_offline_table_are_generated_from_the_registry():
    """A new demo's paragraph, picture and offline row come from its registration (``python -m apps.api_docs``),
    not from a hand edit; the page must equal what the generator writes."""
    from apps.api_docs import readme_page

    text = README.read_text(encoding="utf-8")
    assert readme_page(text) == text, "README.md differs from the registry: run python -m apps.api_docs"


@pytest.mark.parametrize("demo", apps.DEMOS, ids=lambda d: d.id)
def test_what_runs_without_the_hub_is_what_the_registry_says(demo):
    """The README's table row of each demo names what its page does with no weights (the hub's card says the same)
    and the size of every set of official weights it would download."""
    [row] = [line for line in README.read_text(encoding="utf-8").splitlines() if line.startswith(f"| {demo.name} |")]
    assert demo.works_without_weights in row
    for size in {ws.size_text for ws in demo.weight_sets if ws.repo_id}:
        assert size in row, f"{demo.name}: the README's row does not give the download size {size}"


def test_the_registration_template_shows_every_field_a_demo_has():
    """docs/adding-a-demo.md's template for ``apps/<id>/__init__.py`` names every field of ``Demo`` (a test may ask
    for any of them) and nothing else (a field that is gone, such as a declared embed height, is gone there too)."""
    import ast
    import dataclasses

    from shared.registry import Demo

    page = (REPO_ROOT / "docs" / "adding-a-demo.md").read_text(encoding="utf-8")
    [template] = [code for code in re.findall(r"```python\n(.*?)```", page, re.S) if "DEMO = Demo(" in code]
    [call] = [node for node in ast.walk(ast.parse(template)) if isinstance(node, ast.Call)
              and getattr(node.func, "id", "") == "Demo"]
    assert [k.arg for k in call.keywords] == list(dict.fromkeys(k.arg for k in call.keywords)), "a field twice"
    assert {k.arg for k in call.keywords} == {f.name for f in dataclasses.fields(Demo)}
    assert "embed_height" not in page


def test_glue_lines_counts_what_its_docstring_says():
    """scripts/glue-lines: each demo's glue is the sum of its six files' columns (no tests, no fixtures builder
    counted), and its docstring says so."""
    import ast
    import subprocess
    import sys

    script = REPO_ROOT / "scripts" / "glue-lines"
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=True)
    header, *rows = done.stdout.splitlines()
    files = ("__init__.py", "checks.py", "actions.py", "api.py", "page.py", "streamlit_page.py")
    assert header.split() == ["demo", "glue", *files]
    assert {row.split()[0] for row in rows} >= {d.id for d in apps.DEMOS}
    for row in rows:
        _, total, *counts = row.split()
        assert int(total) == sum(map(int, counts)), row
    doc = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8")))
    assert "(its __init__, checks, actions, api, page and Streamlit page; not its tests nor their fixtures builder)" \
        in " ".join(doc.split())
