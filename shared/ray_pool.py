"""Models in Ray Serve: each (demo, weight set) as a Serve deployment, called through the same pipeline contract.

``demohub serve --ray`` hands every page a ``RayPool`` instead of the in-process ``ModelPool``. The page code does not
change: ``with ctx.compute(name) as pipe: pipe(...)`` gets a ``RemotePipeline`` whose calls run in a replica, where
``PipelineReplica`` loaded the pipeline with the same ``load_pipeline`` (``from_pretrained`` + ``__call__``) as in
process. What travels:

- arguments: plain values; uploaded files (``Path``s under the temp folder) travel as bytes with their names, so a
  replica on another node reads the same file;
- progress and partial answers: the replica streams ``callback(step, total)`` and ``on_text(text)`` calls back while
  the pipeline runs;
- errors: a ``DemoHubError`` (bad input, missing weights) comes back as itself, the same sentence as in process;
  anything else is a server-side error (the hub logs it under an error id);
- a replica that dies mid-call: Serve restarts it and the call is retried on a live replica (pipeline calls are
  pure, seeds included), up to ``ATTEMPTS`` times, then the visitor gets a sentence saying so.

Downloads stay the hub's decision: the hub resolves (or downloads, if it may) before deploying; replicas never
download, they read the weights from their node's cache (the same cache on one machine; on a cluster, a shared
HF_HOME or ``demohub download`` on each node). The deployment options come from ``serve.yaml`` (``ServeConfig``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from shared.errors import DemoHubError, UserInputError
from shared.pipeline import Pipeline
from shared.registry import Demo, WeightSet

log = logging.getLogger("demohub")

RAY_MISSING = ("Ray Serve is not installed. Install it with `pip install -e '.[ray]'` (or `pip install "
               "'ray[serve]'`), or serve without --ray.")
ATTEMPTS = 3  # tries of one call when its replica dies under it
READY_TIMEOUT = 900.0  # seconds a first call waits for a deployment to start (a 14 GB model loads for minutes)
APP_PREFIX = "demohub-"
_DEPLOYMENT_KEYS = ("num_replicas", "autoscaling_config", "max_ongoing_requests", "ray_actor_options")
_SECRET_WORDS = ("TOKEN", "AUTH", "SECRET", "PASSWORD", "KEY")


# ---------------------------------------------------------------- serve.yaml


@dataclass(frozen=True)
class DeploymentConfig:
    """Ray Serve options of one deployment (one weight set of one demo)."""

    num_replicas: int = 1
    autoscaling_config: dict | None = None  # replaces num_replicas: {min_replicas, max_replicas, ...}
    # Calls one replica accepts at once. It runs them one after another (a pipeline answers one call at a time, as in
    # process); 2 keeps the next call waiting in the replica, so it never idles while Serve's router finds it free.
    max_ongoing_requests: int = 2
    # num_cpus, num_gpus (fractions allowed), memory, ... The default reserves no core, so every deployment fits any
    # machine (Ray then gives each replica one torch thread); serve.yaml reserves cores and GPUs where it matters.
    ray_actor_options: dict = field(default_factory=lambda: {"num_cpus": 0})

    @property
    def capacity(self) -> int:
        """The most calls this deployment answers at once (its replicas at most, times calls per replica)."""
        replicas = self.autoscaling_config.get("max_replicas", 1) if self.autoscaling_config else self.num_replicas
        return max(1, int(replicas)) * self.max_ongoing_requests

    def options(self) -> dict[str, Any]:
        """Keyword arguments of ``serve.deployment`` / ``Deployment.options``."""
        scale = ({"autoscaling_config": dict(self.autoscaling_config)} if self.autoscaling_config
                 else {"num_replicas": self.num_replicas})
        return {**scale, "max_ongoing_requests": self.max_ongoing_requests,
                "ray_actor_options": dict(self.ray_actor_options)}


@dataclass(frozen=True)
class DemoServeConfig:
    deployment: DeploymentConfig
    weights: tuple[str, ...] | None = None  # weight sets deployed when the hub starts (None: those on disk)
    per_weights: dict[str, DeploymentConfig] = field(default_factory=dict)


@dataclass(frozen=True)
class ServeConfig:
    """What ``serve.yaml`` says: defaults for every deployment, and per demo (and per weight set) overrides.

    ```yaml
    defaults: {max_ongoing_requests: 1, ray_actor_options: {num_cpus: 1}}
    demos:
      prax: {num_replicas: 2}
      molm3d: {ray_actor_options: {num_gpus: 1}}
      geodiffusion:
        weights: {nuimages-512x512: {autoscaling_config: {min_replicas: 1, max_replicas: 4}}}
    ```
    """

    defaults: DeploymentConfig = field(default_factory=DeploymentConfig)
    demos: dict[str, DemoServeConfig] = field(default_factory=dict)

    def deployment(self, demo_id: str, weights_name: str) -> DeploymentConfig:
        demo = self.demos.get(demo_id)
        if demo is None:
            return self.defaults
        return demo.per_weights.get(weights_name, demo.deployment)

    def startup_weights(self, demo: Demo, here: Sequence[str]) -> list[str]:
        """The weight sets to deploy at start: those serve.yaml names for the demo, else those on disk (``here``)."""
        chosen = self.demos.get(demo.id)
        return list(chosen.weights) if chosen is not None and chosen.weights is not None else list(here)

    def concurrency(self, demo: Demo) -> int:
        """The demo's Gradio concurrency limit: its largest deployment's capacity, so the hub's queue sends a
        deployment as many calls as it answers at once and keeps the rest waiting (fairly, per demo)."""
        return max(self.deployment(demo.id, ws.name).capacity for ws in demo.weight_sets)

    @classmethod
    def load(cls, path: str | Path | None, demos: Sequence[Demo]) -> ServeConfig:
        """Read and check ``path`` (None: the built-in defaults); every mistake is a sentence naming the key."""
        if path is None:
            return cls()
        import yaml

        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except OSError as error:
            raise UserInputError(f"Cannot read the serve config {path}: {error.strerror}.") from None
        except yaml.YAMLError as error:
            raise UserInputError(f"{path} is not valid YAML: {error}") from None
        return cls.parse(data, demos, source=path.name)

    @classmethod
    def parse(cls, data: Any, demos: Sequence[Demo], source: str = "serve.yaml") -> ServeConfig:
        _mapping(data, source, allowed=("hub", "defaults", "demos"))  # hub: the hub's own limits (apps.settings)
        defaults = _deployment(data.get("defaults") or {}, DeploymentConfig(), f"{source}: defaults")
        by_id = {demo.id: demo for demo in demos}
        chosen = {}
        for demo_id, entry in _mapping(data.get("demos") or {}, f"{source}: demos").items():
            if demo_id not in by_id:
                raise UserInputError(f"{source}: demos: no demo called {demo_id!r}; the demos are "
                                     f"{', '.join(by_id)}.")
            where = f"{source}: demos: {demo_id}"
            entry = entry or {}
            base = _deployment(entry, defaults, where, extra=("weights",))
            names = [ws.name for ws in by_id[demo_id].weight_sets]
            listed = entry.get("weights")
            overrides = {}
            if isinstance(listed, dict):
                for name, options in listed.items():
                    _known_weights(name, names, where)
                    overrides[name] = _deployment(options or {}, base, f"{where}: weights: {name}")
                listed = list(listed)
            elif listed is not None:
                if not isinstance(listed, list):
                    raise UserInputError(f"{where}: weights must be a list of weight set names or a mapping of "
                                         "name to options.")
                for name in listed:
                    _known_weights(name, names, where)
            chosen[demo_id] = DemoServeConfig(base, None if listed is None else tuple(listed), overrides)
        return cls(defaults, chosen)


def _mapping(value: Any, where: str, allowed: Sequence[str] | None = None) -> dict:
    if not isinstance(value, dict):
        raise UserInputError(f"{where} must be a mapping (key: value lines).")
    unknown = [key for key in value if allowed is not None and key not in allowed]
    if unknown:
        raise UserInputError(f"{where}: unknown key {unknown[0]!r}; the keys are {', '.join(allowed)}.")
    return value


def _known_weights(name: Any, names: Sequence[str], where: str) -> None:
    if name not in names:
        raise UserInputError(f"{where}: weights: no weight set called {name!r}; the demo has {', '.join(names)}.")


def _deployment(entry: dict, base: DeploymentConfig, where: str, extra: tuple[str, ...] = ()) -> DeploymentConfig:
    """``base`` with the deployment keys of ``entry`` applied (checked here, so a typo fails at start)."""
    entry = _mapping(entry, where, allowed=(*_DEPLOYMENT_KEYS, *extra))
    changes = {key: entry[key] for key in _DEPLOYMENT_KEYS if key in entry}
    if "num_replicas" in changes and "autoscaling_config" in changes:
        raise UserInputError(f"{where}: give num_replicas or autoscaling_config, not both.")
    for key in ("num_replicas", "max_ongoing_requests"):
        if key in changes and (isinstance(changes[key], bool) or not isinstance(changes[key], int)
                               or changes[key] < 1):
            raise UserInputError(f"{where}: {key} must be a whole number of at least 1, not {changes[key]!r}.")
    for key in ("autoscaling_config", "ray_actor_options"):
        if key in changes:
            _mapping(changes[key], f"{where}: {key}")
    if "num_replicas" in changes:
        changes["autoscaling_config"] = None
    if changes.get("autoscaling_config") is not None:
        auto = changes["autoscaling_config"]
        if not 0 <= auto.get("min_replicas", 1) <= auto.get("max_replicas", 1) or auto.get("max_replicas", 1) < 1:
            raise UserInputError(f"{where}: autoscaling_config needs 0 <= min_replicas <= max_replicas and "
                                 "max_replicas >= 1.")
    if "ray_actor_options" in changes:
        changes["ray_actor_options"] = {**base.ray_actor_options, **changes["ray_actor_options"]}
    return replace(base, **changes)


# ---------------------------------------------------------------- what travels between hub and replica


@dataclass(frozen=True)
class ShippedFile:
    """An uploaded file travelling to a replica: its name (results are named after it) and its bytes."""

    name: str
    data: bytes = field(repr=False)


@dataclass(frozen=True)
class Reply:
    """One message from a replica: in a call's stream ("progress", (step, total)), then ("result", value) or ("error",
    e); for an attribute ("method", None) or ("value", v). ("crash", e) never leaves the replica: it is raised there."""

    kind: str
    value: Any


def upload_roots() -> tuple[Path, ...]:
    """Where uploaded files live on the hub: Gradio's cache (``GRADIO_TEMP_DIR``) or the system temp folder."""
    roots = [Path(tempfile.gettempdir()).resolve()]
    if os.environ.get("GRADIO_TEMP_DIR"):
        roots.append(Path(os.environ["GRADIO_TEMP_DIR"]).resolve())
    return tuple(roots)


