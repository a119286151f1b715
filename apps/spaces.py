"""Hugging Face Space folders: one per demo plus the hub (``export``: ``python -m apps.api_docs`` writes them all,
with the other generated pages; ``demohub export-space`` one or all), and ``demohub deploy``.

A committed ``spaces/<name>/`` holds only what differs per Space (README.md with the Spaces YAML, app.py,
requirements.txt). ``deploy`` uploads that folder together with the code the Space imports (``shared/`` and the
needed part of ``apps/``), so no code is copied into the repository twice.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from apps import DEMOS, get_demo, gradio_internals
from apps.gradio_internals import TESTED_GRADIO
from shared import weights
from shared.registry import Demo
from shared.weights import REPO_ROOT

log = logging.getLogger(__name__)

CONSTRAINTS = REPO_ROOT / "constraints.txt"  # the exact stack CI tests; a Space installs the same releases
PYTHON_VERSION = "3.11"
SPACES_ROOT = REPO_ROOT / "spaces"
HUB_SPACE = "hub"
BASE_REQUIREMENTS = ("torch>=2.4", "numpy>=1.26", "pillow>=10.0", "safetensors>=0.4", "huggingface_hub>=0.34")
HUB_COLOURS = ("gray", "blue")  # the hub Space's card; each demo's Space declares its own (Demo.space_colours)
# Code that never belongs in a Space upload: caches, and the Streamlit front end (apps/streamlit_*.py and each demo's
# streamlit_page.py; a Space runs the Gradio app).
def _skipped(rel: str) -> bool:
    return "__pycache__" in rel or rel.endswith(".pyc") or rel.rpartition("/")[2].startswith("streamlit_")


@dataclass(frozen=True)
class SpaceFiles:
    name: str
    readme: str
    app: str
    requirements: str

    def files(self) -> dict[str, str]:
        return {"README.md": self.readme, "app.py": self.app, "requirements.txt": self.requirements}

    def stale(self, root: Path = SPACES_ROOT) -> list[Path]:
        """The files of ``root/<name>`` that are missing or differ from these (``demohub check`` reads, writes none)."""
        return [root / self.name / file for file, text in self.files().items()
                if not (root / self.name / file).is_file()
                or (root / self.name / file).read_text(encoding="utf-8") != text]

    def write(self, root: Path = SPACES_ROOT) -> list[Path]:
        """Write the folder ``root/<name>``; returns the files whose content changed (none where it was current)."""
        (root / self.name).mkdir(parents=True, exist_ok=True)
        changed = self.stale(root)
        for path in changed:
            path.write_text(self.files()[path.name], encoding="utf-8")
        return changed


def _yaml_value(value) -> str:
    return json.dumps(value, ensure_ascii=False)  # JSON scalars and lists are valid YAML flow values


def _front_matter(fields: dict) -> str:
    lines = ["---"]
    for key, value in fields.items():
        if isinstance(value, (list, tuple)) and not value:
            continue  # an empty list is left out (a Space needs no empty `models:`)
        if isinstance(value, (list, tuple)):
            lines.append(f"{key}:")
            lines += [f"  - {_yaml_value(v)}" for v in value]
        else:
            lines.append(f"{key}: {_yaml_value(value)}")
    return "\n".join(lines + ["---", ""])


def _preload(demo: Demo) -> list[str]:
    """``preload_from_hub`` entries for the demo's official weight sets: "repo file1,file2 revision" (model
    repositories only: preload_from_hub reads no Space's files; ``fetch_at_start`` fetches those)."""
    for ws in demo.weight_sets:  # the default (first official) set only: the others download on demand
        if ws.repo_id and ws.repo_type == "model":
            globbed = any(c in p for p in ws.allow_patterns for c in "*?[")
            files = "" if globbed else ",".join(ws.allow_patterns)  # preload takes file names, not globs
            pin = weights.pin(demo.id, ws)
            sha = pin.revision if pin.pinned else ""  # the Space preloads exactly the commit this checkout uses
            return [" ".join(part for part in (ws.repo_id, files, sha) if part)]
    return []


def _requirements(demos: tuple[Demo, ...]) -> str:
    reqs = ["gradio[mcp]", *BASE_REQUIREMENTS]  # [mcp]: every Space is an MCP server too
    for demo in demos:
        reqs += [r for r in demo.requirements if r not in reqs]
    versions = tested_versions()
    return "\n".join(pinned(r, versions) for r in reqs) + "\n"


def tested_versions(path: Path = CONSTRAINTS) -> dict[str, str]:
    """constraints.txt as {normalised project name: version}."""
    pins = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        name, sep, version = line.split("#")[0].strip().partition("==")
        if sep:
            pins[_normalised(name)] = version.strip()
    return pins


def pinned(requirement: str, versions: dict[str, str]) -> str:
    """``requirement`` at the release ``versions`` (``tested_versions()``) pins ("transformers>=4.50" ->
    "transformers==5.25.0"), so a Space runs the stack CI tested; one without a pin stays as written."""
    name = re.match(r"[A-Za-z0-9_.\-]+(\[[^\]]*\])?", requirement)
    version = versions.get(project(requirement))
    return f"{name.group(0)}=={version}" if version else requirement


