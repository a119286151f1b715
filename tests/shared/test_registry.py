"""The demo registry: demos found from their folders, light imports, consistent records."""

import ast
import importlib.util
import json
import re
import subprocess
import sys

import pytest

import apps
from shared.errors import UserInputError
from shared.registry import Demo, Paper, human_bytes


def test_importing_apps_pulls_no_heavy_library():
    code = ("import sys, apps, apps.catalog, shared.context; "
            "import json; print(json.dumps(sorted(m for m in ('torch','transformers','diffusers','rdkit','gradio') "
            "if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == []


def test_a_demos_own_modules_reach_no_other_demo():
    """The registry (apps.registry) is imported by what lists demos, not by the package a demo lives in: a page's
    actions and declarations load that demo alone."""
    for demo in apps.DEMOS:
        own = [f"apps.{demo.id}.{name}" for name in ("actions", "api") if importlib.util.find_spec(
            f"apps.{demo.id}.{name}")]
        code = (f"import sys, {', '.join(own)}; "
                "print(sorted({m.split('.')[1] for m in sys.modules if m.startswith('apps.')}))")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        reached = set(ast.literal_eval(out.strip()))
        assert reached & {d.id for d in apps.DEMOS} == {demo.id}, (demo.id, out)
        assert reached <= {demo.id, "views"}, (demo.id, out)  # apps.views: sentences and drawings, no demo


def test_demos_with_routes_and_weight_sets():
    ids = [d.id for d in apps.DEMOS]
    assert ids == sorted(ids) and {"geodiffusion", "molm3d", "prax", "tag2text"} <= set(ids)  # the shipped ones, found
    for demo in apps.DEMOS:
        assert demo.weight_sets, demo.id
        assert len({ws.name for ws in demo.weight_sets}) == len(demo.weight_sets)
        assert demo.pipeline.startswith(f"apps.{demo.id}.") and demo.page in ("", f"apps.{demo.id}.page")
        assert demo.api in ("", f"apps.{demo.id}.api")
        for ws in demo.weight_sets:
            assert ws.repo_id or ws.bundled
            assert ws.revision == "main" or len(ws.revision) == 40, "pin full 40-character SHAs"
    assert len(apps.get_demo("geodiffusion").weight_sets) == 5


def test_unknown_demo_and_weight_set_are_user_errors():
    with pytest.raises(UserInputError, match="prax"):
        apps.get_demo("nope")
    with pytest.raises(UserInputError, match="tiny-literal"):
        apps.get_demo("prax").weight_set("nope")


def test_human_bytes():
    assert human_bytes(4_478_705_095) == "4.48 GB"
    assert human_bytes(0) == "unknown size"
    assert human_bytes(512) == "512 B"


def test_checkpoints_readme_lists_every_weight_set():
    """checkpoints/README.md's table is the registry's (``python -m apps.api_docs`` rewrites it)."""
    from apps.api_docs import WEIGHTS_DOC, weights_page

    text = WEIGHTS_DOC.read_text(encoding="utf-8")
    assert weights_page(text) == text, "checkpoints/README.md differs from the registry: run python -m apps.api_docs"
    for demo in apps.DEMOS:
        for ws in demo.weight_sets:
            assert f"| {demo.id} | `{ws.name}` |" in text, f"{demo.id}/{ws.name} missing from checkpoints/README.md"


def test_a_demo_is_found_from_its_folder_alone(tmp_path, monkeypatch):
    """A new demo is a folder with a DEMO declaration: no list to edit. Non-demo packages are passed over, and a DEMO
    whose id is not its folder's name is refused with a sentence."""
    root = tmp_path / "demos_here"
    for name, body in (("zeta", 'DEMO = make("zeta")'), ("alpha", 'DEMO = make("alpha")'), ("assets", "X = 1")):
        (root / name).mkdir(parents=True)
        (root / name / "__init__.py").write_text(f"from tests.shared.test_registry import make\n{body}\n")
    (root / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert [d.id for d in apps.discover(root, "demos_here")] == ["alpha", "zeta"]
    (root / "alpha" / "__init__.py").write_text('from tests.shared.test_registry import make\nDEMO = make("beta")\n')
    monkeypatch.delitem(sys.modules, "demos_here.alpha")
    with pytest.raises(ValueError, match="a demo's id is its folder's name"):
        apps.discover(root, "demos_here")


def make(demo_id: str) -> Demo:
    return Demo(id=demo_id, title=demo_id.title(), tagline="", summary="A demo.", paper=Paper("t", "a", "0000.00000"),
                weight_sets=(), pipeline=f"apps.{demo_id}.pipeline:P", page=f"apps.{demo_id}.page")


def test_shared_holds_no_ui_code():
    """shared/ is what every front end and pipeline builds on: no module of it imports a UI library (adapters such as
    apps.ui.as_gradio_error live with their front end)."""
    from shared.weights import REPO_ROOT

    ui_import = re.compile(r"^\s*(import|from)\s+(gradio|streamlit)\b", re.M)
    assert [p.name for p in sorted((REPO_ROOT / "shared").glob("*.py")) if ui_import.search(p.read_text())] == []
