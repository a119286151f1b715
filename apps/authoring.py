"""For demo authors: ``demohub new <id>`` writes a new demo's skeleton from docs/adding-a-demo.md's template, and
``demohub check <id>`` says what a demo still lacks (without running tests), then runs the tests that cover it.

Torch-free: ``check`` imports the demo's pipeline class (its model library with it) only when it checks it.
"""

from __future__ import annotations

import ast
import importlib.machinery
import importlib.util
import inspect
import json
import keyword
import os
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

from shared.weights import REPO_ROOT

MAX_GLUE = 150  # lines of glue a demo on the generated forms aims at (docs/adding-a-demo.md, "Line counts")
# The folders of tests that every demo gets without writing them; of these only the tests that name the demo (its id,
# or one of its endpoints' names in a parametrised id) run for it.
GENERATED_TESTS = ("tests/shared", "tests/hub", "tests/mcp", "tests/robustness", "tests/browser", "tests/streamlit",
                   "tests/security", "tests/ray")
REGENERATE = "run python -m apps.api_docs"


def class_name(demo_id: str) -> str:
    """The name its classes start with: ``my_demo`` -> ``MyDemo`` (``MyDemoPipeline``, ``MyDemoInputs``)."""
    return "".join(part.capitalize() for part in demo_id.split("_"))


def refusal(demo_id: str, root: Path = REPO_ROOT) -> str | None:
    """Why ``demo_id`` cannot be a new demo's id under ``root``, in a sentence; None if it can."""
    from apps import DEMOS

    if not re.fullmatch(r"[a-z][a-z0-9_]*", demo_id) or keyword.iskeyword(demo_id):
        return (f"{demo_id!r} cannot be a demo's id: it is its folder apps/<id>/, its route /<id> and a Python "
                "module name, so write it in lower case letters, digits and underscores, starting with a letter "
                "(e.g. codesage, my_paper).")
    if demo_id in {d.id for d in DEMOS}:
        return f"{demo_id!r} is already a demo (apps/{demo_id}/): choose another id, or run demohub check {demo_id}."
    for taken in (f"apps/{demo_id}", f"apps/{demo_id}.py", f"tests/{demo_id}", f"tests/fixtures/tiny_{demo_id}.py",
                  f"spaces/{demo_id}"):
        if (root / taken).exists():
            return f"{taken} already exists under {root}: choose another id, so that nothing there is overwritten."
    return None


def skeleton(demo_id: str) -> dict[str, str]:
    """The files of a new demo (path relative to the checkout -> text), from docs/adding-a-demo.md's template."""
    def filled(text: str) -> str:
        return text.replace("<id>", demo_id).replace("<Name>", class_name(demo_id))

    return {filled(path): filled(text) for path, text in SKELETON.items()}


def write_skeleton(demo_id: str, root: Path = REPO_ROOT) -> list[Path]:
    """Write ``skeleton(demo_id)`` under ``root``; ``refusal`` first (a ``UserInputError`` with its sentence)."""
    from shared.errors import UserInputError

    problem = refusal(demo_id, root)
    if problem:
        raise UserInputError(problem)
    written = []
    for path, text in skeleton(demo_id).items():
        file = root / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(text, encoding="utf-8")
        written.append(file)
    return written


def next_steps(demo_id: str) -> list[str]:
    return [
        f'Set "demo": "{demo_id}" on its paper\'s entry in apps/catalog.json (the catalog links the demo).',
        f"Write its registration in apps/{demo_id}/__init__.py: the paper, the weight sets (repo_id, size, licence), "
        "the title, tagline and summary (docs/adding-a-demo.md, section 1).",
        f"Write the pipeline (apps/{demo_id}/pipeline.py, its checks in checks.py, its endpoints in api.py) and its "
        f"tiny checkpoints (tests/fixtures/tiny_{demo_id}.py).",
        "Run python -m apps.api_docs: the API reference, the README's paragraph and row, the weights table and the "
        "Space folders.",
        f"Run demohub check {demo_id}: what is still missing, then the tests that cover the demo.",
    ]