def project(requirement: str) -> str:
    """A requirement's project name as pip compares them ("Pillow>=10" -> "pillow", "gradio[mcp]" -> "gradio")."""
    return _normalised(re.match(r"[A-Za-z0-9_.\-]+", requirement.strip())[0])


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def demo_space(demo: Demo) -> SpaceFiles:
    p = demo.paper
    colour_from, colour_to = demo.space_colours
    fields = {
        "title": demo.title.split(":")[0] + " demo",
        "emoji": demo.emoji,
        "colorFrom": colour_from,
        "colorTo": colour_to,
        "sdk": "gradio",
        "sdk_version": TESTED_GRADIO,
        "python_version": PYTHON_VERSION,
        "app_file": "app.py",
        "short_description": demo.summary,
        "license": "apache-2.0",
        "models": [ws.repo_id for ws in demo.weight_sets if ws.repo_id and ws.repo_type == "model"],
        "preload_from_hub": _preload(demo),
        "suggested_hardware": demo.suggested_hardware,
        "tags": ["iclr2024", "paper-demo-hub", demo.id],
    }
    readme = _front_matter(fields) + (
        f"\n# {demo.title}\n\n{demo.tagline}\n\n"
        f"Paper: [{p.title}]({p.url}) ({p.authors}, {p.venue}). Official code: {p.code_url}\n\n"
        + "".join(f"Weights `{ws.name}`: {_source(ws)}, licence {ws.license or 'not stated upstream'}.\n"
                  for ws in demo.weight_sets) +
        f"\nThis Space's code: Apache-2.0. Part of Paper Demo Hub; generated by `demohub export-space {demo.id}` "
        "(do not edit by hand).\n"
    )
    app = (
        f'"""{demo.title}: this demo alone, as a Hugging Face Space (generated by `demohub export-space`)."""\n\n'
        "from apps.spaces import build_demo_app, launch_demo_app\n\n"
        f'demo = build_demo_app("{demo.id}")\n\n'
        'if __name__ == "__main__":\n'
        "    launch_demo_app(demo)\n"
    )
    return SpaceFiles(demo.id, readme, app, _requirements((demo,)))


def _source(ws) -> str:
    if not ws.repo_id:
        return "bundled with this Space"
    kind = "the Space " if ws.repo_type == "space" else ""
    return f"{kind}[{ws.repo_id}](https://huggingface.co/{'spaces/' if ws.repo_type == 'space' else ''}{ws.repo_id})"


def space_settings():
    """A Space serves the public: the safe defaults, on all interfaces (downloads stay off: ``on_space()``)."""
    from apps.settings import from_env

    return from_env(host="0.0.0.0", port=int(os.environ.get("PORT", "7860")))


def build_demo_app(demo_id: str):
    """The Blocks a demo Space serves: that demo's page alone, over the shared pool."""
    import importlib

    from shared.device import on_zero_gpu

    demo = get_demo(demo_id)
    ctx = space_settings().context(demo)
    if on_zero_gpu():
        ctx.pipeline()  # ZeroGPU wants models loaded (and moved to cuda) at import time
    with gradio_internals.apps_at_launch_only():
        blocks = importlib.import_module(demo.page_module).build(ctx)
    blocks.demohub_demo = demo  # what launch_demo_app warms up
    return blocks


def fetch_at_start(demos) -> threading.Thread | None:
    """On a Space, the official weights that ``preload_from_hub`` cannot fetch (it reads model repositories only;
    MERT's files are in a Space's repository), downloaded once by the Space itself as it starts: the operator's
    process, in the background, never a visitor's request (visitors still cannot start downloads). Until they are
    here the page says the weights are missing, as anywhere. Elsewhere: nothing (``demohub download`` is the way)."""
    from apps.settings import on_space

    wanted = [(demo, ws) for demo in demos for ws in demo.weight_sets if ws.repo_id and ws.repo_type != "model"]
    if not wanted or not on_space():
        return None

    def run() -> None:
        for demo, ws in wanted:
            try:
                weights.resolve(demo.id, ws, allow_download=True)
                log.info("fetched the %s weights %s at the Space's start", demo.id, ws.name)
            except Exception:  # the page keeps saying they are missing; the Space's log says why
                log.warning("could not fetch the %s weights %s at the Space's start", demo.id, ws.name, exc_info=True)

    thread = threading.Thread(target=run, name="demohub-space-weights", daemon=True)
    thread.start()
    return thread


def launch_demo_app(blocks) -> None:
    from apps import serving
    from apps.hub import warm_up
    from apps.ui import look
    from shared.pool import default_pool

    pool, settings = default_pool(), space_settings()
    demo = getattr(blocks, "demohub_demo", None)
    if demo is not None:
        fetch_at_start([demo])
    serving.launch(blocks, settings, stats=lambda: pool.stats().as_dict(),
                   on_serving=(lambda: warm_up([demo])) if demo and settings.warm else None, **look())


