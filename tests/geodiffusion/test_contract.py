"""GeoDiffusion against the one pipeline contract (shared/pipeline.py): loading, check_inputs, callback, Output, the
named API endpoint, validation before queueing, and UI-free actions."""

from __future__ import annotations

import dataclasses
import inspect
import json
import subprocess
import sys

import pytest
import torch

from apps.geodiffusion import DEMO
from apps.geodiffusion.actions import GeoDiffusionPage
from apps.geodiffusion.layout import KNOWN_CONFIGS
from apps.geodiffusion.pipeline import GeoDiffusionOutput, GeoDiffusionPipeline
from shared.context import DemoContext
from shared.errors import UserInputError
from shared.pipeline import Pipeline
from shared.pool import ModelPool, estimate_bytes
from shared.weights import REPO_ROOT
from tests.conftest import serve_page
from tests.fixtures.tiny_geodiffusion import install_in_hf_cache

COCO = KNOWN_CONFIGS["coco-stuff-256x256"]
NU = KNOWN_CONFIGS["nuimages-256x256"]
LAYOUT = json.dumps({"bbox": [["car", 0.1, 0.2, 0.5, 0.6], ["sky-other", 0.0, 0.0, 1.0, 0.3]]})
CHECKPOINT = "coco-stuff-256x256"


def test_from_pretrained_takes_keyword_only_device_and_dtype(coco_pipeline):
    assert issubclass(GeoDiffusionPipeline, Pipeline) and GeoDiffusionPipeline.output_class is GeoDiffusionOutput
    params = inspect.signature(GeoDiffusionPipeline.from_pretrained).parameters
    assert params["device"].kind is params["dtype"].kind is inspect.Parameter.KEYWORD_ONLY
    assert params["device"].default == "cpu" and params["dtype"].default is torch.float32
    assert coco_pipeline.device == torch.device("cpu") and coco_pipeline.dtype == torch.float32
    for module in (coco_pipeline.sd.unet, coco_pipeline.sd.vae, coco_pipeline.sd.text_encoder):
        assert {(p.device.type, p.dtype) for p in module.parameters()} == {("cpu", torch.float32)}


def test_estimate_bytes_counts_what_memory_bytes_counted(coco_pipeline):
    """The removed ``memory_bytes`` summed the parameters of UNet, VAE and text encoder; ``estimate_bytes`` counts the
    same tensors plus the buffers, here only the text encoder's position ids (1 x 77 int64 = 616 bytes)."""
    modules = (coco_pipeline.sd.unet, coco_pipeline.sd.vae, coco_pipeline.sd.text_encoder)
    memory_bytes = sum(p.numel() * p.element_size() for m in modules for p in m.parameters())
    buffers = [b for m in modules for b in m.buffers()]
    assert [tuple(b.shape) for b in buffers] == [(1, 77)] and buffers[0].dtype == torch.int64
    assert estimate_bytes(coco_pipeline) == memory_bytes + 616


@pytest.mark.parametrize(("kwargs", "argument", "match"), [
    ({"layout": "{"}, "layout", "not valid JSON"),
    ({"layout": '{"bbox": [["car", 0.5, 0.5, 0.2, 0.8]]}'}, "layout", r"x2 > x1"),  # inverted box
    ({"layout": '{"bbox": [["car", 0.1, 0.1, 1.3, 0.2]]}'}, "layout", "between 0 and 1"),
    ({"layout": '{"bbox": [["unicorn", 0.1, 0.1, 0.2, 0.2]]}'}, "layout", "unicorn"),
    ({"layout": {"bbox": [["car", 0.1, 0.1, 0.2, 0.2]] * 19}}, "layout", "at most 18 boxes"),
    ({"layout": '{"bbox": [], "wether": "rain"}'}, "layout", "wether"),
    ({"seed": -1}, "seed", "below the minimum"),
    ({"seed": 2**63}, "seed", "above the maximum"),
    ({"seed": 1.5}, "seed", "whole number"),
    ({"seed": None}, "seed", "whole number"),
    ({"num_images": 0}, "num_images", "number of images"),
    ({"num_images": 9}, "num_images", "between 1 and 8"),
    ({"num_inference_steps": 0}, "num_inference_steps", "Steps must be a whole number between 1 and 200"),
    ({"num_inference_steps": 201}, "num_inference_steps", "got 201, above the maximum"),
    ({"num_inference_steps": "many"}, "num_inference_steps", "whole number"),
    ({"guidance_scale": -3.0}, "guidance_scale", r"between 0 and 30; got -3.0, below the minimum"),
    ({"guidance_scale": float("nan")}, "guidance_scale", "must be a number"),
    ({"epsilon_scaling": 3.0}, "epsilon_scaling", r"Epsilon Scaling factor must be a number between 0.5 and 1.5"),
    ({"shuffle_seed": -2}, "shuffle_seed", "shuffle seed"),
])
def test_check_inputs_names_the_argument_without_weights(kwargs, argument, match):
    args = {"layout": "", **kwargs}
    with pytest.raises(UserInputError, match=match) as info:
        GeoDiffusionPipeline.check_inputs(**args, config=COCO)
    assert info.value.argument == argument