# ---- demohub check: what a demo still lacks ----

def _unwritten(function_source: str) -> bool:
    """A function whose body (its docstring apart) only raises NotImplementedError: the skeleton's, not written yet."""
    [node] = ast.parse(function_source).body
    body = node.body[1:] if ast.get_docstring(node) is not None else node.body
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    raised = body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc
    return isinstance(raised, ast.Name) and raised.id == "NotImplementedError"


def _source(function) -> str:
    try:
        return textwrap.dedent(inspect.getsource(function))
    except (OSError, TypeError):  # made at run time: nothing to read, so not the skeleton's
        return "def made(): pass"


def _placeholders(demo) -> list[str]:
    """The skeleton's placeholder values that the registration still has."""
    found = [field for field, value in (("title", demo.title), ("tagline", demo.tagline), ("summary", demo.summary),
                                         ("the paper's title", demo.paper.title), ("its arxiv_id", demo.paper.arxiv_id))
             if value in PLACEHOLDERS or (field == "title" and value.endswith(": what it does"))]
    found += [f"{ws.name}'s {field}" for ws in demo.weight_sets if ws.repo_id for field, missing in (
        ("repo_id", ws.repo_id in PLACEHOLDERS), ("size_bytes", ws.size_bytes <= 0), ("license", not ws.license))
        if missing]
    return found


def _pipeline_problems(demo) -> list[str]:
    from shared.pipeline import Pipeline

    try:
        cls = demo.pipeline_class()
    except Exception as error:  # any failure to import is the finding
        return [f"Its pipeline {demo.pipeline} does not import ({type(error).__name__}: {error}): fix "
                f"apps/{demo.id}/pipeline.py."]
    if not (isinstance(cls, type) and issubclass(cls, Pipeline)):
        return [f"{demo.pipeline} is not a shared.pipeline.Pipeline: make it <Name>Pipeline(Pipeline)."]
    out = []
    for method in ("from_pretrained", "check_inputs", "__call__"):
        own = inspect.getattr_static(cls, method)
        if own is inspect.getattr_static(Pipeline, method):
            out.append(f"{cls.__name__} has no {method} of its own (shared/pipeline.py's contract): write it.")
        elif method != "check_inputs" and _unwritten(_source(getattr(cls, method))):
            out.append(f"{cls.__name__}.{method} still raises NotImplementedError: write it "
                       f"(apps/{demo.id}/pipeline.py).")
    if not cls.components:
        out.append(f"{cls.__name__}.components names none of its torch modules: list the attributes that hold them "
                   "(the pool measures its memory from them).")
    return out


def _api_problems(demo) -> list[str]:
    from shared.api import Endpoint, attribute

    if not demo.api:
        return [f"It declares no API (api=\"apps.{demo.id}.api\" with ENDPOINTS): its pages, MCP tools, docs and "
                "generated tests start from that declaration."]
    try:
        endpoints = demo.endpoints()
    except Exception as error:  # any failure to import is the finding
        return [f"{demo.api}.ENDPOINTS is not found ({type(error).__name__}: {error}): declare it in "
                f"apps/{demo.id}/api.py."]
    if not endpoints or not all(isinstance(e, Endpoint) for e in endpoints):
        return [f"{demo.api}.ENDPOINTS declares no Endpoint: declare at least one."]
    out = []
    for endpoint in endpoints:
        missing = [i.name for i in endpoint.inputs if i.example is None]
        if missing:
            out.append(f"/{endpoint.name}: give {', '.join(missing)} an example (Input(..., example=...)): the API "
                       "reference and the generated tests start from it.")
        for role, path in (("run", endpoint.run), ("check", endpoint.check), ("view", endpoint.view)):
            try:
                if path:
                    attribute(path)
            except Exception:  # a wrong path in the declaration
                out.append(f"/{endpoint.name}: its {role} function {path} is not found: write it or fix the path.")
    return out


