"""Space folders: committed ones are fresh, YAML is valid, deploy --dry-run lists files offline, apps assemble."""

import dataclasses
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

import apps
from apps import spaces
from shared.weights import REPO_ROOT
from tests.commands import checkout_env

NAMES = spaces.space_names()


@pytest.mark.parametrize("name", NAMES)
def test_committed_space_folder_is_fresh(name, tmp_path):
    spaces.space_files(name).write(tmp_path)
    fresh, committed = tmp_path / name, spaces.SPACES_ROOT / name
    for file in ("README.md", "app.py", "requirements.txt"):
        assert (committed / file).read_text() == (fresh / file).read_text(), (
            f"spaces/{name}/{file} is stale: run `python -m apps.api_docs`")


def test_the_docs_generator_writes_every_space_folder_as_export_space_does(tmp_path, capsys):
    """`python -m apps.api_docs` (its ``main``, on a copy of the generated pages) writes each demo's Space folder and
    the hub's, the files `demohub export-space` writes, says which files it changed, and changes none a second time."""
    from apps import api_docs

    for page in (api_docs.API_DOC, api_docs.WEIGHTS_DOC, api_docs.README):
        copy = tmp_path / "copy" / page.relative_to(REPO_ROOT)
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(page.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "copy" / "spaces" / "prax").mkdir(parents=True)
    (tmp_path / "copy" / "spaces" / "prax" / "app.py").write_text("stale")
    assert api_docs.main(tmp_path / "copy") == 0
    said = capsys.readouterr().out.splitlines()
    subprocess.run([sys.executable, "-m", "apps.cli", "export-space", "all", "--out", str(tmp_path / "export")],
                   check=True, capture_output=True, timeout=120, env=checkout_env())
    assert {p.name for p in (tmp_path / "copy" / "spaces").iterdir()} == {*(d.id for d in apps.DEMOS), "hub"}
    for name in NAMES:
        for file in ("README.md", "app.py", "requirements.txt"):
            written = tmp_path / "copy" / "spaces" / name / file
            assert written.read_bytes() == (tmp_path / "export" / name / file).read_bytes(), (name, file)
            assert f"spaces/{name}/{file}: rewritten from the declarations" in said, (name, file)
    assert api_docs.main(tmp_path / "copy") == 0 and capsys.readouterr().out == "", "nothing left to change"


def test_export_space_command_writes_the_committed_folders(tmp_path):
    """`demohub export-space all` as a command: what it writes is what the repository holds."""
    done = subprocess.run([sys.executable, "-m", "apps.cli", "export-space", "all", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=120, env=checkout_env())
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("wrote ") == len(NAMES)
    for name in NAMES:
        written = sorted(p.name for p in (tmp_path / name).iterdir())
        assert written == ["README.md", "app.py", "requirements.txt"]
        for file in written:
            assert (tmp_path / name / file).read_bytes() == (spaces.SPACES_ROOT / name / file).read_bytes(), file


def front_matter(name: str) -> dict:
    text = (spaces.SPACES_ROOT / name / "README.md").read_text()
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1])


@pytest.mark.parametrize("name", NAMES)
def test_space_yaml_is_valid(name):
    meta = front_matter(name)
    for key in ("title", "emoji", "colorFrom", "colorTo", "sdk", "sdk_version", "python_version", "app_file",
                "short_description", "license", "suggested_hardware", "tags"):
        assert key in meta, key
    demos = apps.DEMOS if name == spaces.HUB_SPACE else [apps.get_demo(name)]
    model_repos = {ws.repo_id for d in demos for ws in d.weight_sets if ws.repo_id and ws.repo_type == "model"}
    assert set(meta.get("models", [])) == model_repos, "the card links every model repository the Space reads"
    assert meta["sdk"] == "gradio" and meta["app_file"] == "app.py"
    gradio_req = next(Requirement(line) for line in (REPO_ROOT / "requirements.txt").read_text().splitlines()
                      if line.startswith("gradio"))
    assert gradio_req.specifier.contains(meta["sdk_version"]), "sdk_version must satisfy requirements.txt"
    assert len(meta["short_description"]) <= 60
    if name != spaces.HUB_SPACE:  # the demo's own phrase, never a cut of its longer tagline
        assert meta["short_description"] == apps.get_demo(name).summary
    assert meta["colorFrom"] in {"red", "yellow", "green", "blue", "indigo", "purple", "pink", "gray"}
    assert all("/" in m for m in meta.get("models", []))
    for entry in meta.get("preload_from_hub", []):
        parts = entry.split(" ")
        assert parts[0] in meta["models"] and len(parts) <= 3
        assert not any(c in entry for c in "*?["), "preload_from_hub takes file names, not globs"
    if name != spaces.HUB_SPACE:
        readme = (spaces.SPACES_ROOT / name / "README.md").read_text()
        assert apps.get_demo(name).paper.url in readme, "the arXiv link lists the Space on the paper's page"


def test_a_summary_longer_than_a_space_takes_is_refused():
    demo = apps.get_demo("prax")
    with pytest.raises(ValueError, match="at most|1 to 60"):
        dataclasses.replace(demo, summary=demo.tagline)


@pytest.mark.parametrize("name", NAMES)
def test_requirements_pin_gradio_and_parse(name):
    lines = (spaces.SPACES_ROOT / name / "requirements.txt").read_text().split()
    reqs = [Requirement(line) for line in lines]
    assert f"gradio[mcp]=={spaces.TESTED_GRADIO}" in lines  # every Space is an MCP server too
    assert "torch" in {r.name for r in reqs}
    tested = spaces.tested_versions()
    assert {r.name: str(r.specifier) for r in reqs} == {r.name: f"=={tested[r.name.lower().replace('_', '-')]}"
                                                         for r in reqs}, "a Space installs exactly the tested stack"