def hub_space() -> SpaceFiles:
    fields = {
        "title": "Paper Demo Hub",
        "emoji": "📄",
        "colorFrom": HUB_COLOURS[0],
        "colorTo": HUB_COLOURS[1],
        "sdk": "gradio",
        "sdk_version": TESTED_GRADIO,
        "python_version": PYTHON_VERSION,
        "app_file": "app.py",
        "short_description": "Try ICLR 2024 papers hands-on on their official weights",
        "license": "apache-2.0",
        "models": [ws.repo_id for d in DEMOS for ws in d.weight_sets if ws.repo_id and ws.repo_type == "model"],
        "preload_from_hub": [entry for d in DEMOS for entry in _preload(d)],  # visitors cannot download on a Space
        "suggested_hardware": "a10g-large",
        "tags": ["iclr2024", "paper-demo-hub"],
    }
    links = "\n".join(f"- [{d.paper.title}]({d.paper.url}): `/{d.id}`" for d in DEMOS)
    readme = _front_matter(fields) + (
        "\n# Paper Demo Hub\n\nAll demos in one app, plus a catalog of ICLR 2024 papers.\n\n"
        f"{links}\n\nGenerated by `demohub export-space hub` (do not edit by hand).\n"
    )
    app = (
        '"""Paper Demo Hub as a Hugging Face Space (generated by `demohub export-space hub`)."""\n\n'
        "from apps import hub\n"
        "from apps.spaces import space_settings\n\n"
        'if __name__ == "__main__":\n'
        "    hub.launch(space_settings())\n"
    )
    return SpaceFiles(HUB_SPACE, readme, app, _requirements(DEMOS))


def space_files(name: str) -> SpaceFiles:
    return hub_space() if name == HUB_SPACE else demo_space(get_demo(name))


def export(names: list[str] | None = None, root: Path = SPACES_ROOT) -> list[Path]:
    """Write the folders of the Spaces ``names`` (default: every one, each demo's and the hub's) under ``root``: what
    ``python -m apps.api_docs`` and ``demohub export-space`` run. Returns the files whose content changed."""
    return [path for name in (space_names() if names is None else names) for path in space_files(name).write(root)]


def space_names() -> list[str]:
    return [d.id for d in DEMOS] + [HUB_SPACE]


def upload_plan(name: str) -> list[tuple[Path, str]]:
    """(local file, path in the Space repo) for everything ``deploy`` uploads, in order."""
    folder = SPACES_ROOT / name
    if not folder.is_dir():
        from shared.errors import UserInputError

        raise UserInputError(f"spaces/{name}/ does not exist; run `demohub export-space {name}` first.")
    plan = [(f, f.name) for f in sorted(folder.iterdir()) if f.is_file()]
    demo_ids = [d.id for d in DEMOS] if name == HUB_SPACE else [name]
    code_roots = [REPO_ROOT / "shared", *(REPO_ROOT / "apps" / d for d in demo_ids),
                  *(REPO_ROOT / "checkpoints" / d for d in demo_ids)]  # bundled weights travel too
    # every top-level module of apps/ (serving, settings, ui, ...); the command line and Streamlit stay home
    code_files = [p for p in sorted((REPO_ROOT / "apps").glob("*.py")) if p.name != "cli.py"]
    code_files.append(REPO_ROOT / "apps" / "catalog.json")
    for d in DEMOS:  # every registration, so the Space's hub knows the other demos (and links them)
        code_files.append(REPO_ROOT / "apps" / d.id / "__init__.py")
    for root in code_roots:
        code_files += sorted(p for p in root.rglob("*") if p.is_file())
    if name != HUB_SPACE:
        code_files.remove(REPO_ROOT / "apps" / "hub.py")
    seen: set[str] = set()
    for path in code_files:
        rel = path.relative_to(REPO_ROOT).as_posix()
        if rel in seen or _skipped(rel):
            continue
        seen.add(rel)
        plan.append((path, rel))
    lock = next((p for p in weights.lock_paths() if p.is_file()), None)
    if lock is not None:  # the commits this checkout uses: the Space resolves (and preloads) exactly those
        plan.append((lock, f"checkpoints/{weights.LOCK_NAME}"))
    return plan


def deploy(name: str, space_id: str, private: bool = False, dry_run: bool = False) -> list[str]:
    """Create the Space (if needed) and upload its files; with ``dry_run`` only list them, touching no network."""
    plan = upload_plan(name)
    if dry_run:
        return [rel for _, rel in plan]
    from huggingface_hub import CommitOperationAdd, HfApi

    api = HfApi()
    api.create_repo(space_id, repo_type="space", space_sdk="gradio", private=private, exist_ok=True)
    operations = [CommitOperationAdd(path_in_repo=rel, path_or_fileobj=str(path)) for path, rel in plan]
    api.create_commit(space_id, repo_type="space", operations=operations,
                      commit_message=f"Deploy {name} from Paper Demo Hub")
    return [rel for _, rel in plan]