def test_check_inputs_normalises_and_fills_the_checkpoint_defaults():
    inputs = GeoDiffusionPipeline.check_inputs('{"camera": "Back_Left", "bbox": [["Traffic Cone", 0, 0, 1, 1]]}',
                                               seed=3.0, num_images=2.0, config=NU)
    assert inputs.layout.camera == "back left" and inputs.layout.boxes[0].label == "traffic_cone"
    assert (inputs.seed, inputs.num_images) == (3, 2) and type(inputs.seed) is int
    assert (inputs.num_inference_steps, inputs.guidance_scale) == (100, 5.0)  # nuImages' released config
    assert inputs.epsilon_scaling is None and inputs.shuffle_seed is None
    assert GeoDiffusionPipeline.check_inputs("", seed=2**63 - 1, config=COCO).seed == 2**63 - 1  # exact


@pytest.mark.parametrize(("args", "argument"), [
    (("{", CHECKPOINT, 0, 2, 4.0), "layout_json"),
    (("", "no-such-checkpoint", 0, 2, 4.0), "checkpoint"),
    (("", CHECKPOINT, -1, 2, 4.0), "seed"),
    (("", CHECKPOINT, 0, 500, 4.0), "steps"),
    (("", CHECKPOINT, 0, 2, 99.0), "cfg"),
    (("", CHECKPOINT, 0, 2, 4.0, 9), "num_images"),
    (("", CHECKPOINT, 0, 2, 4.0, 1, 2.0), "epsilon_scaling"),
    (("", CHECKPOINT, 0, 2, 4.0, 1, None, "turbo"), "sampler"),
])
def test_the_page_validator_marks_the_page_input(offline, args, argument):
    """The check names the pipeline's argument (num_inference_steps); its page_inputs declaration maps it to the
    page's input (steps), which the validator marks."""
    from apps import ui

    page = GeoDiffusionPage(DemoContext(DEMO, ModelPool(budget_bytes=10**9)))
    names = list(inspect.signature(page.check_generate).parameters)
    values = [*args, *[None, None, "default"][len(args) - 5:]][:len(names)]
    results = ui.validator(page.check_generate)(*values)
    assert [r["is_valid"] for r in results].count(False) == 1
    assert names[[r["is_valid"] for r in results].index(False)] == argument


def test_checks_take_the_inputs_of_their_events(offline):
    """Gradio's validator marks the input whose name the error's argument is: the page check's parameters are the
    Generate button's inputs, and the named endpoint's (declared in apps/geodiffusion/api.py) its six inputs, the
    pipeline's names for them (num_inference_steps) reported under the public ones (steps)."""
    ctx = DemoContext(DEMO, ModelPool(budget_bytes=10**9))
    page = GeoDiffusionPage(ctx)
    generate = {e.name: e for e in DEMO.endpoints()}["generate"]
    api = ["layout_json", "checkpoint", "seed", "steps", "cfg"]
    assert [i.name for i in generate.inputs] == [*api, "sampler"]
    assert list(inspect.signature(page.check_generate).parameters) == [*api, "num_images", "epsilon_scaling",
                                                                       "sampler"]

    def call(**changes):
        return generate.check_call(ctx, {"layout_json": "", "checkpoint": CHECKPOINT, "seed": 0, "steps": 2,
                                         "cfg": 4.0, "sampler": "default"} | changes)

    for changes, argument in [({"cfg": -1.0}, "cfg"), ({"sampler": "quick"}, "sampler"), ({"steps": 0}, "steps"),
                              ({"layout_json": "{not json"}, "layout_json")]:
        with pytest.raises(UserInputError) as info:
            call(**changes)
        assert info.value.argument == argument, changes
    assert call(steps=None, sampler="fast").num_inference_steps == 20