def test_hub_space_preloads_every_demos_default_weights(monkeypatch):
    """Visitors cannot download on a Space, so the hub Space brings each demo's first official set along, where it is
    a model repository (preload_from_hub fetches models; MERT's weights are in a Space repository)."""
    preloaded = {entry.split(" ")[0]: entry for entry in front_matter(spaces.HUB_SPACE)["preload_from_hub"]}
    for demo in apps.DEMOS:
        default = next(ws for ws in demo.weight_sets if ws.repo_id)
        if default.repo_type != "model":
            assert default.repo_id not in preloaded, demo.id
            continue
        globbed = any(c in p for p in default.allow_patterns for c in "*?[")
        files = [] if globbed else [",".join(default.allow_patterns)]  # a glob preloads the whole repo
        assert preloaded[default.repo_id].split(" ")[1:] == files, demo.id
    monkeypatch.setenv("SPACE_ID", "lab/paper-demo-hub")
    settings = spaces.space_settings()
    assert settings.host == "0.0.0.0" and not settings.downloads_allowed


def test_demo_space_needs_only_its_own_requirements():
    prax = (spaces.SPACES_ROOT / "prax" / "requirements.txt").read_text()
    assert "diffusers" not in prax and "rdkit" not in prax
    hub = (spaces.SPACES_ROOT / "hub" / "requirements.txt").read_text()
    assert "diffusers" in hub and "rdkit" in hub


def test_deploy_dry_run_lists_files_without_network(monkeypatch):
    import huggingface_hub

    class NoNetwork:
        def __init__(self, *a, **k):
            raise AssertionError("dry run must not create an HfApi client")

    monkeypatch.setattr(huggingface_hub, "HfApi", NoNetwork)
    files = spaces.deploy("tag2text", "someone/tag2text", dry_run=True)
    assert files[:3] == ["README.md", "app.py", "requirements.txt"]
    assert "shared/weights.py" in files and "apps/tag2text/__init__.py" in files
    assert "apps/hub.py" not in files and not any(f.startswith("apps/prax/") and "__init__" not in f for f in files)
    assert len(files) == len(set(files))
    hub_files = spaces.deploy("hub", "someone/hub", dry_run=True)
    assert "apps/hub.py" in hub_files
    # a Space runs the Gradio app: none of the Streamlit front end travels (apps/streamlit_ui.py once did)
    assert [f for f in files + hub_files if Path(f).name.startswith("streamlit_")] == []
    assert "apps/ui.py" in files and "apps/tag2text/page.py" in files


def test_deploy_dry_run_cli_prints_the_plan(capsys):
    from apps import cli

    assert cli.main(["deploy", "prax", "--space-id", "me/prax", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "would upload" in out and "me/prax" in out and "  app.py" in out


def _assembled_space(name: str, root: Path) -> Path:
    for path, rel in spaces.upload_plan(name):
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return root


BUILDABLE = [n for n in NAMES if n == spaces.HUB_SPACE or importlib.util.find_spec(apps.get_demo(n).page_module)]


@pytest.mark.parametrize("name", BUILDABLE)
def test_uploaded_files_alone_build_the_app(name, tmp_path):
    """The Space gets only the upload plan: its app.py must import and build from those files alone."""
    root = _assembled_space(name, tmp_path / name)
    code = ("import sys; sys.path.insert(0, '.'); import runpy, apps, shared; "
            "ns = runpy.run_path('app.py', run_name='space'); import gradio as gr; "
            "obj = ns['demo'] if 'demo' in ns else ns['hub'].build_hub(); "
            "print('FROM', apps.__file__, shared.__file__); print('BUILT' if isinstance(obj, gr.Blocks) else 'NO'); "
            "import os, apps.serving; outside = [m for m, mod in sys.modules.copy().items() "
            "if m.split('.')[0] in ('apps', 'shared') and getattr(mod, '__file__', None) "
            "and not os.path.abspath(mod.__file__).startswith(os.getcwd())]; "
            "print('OUTSIDE', outside)")
    result = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=300,
                            env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert "BUILT" in result.stdout, result.stderr[-3000:]
    assert result.stdout.count(str(root)) == 2, f"must import the uploaded copy, not the checkout: {result.stdout}"
    # an editable install can serve a missing submodule from the checkout: every module must come from the upload
    assert "OUTSIDE []" in result.stdout, result.stdout


def test_zero_gpu_space_preloads_its_default_pipeline(monkeypatch):
    """On ZeroGPU (SPACES_ZERO_GPU set) the demo's default pipeline is loaded at import, before any visitor, and
    model handlers get a `spaces.GPU` slot; the stand-in `spaces` module records the durations it was asked for."""
    import types

    from shared.pool import ModelPool

    durations = []
    monkeypatch.setitem(sys.modules, "spaces", types.SimpleNamespace(
        GPU=lambda duration: lambda fn: durations.append(duration) or fn))
    monkeypatch.setenv("SPACES_ZERO_GPU", "1")
    monkeypatch.setenv("SPACE_ID", "lab/prax-demo")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    pool = ModelPool(budget_bytes=10**9)
    monkeypatch.setattr("shared.pool._default", pool)
    blocks = spaces.build_demo_app("prax")
    assert "prax/tiny-pragmatic" in pool.stats().loaded, "loaded at import, as ZeroGPU asks"
    assert pool.stats().loads == 1
    assert durations and all(d == 120 for d in durations), "model handlers run inside spaces.GPU"
    assert "/synthesize" in blocks.get_api_info()["named_endpoints"]
