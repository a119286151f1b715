"""DemoContext: weights resolved, pipeline built once through the pool, default = first set available offline."""

import json
import sys
import threading
import time
import types

import pytest
import torch

from shared.context import DemoContext
from shared.errors import WeightsUnavailable
from shared.pool import ModelPool
from shared.registry import Demo, Paper, WeightSet


class ScalePipeline:
    """A real (minimal) pipeline: reads its config and weights from the resolved folder."""

    loads = 0

    def __init__(self, scale: torch.Tensor, device, dtype):
        self.linear = torch.nn.Linear(1, 1, bias=False).to(device=device, dtype=dtype)
        with torch.no_grad():
            self.linear.weight.fill_(float(scale))

    @classmethod
    def from_pretrained(cls, path, device=None, dtype=None):
        cls.loads += 1
        config = json.loads((path / "config.json").read_text())
        return cls(torch.tensor(config["scale"]), device, dtype)

    def __call__(self, x: float) -> float:
        with torch.no_grad():
            return float(self.linear(torch.tensor([[x]], dtype=self.linear.weight.dtype)))


def run_together(*targets) -> None:
    threads = [threading.Thread(target=target) for target in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def make_demo(monkeypatch, tmp_path):
    module = types.ModuleType("ctx_test_pipeline")
    module.ScalePipeline = ScalePipeline
    monkeypatch.setitem(sys.modules, "ctx_test_pipeline", module)
    folder = tmp_path / "ckpts" / "scaler" / "local"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"scale": 3.0}))
    monkeypatch.setenv("DEMOHUB_CHECKPOINTS", str(tmp_path / "ckpts"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("DEMOHUB_DEVICE", "cpu")
    return Demo(id="scaler", title="Scaler", tagline="", summary="s", paper=Paper("t", "a", "0000.00000"),
                weight_sets=(WeightSet("official", "big", repo_id="o/big", size_bytes=10**9),
                             WeightSet("local", "bundled")),
                pipeline="ctx_test_pipeline:ScalePipeline", page="ctx_test_pipeline")


def test_default_is_first_available_and_loads_once(monkeypatch, tmp_path):
    demo = make_demo(monkeypatch, tmp_path)
    ctx = DemoContext(demo, ModelPool(budget_bytes=10**6))
    assert ctx.default_weights() == "local"
    ScalePipeline.loads = 0
    results = []
    run_together(*[lambda: results.append(ctx.pipeline()(2.0))] * 8)
    assert results == [6.0] * 8
    assert ScalePipeline.loads == 1
    assert ("scaler", "local") in ctx.pool
    labels = dict((v, k) for k, v in ctx.weight_choices())
    assert labels["local"] == "local (loaded)"
    assert labels["official"] == "official (not on this server)"


def test_missing_official_weights_raise_the_download_message_and_unload_nothing(monkeypatch, tmp_path):
    """The request fails before the pool makes room: the model already loaded stays."""
    demo = make_demo(monkeypatch, tmp_path)
    pool = ModelPool(budget_bytes=10**6)
    ctx = DemoContext(demo, pool, operator_here=True)
    ctx.pipeline("local")
    with pytest.raises(FileNotFoundError, match="demohub download scaler --weights official"):
        ctx.pipeline("official")
    after = pool.stats()
    assert list(after.loaded) == ["scaler/local"] and after.loads == 1 and after.evictions == 0


def test_local_weights_do_not_evict_by_the_official_download_size(monkeypatch, tmp_path):
    demo = make_demo(monkeypatch, tmp_path)
    pool = ModelPool(budget_bytes=10**6)  # far below the official set's registered 1 GB
    pool.get("other", lambda: torch.nn.Linear(10, 10))
    DemoContext(demo, pool).pipeline("local")
    assert "other" in pool and pool.stats().evictions == 0


def test_two_demos_load_one_after_another(monkeypatch, tmp_path):
    demo = make_demo(monkeypatch, tmp_path)
    (tmp_path / "ckpts" / "scaler" / "second").mkdir()
    (tmp_path / "ckpts" / "scaler" / "second" / "config.json").write_text(json.dumps({"scale": 2.0}))
    demo = Demo(id=demo.id, title="", tagline="", summary="s", paper=demo.paper, pipeline=demo.pipeline, page=demo.page,
                weight_sets=(*demo.weight_sets, WeightSet("second", "bundled")))
    active, overlaps = [], []
    original = ScalePipeline.from_pretrained.__func__

    def slow_load(cls, path, device=None, dtype=None):
        active.append(path)
        overlaps.append(len(active))
        time.sleep(0.2)
        active.remove(path)
        return original(cls, path, device, dtype)

    monkeypatch.setattr(ScalePipeline, "from_pretrained", classmethod(slow_load))
    ctx = DemoContext(demo, ModelPool(budget_bytes=10**6))
    run_together(lambda: ctx.pipeline("local"), lambda: ctx.pipeline("second"))
    assert overlaps == [1, 1] and len(ctx.pool.stats().loaded) == 2


def test_preferred_default_and_missing_weights(monkeypatch, tmp_path):
    from shared.weights import WeightState

    demo = make_demo(monkeypatch, tmp_path)
    ctx = DemoContext(demo, ModelPool(budget_bytes=10**6))
    assert ctx.default_weights(prefer=("official", "nope", "local")) == "local"  # first preferred that is here
    assert ctx.missing_weights("local") is None
    ws, st = ctx.missing_weights("official")
    assert ws.name == "official" and st is WeightState.UNAVAILABLE and not st.here
    assert WeightState.BUNDLED.here and WeightState.CACHED.here and not WeightState.DOWNLOADABLE.here


def test_visitors_see_no_download_unless_the_context_allows_it(monkeypatch, tmp_path, answering_hub):
    from shared.weights import WeightState

    demo = make_demo(monkeypatch, tmp_path)
    monkeypatch.delenv("HF_HUB_OFFLINE")  # the machine could download (the Hub answers)...
    visitor = DemoContext(demo, ModelPool(budget_bytes=10**6))  # ...but visitors may not by default
    assert visitor.weight_state(demo.weight_set("official")) is WeightState.UNAVAILABLE
    assert dict((v, k) for k, v in visitor.weight_choices())["official"] == "official (not on this server)"
    operator = DemoContext(demo, ModelPool(budget_bytes=10**6), downloads=True)
    assert operator.weight_state(demo.weight_set("official")) is WeightState.DOWNLOADABLE
    assert dict((v, k) for k, v in operator.weight_choices())["official"] == "official (downloadable, 1 GB)"
    with pytest.raises(FileNotFoundError, match="visitors cannot start downloads here"):
        visitor.download("official")


def test_one_state_gives_the_banner_the_label_and_the_refusal(monkeypatch, tmp_path, answering_hub):
    """The dropdown's label, the banner and the sentence a model call raises all come from the weights' state; a
    visitor of a public hub reads no command, the operator on a local-only hub reads why and what to run."""
    demo = make_demo(monkeypatch, tmp_path)
    visitor = DemoContext(demo, ModelPool(budget_bytes=10**6))
    sentence = "The scaler weights 'official' (1 GB) are not on this server."
    assert visitor.weights_message("official") == sentence
    assert visitor.weights_message("official", "The local set works.") == sentence + " The local set works."
    with pytest.raises(WeightsUnavailable) as refused:
        visitor.pipeline("official")
    assert str(refused.value) == sentence, "a visitor reads one short sentence, no operator command"
    assert answering_hub.requests == 0, "HF_HUB_OFFLINE: nothing asked the Hub"

    operator = DemoContext(demo, ModelPool(budget_bytes=10**6), operator_here=True)
    assert operator.weights_message("official") == (
        sentence + " This machine cannot reach the Hugging Face Hub: HF_HUB_OFFLINE=1 is set. Fetch them with "
        "`demohub download scaler --weights official` where the Hub is reachable.")
    monkeypatch.delenv("HF_HUB_OFFLINE")  # the Hub answers, but this hub's pages may not download
    assert operator.weights_message("official") == (
        sentence + " Downloads from the page are off on this hub. Fetch them with "
        "`demohub download scaler --weights official` where the Hub is reachable.")
    downloading = DemoContext(demo, ModelPool(budget_bytes=10**6), downloads=True, operator_here=True)
    assert downloading.weights_message("official") == (
        "The scaler weights 'official' (1 GB) are not downloaded yet; they download when the demo first runs.")
    assert downloading.weights_message("local") == "" and downloading.weight_label(demo.weight_set("local")) \
        == "on disk"


def test_size_hint_is_the_weight_files_on_disk(monkeypatch, tmp_path):
    demo = make_demo(monkeypatch, tmp_path)
    folder = tmp_path / "ckpts" / "scaler" / "local"
    (folder / "weights.bin").write_bytes(bytes(5000))
    hints = []
    pool = ModelPool(budget_bytes=10**6)
    original = pool.get
    monkeypatch.setattr(pool, "get", lambda key, loader, size_hint=0: hints.append(size_hint) or original(
        key, loader, size_hint))
    DemoContext(demo, pool).pipeline("local")
    assert hints == [5000 + (folder / "config.json").stat().st_size]


def test_compute_holds_the_device_only_around_the_call(monkeypatch, tmp_path):
    from shared import device

    demo = make_demo(monkeypatch, tmp_path)
    monkeypatch.setenv("DEMOHUB_DEVICE", "cuda:7")  # a name only: device_slot never touches torch for it
    monkeypatch.setattr(device, "_slots", {})
    monkeypatch.setattr("shared.context.load_pipeline", lambda d, ws, folder=None: ScalePipeline(3.0, "cpu", None))
    ctx = DemoContext(demo, ModelPool(budget_bytes=10**6))
    order = []

    def run_gpu(name, trying: threading.Event, other: threading.Event):
        trying.set()
        with ctx.compute("local") as pipe:
            order.append(f"{name} in")
            other.wait(timeout=30)  # the other call is on its way in: give it every chance to overlap
            time.sleep(0.2)  # a margin against a false pass only: a lock that works never fails here
            order.append(f"{name} out {pipe(1.0)}")

    a_trying, b_trying = threading.Event(), threading.Event()
    run_together(lambda: run_gpu("a", a_trying, b_trying), lambda: run_gpu("b", b_trying, a_trying))
    assert [o.split()[1] for o in order] == ["in", "out", "in", "out"], "one model call at a time on the GPU"
    monkeypatch.setenv("DEMOHUB_DEVICE", "cpu")
    both_inside = threading.Barrier(2, timeout=30)  # passes only when both calls are inside compute at once
    outcomes = []

    def run_cpu():
        with ctx.compute("local") as pipe:
            both_inside.wait()
            outcomes.append(pipe(1.0))

    run_together(run_cpu, run_cpu)
    assert outcomes == [3.0, 3.0] and not both_inside.broken, "on the CPU, calls run side by side"