def ship(value: Any, roots: tuple[Path, ...] | None = None) -> Any:
    """``value`` with every uploaded file replaced by a ``ShippedFile``: a ``Path`` (as the pages pass uploads) under
    ``upload_roots()``, also inside lists, tuples and dicts. Strings always travel as the text they are: a visitor's
    "/tmp/x" is an example or a question, never a file to read."""
    roots = roots if roots is not None else upload_roots()
    if isinstance(value, (list, tuple)):
        return type(value)(ship(item, roots) for item in value)
    if isinstance(value, dict):
        return {key: ship(item, roots) for key, item in value.items()}
    if isinstance(value, Path):
        path = value.resolve()
        if path.is_file() and any(path.is_relative_to(root) for root in roots):
            return ShippedFile(path.name, path.read_bytes())
    return value


def unship(value: Any, folder: Path) -> Any:
    """``ship`` undone in a replica: each ``ShippedFile`` written under ``folder`` (its own subfolder, so two
    uploads with one name do not collide) and replaced by its path."""
    if isinstance(value, ShippedFile):
        target = Path(tempfile.mkdtemp(dir=folder)) / value.name
        target.write_bytes(value.data)
        return target
    if isinstance(value, (list, tuple)):
        return type(value)(unship(item, folder) for item in value)
    if isinstance(value, dict):
        return {key: unship(item, folder) for key, item in value.items()}
    return value


