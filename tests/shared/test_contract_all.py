"""The one pipeline contract, checked the same way for every registered demo (each demo's own
tests/<demo>/test_contract.py runs it on a tiny checkpoint), and the import rules of its front ends."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
import subprocess
import sys

import pytest
import torch

import apps
from shared.pipeline import Pipeline, PipelineOutput
from tests.conftest import page_events

DEMOS = [d.id for d in apps.DEMOS]


def own_modules(demo_id: str, *names: str) -> str:
    """``import`` of those of the demo's modules that it has (a demo on the generated pages has no actions or
    page of its own; its api is what the pages and endpoints call)."""
    found = [f"apps.{demo_id}.{n}" for n in names if importlib.util.find_spec(f"apps.{demo_id}.{n}")]
    return "import " + ", ".join(found)


@pytest.mark.parametrize("demo_id", DEMOS)
def test_pipeline_follows_the_contract(demo_id):
    cls = apps.get_demo(demo_id).pipeline_class()
    assert issubclass(cls, Pipeline) and cls.__name__.endswith("Pipeline")
    params = inspect.signature(cls.from_pretrained).parameters
    assert params["device"].kind is inspect.Parameter.KEYWORD_ONLY and params["device"].default == "cpu"
    assert params["dtype"].kind is inspect.Parameter.KEYWORD_ONLY and params["dtype"].default is torch.float32
    checks = importlib.import_module(f"apps.{demo_id}.checks")
    assert isinstance(inspect.getattr_static(cls, "check_inputs"), staticmethod), "check_inputs needs no weights"
    assert cls.check_inputs is checks.check_inputs, "the pipeline's checks are the torch-free checks module's"
    assert cls.check_inputs is not Pipeline.check_inputs and cls.__call__ is not Pipeline.__call__
    # check_inputs returns one frozen <Name>Inputs (a NamedTuple or a frozen dataclass), not a loose tuple or dict
    inputs_name = cls.__name__.removesuffix("Pipeline") + "Inputs"
    inputs = getattr(checks, inputs_name)
    assert inspect.signature(checks.check_inputs).return_annotation in (inputs_name, inputs)
    assert (issubclass(inputs, tuple) and hasattr(inputs, "_fields")) or (
        dataclasses.is_dataclass(inputs) and inputs.__dataclass_params__.frozen)
    call = inspect.signature(cls.__call__).parameters
    assert call["callback"].kind is inspect.Parameter.KEYWORD_ONLY and call["callback"].default is None
    assert cls.components and all(isinstance(name, str) for name in cls.components), "declare its modules"
    assert not any(name in call for name in ("progress", "on_step")), "callback(step, total) is the one signature"
    out = cls.output_class
    assert issubclass(out, PipelineOutput) and out.__name__ == cls.__name__.removesuffix("Pipeline") + "Output"
    assert dataclasses.is_dataclass(out) and out.__dataclass_params__.frozen
    assert not hasattr(cls, "memory_bytes"), "memory is measured once, by shared.pool.estimate_bytes"


@pytest.mark.parametrize("demo_id", DEMOS)
def test_every_model_event_is_validated_before_queueing(demo_id, tmp_path, monkeypatch):
    demo = apps.get_demo(demo_id)
    model_events = [f for f in page_events(demo, tmp_path, monkeypatch) if f.concurrency_id == demo.id]
    assert model_events and all(f.validator is not None for f in model_events), [f.name for f in model_events]
    for f in model_events:  # one check parameter per event input, in order; an endpoint's check has its names
        names = list(inspect.signature(inspect.unwrap(f.validator)).parameters)
        assert len(names) == len(f.inputs), f.name
        if f.api_name and f.api_visibility == "public":
            assert names == list(inspect.signature(inspect.unwrap(f.fn)).parameters), f.name


def modules_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print(' '.join(sorted(m.split('.')[0] for m in sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    return set(result.stdout.split())


@pytest.mark.parametrize("demo_id", DEMOS)
def test_actions_import_no_ui_library(demo_id):
    loaded = modules_after(own_modules(demo_id, "actions", "api"))
    assert not loaded & {"gradio", "streamlit"}


@pytest.mark.parametrize("demo_id", DEMOS)
def test_checks_import_no_model_library(demo_id):
    """What runs before a request is queued must not wait for torch (the first call after start would)."""
    loaded = modules_after(own_modules(demo_id, "checks", "actions", "api"))
    assert not loaded & {"torch", "transformers", "diffusers", "gradio", "streamlit"}


@pytest.mark.parametrize("demo_id", DEMOS)
def test_streamlit_pages_never_import_gradio(demo_id):
    page = f"apps.{demo_id}.streamlit_page" if importlib.util.find_spec(f"apps.{demo_id}.streamlit_page") else (
        "apps.streamlit_forms")  # a demo without its own: the form made from its declarations
    code = (f"import importlib.util as u; spec = u.find_spec({page!r}); "
            "import ast, pathlib; tree = ast.parse(pathlib.Path(spec.origin).read_text()); "
            "names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names] + "
            "[n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]; "
            "[__import__(n) for n in names if n and n.startswith('apps')]")
    assert "gradio" not in modules_after(code)


def _reachable_modules(obj, depth: int = 3, seen=None):
    """Every torch module reachable from ``obj`` through attributes, dicts and sequences (what a pipeline holds,
    found the long way)."""
    seen = set() if seen is None else seen
    if id(obj) in seen or depth < 0:
        return
    seen.add(id(obj))
    if isinstance(obj, torch.nn.Module):
        yield obj
        return
    values = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else (
        vars(obj).values() if hasattr(obj, "__dict__") and not isinstance(obj, type) else ())
    for value in values:
        yield from _reachable_modules(value, depth - 1, seen)


def _storages(modules) -> set[int]:
    return {t.untyped_storage().data_ptr() for m in modules for t in [*m.parameters(), *m.buffers()]}


@pytest.mark.parametrize("demo_id", DEMOS)
def test_declared_components_hold_every_module_the_pipeline_has(demo_id, tiny_root):
    """The pool measures a pipeline by its declared ``components`` alone: loaded from its tiny checkpoint, every
    tensor the pipeline holds anywhere is among them, so the memory estimate misses nothing."""
    from shared.pool import estimate_bytes
    from shared.weights import REPO_ROOT

    demo = apps.get_demo(demo_id)
    name = demo.weight_sets[0].name if demo_id != "prax" else "tiny-pragmatic"
    folder = (REPO_ROOT / "checkpoints" if demo_id == "prax" else tiny_root) / demo_id / name
    pipe = demo.pipeline_class().from_pretrained(folder, device="cpu", dtype=torch.float32)
    declared = list(pipe.modules())
    assert declared and _storages(_reachable_modules(pipe)) <= _storages(declared)
    assert estimate_bytes(pipe) == sum({t.untyped_storage().data_ptr(): t.untyped_storage().nbytes()
                                        for m in declared for t in [*m.parameters(), *m.buffers()]}.values())