def test_callback_gets_int_steps_up_to_the_total(coco_pipeline):
    calls = []
    coco_pipeline(LAYOUT, num_inference_steps=3, callback=lambda step, total: calls.append((step, total)))
    assert calls == [(1, 3), (2, 3), (3, 3)]
    assert all(type(step) is int and type(total) is int for step, total in calls)


def test_output_is_frozen_and_its_dict_is_json(coco_pipeline):
    out = coco_pipeline(LAYOUT, seed=2, num_images=2, num_inference_steps=2, epsilon_scaling=1.005)
    with pytest.raises(dataclasses.FrozenInstanceError):
        out.prompt = "another"
    with pytest.raises(dataclasses.FrozenInstanceError):
        out.layout.camera = "back"
    assert isinstance(out.images, tuple) and isinstance(out.dropped_boxes, tuple)
    data = out.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert [url[:22] for url in data["images"]] == ["data:image/png;base64,"] * 2
    assert data["layout"] == {"bbox": [["car", 0.1, 0.2, 0.5, 0.6], ["sky-other", 0.0, 0.0, 1.0, 0.3]],
                              "camera": "front", "timeofday": "daytime", "weather": "sunny"}
    assert (data["seed"], data["num_inference_steps"], data["epsilon_scaling"]) == (2, 2, 1.005)
    assert data["dropped_boxes"] == [] and data["warnings"] == []


@pytest.fixture
def served_page(offline, coco_checkpoint):
    """The page alone, launched in-process, with the tiny COCO-Stuff checkpoint in the HF cache."""
    from apps.geodiffusion.page import build

    install_in_hf_cache(coco_checkpoint, offline, f"KaiChen1998/geodiffusion-{CHECKPOINT}")
    ctx = DemoContext(DEMO, ModelPool(budget_bytes=10**9))
    with serve_page(build(ctx)) as url:
        yield ctx, url


def test_named_endpoint_returns_the_pipelines_to_dict(served_page):
    from gradio_client import Client

    ctx, url = served_page
    client = Client(url, verbose=False)
    answer = client.predict(LAYOUT, CHECKPOINT, 5, 2, 4.5, api_name="/generate")
    direct = ctx.pipeline(CHECKPOINT)(LAYOUT, seed=5, num_inference_steps=2, guidance_scale=4.5)
    assert answer == direct.to_dict()
    assert len(answer["images"]) == 1 and answer["guidance_scale"] == 4.5
    defaults = client.predict(LAYOUT, CHECKPOINT, api_name="/generate")  # seed 0, the checkpoint's steps and cfg
    assert defaults == ctx.pipeline(CHECKPOINT)(LAYOUT).to_dict() and defaults["num_inference_steps"] == 50


def test_bad_input_is_refused_before_the_queue(served_page):
    """The validator answers with the check's sentence: no weights were looked up, nothing was loaded."""
    from gradio_client import Client

    from tests.security import raw

    ctx, url = served_page
    client = Client(url, verbose=False)
    with pytest.raises(Exception, match=r"- steps: steps must be a whole number between 1 and 200; got 500") as info:
        client.predict(LAYOUT, CHECKPOINT, 5, 500, 4.0, api_name="/generate")
    assert type(info.value).__name__ == "ValidationError"
    with pytest.raises(Exception, match=r"- layout_json: .*Box 1 \(car\).*x2 > x1"):
        client.predict('{"bbox": [["car", 0.5, 0.5, 0.2, 0.8]]}', CHECKPOINT, api_name="/generate")
    # The page's own event (private: a browser joins it by fn_index) is checked the same way.
    config = client.config
    status, detail = raw.join(url.rstrip("/"), raw.fn_index(config, "generate_on_page"),
                              [LAYOUT, CHECKPOINT, 5, 500, 4.0, 1, None, "default"], raw.session())
    expected = "Steps must be a whole number between 1 and 200; got 500, above the maximum."
    assert status == 422 and detail.split() == expected.split()
    stats = ctx.pool.stats()
    assert stats.loaded == {} and stats.misses == 0 and stats.loads == 0  # the handler never ran


@pytest.mark.parametrize(("module", "absent"), [
    ("apps.geodiffusion.actions", ("gradio", "streamlit", "torch")),
    ("apps.geodiffusion.streamlit_page", ("gradio",)),
])
def test_ui_free_modules_import_no_gradio(module, absent):
    code = (f"import sys, {module}\n"
            f"loaded = [m for m in {absent!r} if m in sys.modules]\n"
            "assert not loaded, loaded\nprint('ok')")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=180,
                         env={**__import__("os").environ, "HF_HUB_OFFLINE": "1"})
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-2000:]