def _fixture_problems(demo, root: Path) -> list[str]:
    path = f"tests/fixtures/tiny_{demo.id}.py"
    if not (root / path).is_file():
        return [f"{path} is missing: write build_default(folder) and official_repo(tmp), its tiny checkpoints in the "
                "official layout (docs/adding-a-demo.md, section 4)."]
    source = (root / path).read_text(encoding="utf-8")
    functions = {node.name: node for node in ast.parse(source).body if isinstance(node, ast.FunctionDef)}
    out = []
    bundled = any(ws.bundled for ws in demo.weight_sets)  # its hub's tests may run on those (PraX)
    for name in ("official_repo",) if bundled else ("build_default", "official_repo"):
        if name not in functions:
            out.append(f"{path} has no {name}: write it (docs/adding-a-demo.md, section 4).")
        elif _unwritten(ast.get_source_segment(source, functions[name])):
            out.append(f"{path}'s {name} still raises NotImplementedError: write it.")
    return out


def _catalog_problems(demo, root: Path) -> list[str]:
    papers = json.loads((root / "apps" / "catalog.json").read_text(encoding="utf-8"))
    if any(paper.get("demo") == demo.id for paper in papers):
        return []
    same = [p["id"] for p in papers if demo.paper.arxiv_id and p.get("arxiv_id") == demo.paper.arxiv_id]
    where = f" (its entry is {same[0]!r}, arXiv {demo.paper.arxiv_id})" if same else ""
    return [f'apps/catalog.json has no paper whose "demo" is "{demo.id}": set it on the paper\'s entry{where}.']


def _requirement_problems(demo, root: Path) -> list[str]:
    from apps.spaces import project, tested_versions

    ranges = {project(line) for line in (root / "requirements.txt").read_text(encoding="utf-8").splitlines()
              if re.match(r"[A-Za-z0-9]", line)}
    pins = tested_versions(root / "constraints.txt")
    out = []
    for requirement in demo.requirements:
        if project(requirement) not in ranges:
            out.append(f"requirements.txt does not list {project(requirement)} (the demo requires {requirement}): "
                       "add its range.")
        if project(requirement) not in pins:
            out.append(f"constraints.txt does not pin {project(requirement)}: pin the release the tests run.")
    return out


def stale_generated(demo, root: Path = REPO_ROOT) -> list[str]:
    """The generated files under ``root`` that differ from what ``python -m apps.api_docs`` would write now (the
    API reference, the weights table, the README, the demo's Space folder and the hub's); nothing is written."""
    from apps import api_docs, spaces

    stale = []
    for page, rewrite in api_docs.PAGES:
        relative = page.relative_to(REPO_ROOT).as_posix()
        text = (root / relative).read_text(encoding="utf-8") if (root / relative).is_file() else ""
        try:
            if rewrite(text) != text:
                stale.append(relative)
        except SystemExit:  # the page lacks its generated block's markers
            stale.append(relative)
    for name in (demo.id, spaces.HUB_SPACE):
        folder = root / spaces.SPACES_ROOT.relative_to(REPO_ROOT)
        stale += [path.relative_to(root).as_posix() for path in spaces.space_files(name).stale(folder)]
    return stale


def glue_lines(demo_id: str, root: Path = REPO_ROOT) -> int:
    """The demo's glue as scripts/glue-lines counts it (its own counting, on the files under ``root``)."""
    script = REPO_ROOT / "scripts" / "glue-lines"
    loader = importlib.machinery.SourceFileLoader("glue_lines", str(script))  # a script without .py
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    files = [root / "apps" / demo_id / name for name in module.GLUE]
    return sum(module.lines(file.read_text(encoding="utf-8")) for file in files if file.is_file())