# ---------------------------------------------------------------- the replica


class PipelineReplica:
    """The body of one Serve deployment: a demo's pipeline for one weight set, loaded once per replica.

    Weights missing on this node are not a crash (Serve would restart the replica for ever): the replica stays up and
    answers every call with that ``WeightsUnavailable`` sentence.
    """

    def __init__(self, demo: Demo, ws: WeightSet):
        from shared import weights
        from shared.context import load_pipeline

        self.name = f"{demo.id}/{ws.name}"
        self.pipeline, self.error = None, None
        # One call at a time per pipeline, as in process (PraX seeds torch's global generator, a diffusers pipeline
        # keeps scheduler state); max_ongoing_requests > 1 then queues calls here, not in Serve's router.
        self._lock = threading.Lock()
        try:
            self.pipeline = load_pipeline(demo, ws, weights.resolve(demo.id, ws, allow_download=False))
        except DemoHubError as error:
            log.warning("%s cannot load: %s", self.name, error)
            self.error = error

    def attribute(self, name: str) -> Reply:
        """("method", None) for a method of the pipeline, ("value", v) for a plain attribute."""
        if self.error is not None:
            return Reply("error", self.error)
        value = getattr(self.pipeline, name)
        return Reply("method", None) if callable(value) else Reply("value", value)

    def stream(self, method: str, args: tuple, kwargs: dict, progress: bool, text: bool = False) -> Iterator[Reply]:
        """Run ``pipeline.<method>(*args, **kwargs)``, yielding its progress and its partial texts (``on_text``) when
        asked, and then its answer."""
        if self.error is not None:
            yield Reply("error", self.error)
            return
        replies: queue.SimpleQueue[Reply] = queue.SimpleQueue()
        with tempfile.TemporaryDirectory(prefix="demohub-upload-") as folder:
            args, kwargs = unship(args, Path(folder)), unship(kwargs, Path(folder))
            if progress:
                kwargs["callback"] = lambda step, total: replies.put(Reply("progress", (step, total)))
            if text:
                kwargs["on_text"] = lambda partial: replies.put(Reply("text", partial))

            def run() -> None:
                try:
                    with self._lock:
                        answer = getattr(self.pipeline, method)(*args, **kwargs)
                    replies.put(Reply("result", answer))
                except DemoHubError as error:
                    replies.put(Reply("error", error))
                except BaseException as error:  # a server-side failure: raised below, so Ray reports it
                    replies.put(Reply("crash", error))

            worker = threading.Thread(target=run, name=f"{self.name} call", daemon=True)
            worker.start()
            while True:
                reply = replies.get()
                if reply.kind == "crash":
                    raise reply.value
                yield reply
                if reply.kind not in STREAMED:
                    break
            worker.join()