def _screenshot_problems(demo, root: Path) -> list[str]:
    out = []
    if not (root / "docs" / "screenshots" / f"{demo.id}.png").is_file():
        out.append(f"docs/screenshots/{demo.id}.png is missing (the README's picture): run scripts/screenshots "
                   f"-k {demo.id}.")
    flows = root / "tests" / "browser" / "test_docs_screenshots.py"
    if demo.page and flows.is_file():
        [custom] = [node.value for node in ast.parse(flows.read_text(encoding="utf-8")).body
                    if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "CUSTOM"]
        if demo.id not in ast.literal_eval(custom):
            out.append(f"It has a page of its own: write its screenshot flow in {flows.relative_to(root)} and add "
                       f"{demo.id!r} to CUSTOM there.")
    return out


def problems(demo_id: str, root: Path = REPO_ROOT) -> list[str]:
    """What the demo still lacks, one sentence each, without running a test: its registration, pipeline, API,
    tiny checkpoints, own tests, catalog entry, requirements, generated files, screenshot and glue."""
    from apps import get_demo

    if (root / "apps" / demo_id / "__init__.py").is_file() and "DEMO = Demo(" not in (
            root / "apps" / demo_id / "__init__.py").read_text(encoding="utf-8"):
        return [f"apps/{demo_id}/__init__.py declares no DEMO = Demo(...): register it (docs/adding-a-demo.md, "
                "section 1)."]
    demo = get_demo(demo_id)  # a UserInputError naming the demos when there is none
    out = []
    if placeholders := _placeholders(demo):
        out.append(f"apps/{demo_id}/__init__.py still has the skeleton's placeholders ({', '.join(placeholders)}): "
                   "write the demo's own.")
    out += _pipeline_problems(demo) + _api_problems(demo) + _fixture_problems(demo, root)
    own = root / "tests" / demo_id
    if not any(own.glob("test_*.py")):
        out.append(f"tests/{demo_id}/ has no test file: test what the demo does beyond its declarations (its pipeline "
                   "on the tiny checkpoints, its checks).")
    out += _catalog_problems(demo, root) + _requirement_problems(demo, root)
    out += [f"{path} is stale: {REGENERATE}." for path in stale_generated(demo, root)]
    out += _screenshot_problems(demo, root)
    glue = glue_lines(demo_id, root)
    if glue > MAX_GLUE:
        out.append(f"Its glue is {glue} lines (scripts/glue-lines), over {MAX_GLUE}: move logic out of __init__, "
                   "checks, actions, api and pages into the pipeline or shared code.")
    return out


# ---- demohub check: the tests that cover a demo ----

def selection(demo_id: str, root: Path = REPO_ROOT) -> list[str]:
    """``pytest`` arguments for the tests that cover the demo, in the suite's order: its own folder, and of the
    generated tests those that name it: the demo's id anywhere in a test's name (``[<id>]``,
    ``[<id>-<endpoint>-...]``, its own folder, a test named for it) or one of its endpoints' names as a whole part of
    a parametrised id (``[search_code]``, ``[search_code-files]``: the name alone would also pick ``generate`` out
    of ``test_a_generated_page``)."""
    from apps import get_demo

    demo = get_demo(demo_id)
    names = [demo.id]
    for endpoint in demo.endpoints():
        names += [f"[{endpoint.name}]", f"[{endpoint.name}-", f"-{endpoint.name}-", f"-{endpoint.name}]"]
    folders = [f"tests/{demo.id}"] if (root / "tests" / demo.id).is_dir() else []
    folders += [folder for folder in GENERATED_TESTS if (root / folder).is_dir()]
    # In the whole suite's order (by folder name): a session fixture that one folder leaves behind meets the
    # others as it does there.
    return [*sorted(folders), "-k", " or ".join(dict.fromkeys(names))]