# ---------------------------------------------------------------- the hub side


STREAMED = ("progress", "text")  # replies a call streams before its answer


class ModelServerUnavailable(DemoHubError):
    """A call's replica died more than ``ATTEMPTS`` times, or its deployment failed to start."""


def _outside_event_loop(fn, *args):
    """``fn(*args)``, in a worker thread when this thread runs an asyncio loop: Serve's blocking handle API refuses
    such a thread (a notebook cell, an async web handler, Playwright's sync API in tests)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return fn(*args)
    with ThreadPoolExecutor(1, thread_name_prefix="demohub-ray-call") as executor:
        return executor.submit(fn, *args).result()


class RemotePipeline(Pipeline):
    """A pipeline living in a Serve deployment, used like the local one: ``pipe(...)``, ``pipe.method(...)``,
    ``pipe.attribute``; ``callback=`` receives the replica's progress. Its modules live in the replica (``modules()``
    yields none here: this process holds none of its memory)."""

    def __init__(self, handle, name: str, wait_ready=None):
        self._handle = handle
        self._name = name
        self._wait_ready = wait_ready or (lambda: None)
        self._kinds: dict[str, Reply] = {}

    def __repr__(self) -> str:
        return f"RemotePipeline({self._name})"

    def __call__(self, *args, **kwargs):
        return _outside_event_loop(self._call, "__call__", args, kwargs)

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in self._kinds:
            reply = _outside_event_loop(self._attribute, name)
            if reply.kind == "error":
                raise reply.value
            self._kinds[name] = reply
        reply = self._kinds[name]
        if reply.kind == "value":
            return reply.value
        return lambda *args, **kwargs: _outside_event_loop(self._call, name, args, kwargs)

    def _attribute(self, name: str) -> Reply:
        self._wait_ready()
        return self._handle.attribute.remote(name).result()

    def _call(self, method: str, args: tuple, kwargs: dict) -> Any:
        self._wait_ready()
        callback, on_text = kwargs.pop("callback", None), kwargs.pop("on_text", None)
        args, kwargs = ship(args), ship(kwargs)
        from ray.exceptions import RayActorError  # ActorDiedError, ActorUnavailableError: the replica is gone

        for attempt in range(1, ATTEMPTS + 1):
            try:
                for reply in self._handle.options(stream=True).stream.remote(method, args, kwargs,
                                                                            callback is not None, on_text is not None):
                    if reply.kind == "progress":
                        callback(*reply.value)
                    elif reply.kind == "text":
                        on_text(reply.value)
                    elif reply.kind == "error":
                        raise reply.value
                    else:
                        return reply.value
                raise ModelServerUnavailable(f"The model server for {self._name} ended a call without an answer.")
            except RayActorError as error:
                log.warning("%s: a replica died during a call (attempt %d of %d): %s", self._name, attempt,
                            ATTEMPTS, type(error).__name__)
                last = error
                time.sleep(0.5 * attempt)  # Serve notices the dead replica and routes to a live (or new) one
        raise ModelServerUnavailable(
            f"The model server for {self._name} restarted {ATTEMPTS} times while answering; please try again "
            "in a minute.") from last


class RayPoolStats:
    def __init__(self, applications: dict[str, str]):
        self.applications = applications

    def as_dict(self) -> dict:
        return {"backend": "ray", "applications": self.applications}


class RayPool:
    """The pool interface pages use (``lookup``, ``get``, ``in``, ``stats``), with models in Ray Serve.

    A key ``(demo id, weight set)`` is deployed as the Serve application ``demohub-<demo>-<weights>``; ``get`` deploys
    it on first use (the loader is not called here: the replica loads with the same ``load_pipeline``).
    """

    computes_here = False  # compute happens in replicas: no local device slot around a call

    def __init__(self, demos: Sequence[Demo], config: ServeConfig | None = None, address: str | None = None):
        try:
            import ray
            from ray import serve
        except ImportError:
            raise DemoHubError(RAY_MISSING) from None
        self.demos = {demo.id: demo for demo in demos}
        self.config = config or ServeConfig()
        self.owns_cluster = address is None and not ray.is_initialized()
        if not ray.is_initialized():
            ray.init(address=address, log_to_driver=False, **({} if address else {"include_dashboard": False}))
        serve.start(proxy_location="Disabled")  # the hub is the front end; Serve needs no HTTP proxy of its own
        self._pipelines: dict[tuple[str, str], RemotePipeline] = {}
        self._ready: set[str] = set()
        self._lock = threading.Lock()

    @staticmethod
    def app_name(key: tuple[str, str]) -> str:
        return f"{APP_PREFIX}{key[0]}-{key[1]}"

    def lookup(self, key: tuple[str, str]) -> RemotePipeline | None:
        return self._pipelines.get(key)

    def __contains__(self, key: tuple[str, str]) -> bool:
        return key in self._pipelines

    def get(self, key: tuple[str, str], loader=None, size_hint: int = 0) -> RemotePipeline:
        """The key's pipeline, deployed now if it is not yet; its first call waits for the replicas to run, outside
        this pool's lock, so one demo's slow start (minutes for 3D-MoLM) never holds up another demo's."""
        with self._lock:
            if key not in self._pipelines:
                self.deploy([key])
            return self._pipelines[key]

    def deploy(self, keys: Sequence[tuple[str, str]]) -> None:
        """Deploy (or update) the applications for ``keys`` together; returns while their replicas start (each
        pipeline's first call waits for its application to run)."""
        from ray import serve
        from ray.serve.api import RunTarget

        targets = []
        for key in keys:
            demo = self.demos[key[0]]
            ws = demo.weight_set(key[1])
            options = self.config.deployment(demo.id, ws.name).options()
            options["ray_actor_options"] = _with_env(options["ray_actor_options"])
            deployment = serve.deployment(PipelineReplica, name=f"{demo.id}-{ws.name}", **options)
            targets.append(RunTarget(deployment.bind(demo, ws), name=self.app_name(key), route_prefix=None))
        handles = serve.run_many(targets, wait_for_applications_running=False)
        for key, handle in zip(keys, handles, strict=True):
            name = self.app_name(key)
            self._pipelines[key] = RemotePipeline(handle, f"{key[0]}/{key[1]}",
                                                  wait_ready=lambda name=name: self._wait_running(name))

    def _wait_running(self, name: str, timeout: float = READY_TIMEOUT) -> None:
        """Block until the application is running; a sentence if it failed to start (the reason is in the log)."""
        deadline = time.monotonic() + timeout
        while name not in self._ready and not self._check_running(name):
            if time.monotonic() > deadline:
                raise ModelServerUnavailable(f"The model server {name} did not start within {timeout:.0f} s.")
            time.sleep(0.5)

    def _check_running(self, name: str) -> bool:
        """Whether Serve says the application runs (then remembered); a sentence if it failed to start (the reason
        goes to the log)."""
        from ray import serve

        app = serve.status().applications.get(name)
        status = str(app.status.value if app else "NOT_STARTED")
        if status == "RUNNING":
            self._ready.add(name)
            return True
        if status in {"DEPLOY_FAILED", "UNHEALTHY"}:
            from shared.errors import report

            error_id = report(RuntimeError(f"{name}: {status}: {app.message}"))
            raise ModelServerUnavailable(f"The model server {name} failed to start (error id {error_id}).")
        return False

    def stats(self) -> RayPoolStats:
        from ray import serve

        apps = serve.status().applications
        return RayPoolStats({name: str(app.status.value) for name, app in apps.items()
                             if name.startswith(APP_PREFIX)})

    def close(self) -> None:
        """Stop what this hub started: the whole local Ray instance, or nothing on a cluster it joined (its
        deployments stay up for the next hub; `serve shutdown` removes them)."""
        if self.owns_cluster:
            import ray
            from ray import serve

            serve.shutdown()
            ray.shutdown()


def _with_env(actor_options: dict) -> dict:
    """The hub's DEMOHUB_* and HF_* settings (never secrets) for the replicas, under ``runtime_env.env_vars``, so a
    replica reads the same caches, offline mode and dtype as the hub (also on a cluster's other nodes)."""
    env = {name: value for name, value in os.environ.items()
           if name.startswith(("DEMOHUB_", "HF_")) and not any(word in name for word in _SECRET_WORDS)}
    runtime_env = dict(actor_options.get("runtime_env") or {})
    runtime_env["env_vars"] = {**env, **(runtime_env.get("env_vars") or {})}
    return {**actor_options, "runtime_env": runtime_env}