def pytest_command(demo_id: str, root: Path = REPO_ROOT) -> tuple[list[str], dict[str, str]]:
    """The command that runs the selection in the checkout at ``root`` (its code first on the path) and its
    environment."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    return [sys.executable, "-m", "pytest", *selection(demo_id, root)], env


def shown(command: list[str], root: Path = REPO_ROOT) -> str:
    return f"cd {shlex.quote(str(root))} && PYTHONPATH={shlex.quote(str(root))} {shlex.join(command)}"


def run_tests(demo_id: str, root: Path = REPO_ROOT) -> tuple[int, str]:
    """Run the selection, its output shown as it comes; pytest's exit code and its counts ("87 passed, 2 skipped")."""
    command, env = pytest_command(demo_id, root)
    print(shown(command, root), flush=True)
    counts = ""
    with subprocess.Popen(command, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          bufsize=1) as process:
        for line in process.stdout:
            print(line, end="", flush=True)
            counts = pytest_counts(line) or counts
    return process.returncode, counts or f"pytest exited with {process.returncode}"


def pytest_counts(line: str) -> str:
    """The counts of pytest's last line ("== 2 failed, 38 passed, 1047 deselected, 3 warnings in 9.10s ==" ->
    "2 failed, 38 passed"), "" for any other line."""
    found = re.fullmatch(r"=+ (\d+ \w+.*) in [\d.]+s\b.*? =+", line.strip())
    return ", ".join(part for part in found[1].split(", ") if not re.search(r"deselected|warnings?$", part)) if (
        found) else ""


def summary(demo_id: str, todo: int, tests: str) -> str:
    things = "nothing to do" if not todo else f"{todo} thing{'s' if todo > 1 else ''} to do"
    return f"{demo_id}: {things}; tests: {tests}"


# ---- the skeleton (docs/adding-a-demo.md's template; <id> and <Name> replaced) ----

PLACEHOLDERS = ("One sentence a visitor reads under the title.", "What it does, in 60 characters",
                "The paper's title", "0000.00000", "OWNER/REPO")

SKELETON = {
    "apps/<id>/__init__.py": '''\
"""<Name>: what it does (registration only; its pages come from api.py)."""

from shared.registry import Demo, Paper, WeightSet

DEMO = Demo(
    id="<id>",  # the folder's name; the route /<id>, the Space's name
    title="<Name>: what it does",  # the part before the colon is the paper's short name in the hub's navigation
    tagline="One sentence a visitor reads under the title.",
    summary="What it does, in 60 characters",  # the Space card's short_description (at most 60 characters)
    paper=Paper(
        title="The paper's title",
        authors="First Author, Second Author",
        arxiv_id="0000.00000",
        code_url="https://github.com/OWNER/REPO",
        abstract="What the paper does, in two or three sentences.",
    ),
    weight_sets=(  # every allow_patterns entry must be in the repository at that revision
        WeightSet("<id>-base", "Official <Name> (what it is).", repo_id="OWNER/REPO",
                  allow_patterns=("config.json", "model.safetensors"), size_bytes=0, license=""),
    ),
    pipeline="apps.<id>.pipeline:<Name>Pipeline",
    api="apps.<id>.api",
    requirements=(),  # what its Space installs beyond the hub's own ("a-library>=1.0")
    works_without_weights="",  # what its page does with no weights at all ("" if nothing)
    about="",  # the README's paragraph: what a visitor does there and gets ("": the tagline)
    weights_give="the model's answers",  # the README's table: what the official weights add
    page="",  # "apps.<id>.page": a Gradio page of its own ("": the form made from api.py)
    preview="",  # "apps.<id>.<module>:<function>" -> HTML: the card's picture ("": its title drawn)
    emoji="🧪",
    space_colours=("blue", "green"),  # its Space card's colorFrom and colorTo
    suggested_hardware="cpu-basic",
    cpu_dtype=None,  # e.g. "bfloat16" for a model too large for fp32 in RAM
    gpu_dtype=None,  # e.g. "float16" where the weights were released for fp16 inference
    quantizes=False,  # from_pretrained takes quantization="int8"|"int4" (DEMOHUB_QUANTIZE, on a CPU)
)
''',
    "apps/<id>/checks.py": '''\
"""<Name>'s input checks, torch-free (``<Name>Pipeline.check_inputs`` is ``check_inputs``)."""

from __future__ import annotations

from dataclasses import dataclass

from shared.errors import UserInputError, named_argument
from shared.validation import check_text

MAX_TEXT_CHARS = 1000


@dataclass(frozen=True)
class <Name>Inputs:
    text: str


def check_inputs(text) -> <Name>Inputs:
    """Every check of a request, without weights: a sentence a person can act on, naming the input."""
    if text is None or (isinstance(text, str) and not text.strip()):
        raise UserInputError("No text: write what the model should read.", argument="text")
    with named_argument("text"):
        return <Name>Inputs(check_text(text, "The text", MAX_TEXT_CHARS))
''',
    "apps/<id>/pipeline.py": '''\
"""``<Name>Pipeline``: what it does, on the official weights (shared/pipeline.py's contract)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from apps.<id> import checks
from shared.pipeline import Callback, Pipeline, PipelineOutput


@dataclass(frozen=True)
class <Name>Output(PipelineOutput):
    answer: str


class <Name>Pipeline(Pipeline):
    output_class = <Name>Output
    components = ("model",)  # the attributes that hold its torch modules: the pool measures them
    check_inputs = staticmethod(checks.check_inputs)

    @classmethod
    def from_pretrained(cls, path, *, device="cpu", dtype=torch.float32) -> <Name>Pipeline:
        raise NotImplementedError("Write <Name>Pipeline.from_pretrained: read the official files in path unchanged "
                                  "(shared.checkpoints; no trust_remote_code), put the model on device in dtype, and "
                                  "return the pipeline.")

    def __call__(self, text, *, callback: Callback | None = None) -> <Name>Output:
        raise NotImplementedError("Write <Name>Pipeline.__call__: check the inputs (self.check_inputs), run the "
                                  "model calling callback(step, total), and return a <Name>Output.")
''',
    "apps/<id>/api.py": '''\
"""<Name>'s API functions, declared once (``shared.api``); its pages are the forms made from this declaration."""

from __future__ import annotations

from apps.<id> import checks
from shared.api import Endpoint, Example, Input
from shared.context import DemoContext

ENDPOINTS = (
    Endpoint(
        name="run_<id>",  # /run_<id> and the MCP tool: name it for what it does ("search_code")
        summary="What it does and what it needs, one line.",
        inputs=(
            Input("text", "text", "what the model reads", max_length=checks.MAX_TEXT_CHARS,
                  example="an example a visitor starts from", label="Text"),
        ),
        returns='{"answer"}',
        run="apps.<id>.api:run_<id>",
        check="apps.<id>.api:check_run_<id>",
        examples=(Example("A first example", {"text": "an example a visitor starts from"}),),
    ),
)


def check_run_<id>(ctx: DemoContext, text) -> checks.<Name>Inputs:
    return checks.check_inputs(text)


def run_<id>(ctx: DemoContext, text) -> dict:
    with ctx.compute() as pipe:
        return pipe(text).to_dict()
''',
    "tests/fixtures/tiny_<id>.py": '''\
"""Tiny <Name> checkpoints in exactly the official layout (test weights only): the default weight set's file names,
config keys and state-dict keys, tiny sizes (docs/adding-a-demo.md, section 4)."""

from __future__ import annotations

from pathlib import Path


def build_default(folder: Path) -> None:
    """The default weight set, tiny, in ``folder`` (the hub's tests serve it through DEMOHUB_CHECKPOINTS)."""
    raise NotImplementedError("Write build_default: the default weight set's files in folder, in the official layout "
                              "with tiny sizes, so that <Name>Pipeline.from_pretrained loads them.")


def official_repo(tmp: Path) -> dict[str, bytes]:
    """The files of the default weights' Hub repository, ``{path: bytes}``, including files the allow-list skips
    (the local Hub test server serves them)."""
    raise NotImplementedError("Write official_repo: build_default's files (written under tmp) and the repository's "
                              "other files, as {path: bytes}.")
''',
    "tests/<id>/__init__.py": "",
}

