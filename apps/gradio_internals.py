"""Every Gradio internal the hub relies on, in one module: what it replaces, why, and a start-up check.

The hub is tested on one Gradio release (``TESTED_GRADIO``: constraints.txt pins it, every Space's ``sdk_version``
names it). Beyond Gradio's public API it changes the internals ``INTERNALS`` lists, and only here:

- the queue's ``push``, the one door of ``/queue/join`` and ``/call/*``: queue admission (``apps.serving.admit``);
- ``Blocks.preprocess_data`` and each event's function: inputs checked before Gradio reads them, and every failure a
  sentence (``apps.event_inputs``);
- ``SessionState.__init__``: a session's block configs built when first read (``LazyBlockConfigs``);
- the MCP server's loopback client, tool results and file-input schema (``mcp_lifespan``);
- a named endpoint's ``BlockFunction`` (its ``validator`` and the ``api_name`` Gradio gave it: ``apps.ui.api``);
- ``App.create_app`` while the hub's pages are built: no app per ``Blocks``, only the one ``launch()`` serves
  (``apps_at_launch_only``).

``startup_warning()`` says, when the hub starts, whether the installed Gradio is the tested one and which of these
internals it lacks, naming what stops working; the hub logs it and goes on (public-API behaviour is unaffected).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import json
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("demohub")

TESTED_GRADIO = "6.31.0"
UNTESTED_GRADIO = ("Gradio {installed} is installed, but this hub is tested on Gradio {tested} only, and it changes "
                   "some of Gradio's internals (apps/gradio_internals.py): install the tested stack with "
                   "`pip install -r requirements.txt -c constraints.txt`.")
MISSING = "{where} (so {what} does not work)"


@dataclass(frozen=True)
class Internal:
    module: str
    owner: str  # a class of ``module``
    attribute: str  # a method or class attribute; "__init__(name)": __init__ takes that parameter
    what: str  # what the hub loses without it, for the start-up warning

    def present(self) -> bool:
        try:
            owner = getattr(importlib.import_module(self.module), self.owner)
        except (ImportError, AttributeError):
            return False
        name, _, parameter = self.attribute.partition("(")
        if not hasattr(owner, name):
            return False
        return not parameter or parameter.rstrip(")") in inspect.signature(getattr(owner, name)).parameters

    @property
    def where(self) -> str:
        return f"{self.module}.{self.owner}.{self.attribute}"


INTERNALS = (
    Internal("gradio.queueing", "Queue", "push", "queue admission (the queue size, the per-session limit)"),
    Internal("gradio.blocks", "Blocks", "preprocess_data", "checking every event's inputs before Gradio reads them"),
    Internal("gradio.blocks", "BlockFunction", "__init__(validator)", "checking named endpoints before queueing"),
    Internal("gradio.state_holder", "SessionState", "__init__(blocks)", "building a session's configs lazily"),
    Internal("gradio.blocks", "BlocksConfig", "config_for_block", "building a session's configs lazily"),
    Internal("gradio.mcp", "GradioMCPServer", "_get_or_create_client", "the MCP loopback's login and caller limits"),
    Internal("gradio.mcp", "GradioMCPServer", "postprocess_output_data", "MCP tool results as JSON and images"),
    Internal("gradio.mcp", "GradioMCPServer", "simplify_filedata_schema", "MCP file-input schemas for strict hosts"),
    Internal("gradio.routes", "App", "create_app", "a quick start (one web app built at launch, none per page)"),
    Internal("gradio.blocks", "Blocks", "get_config_file", "no exact Gradio version in /config and the pages"),
    Internal("mcp.server.lowlevel.server", "jsonschema", "validate", "MCP argument errors naming the argument"),
    Internal("gradio.routes", "VERSION", "__class__", "no exact Gradio version in openapi.json"),
)


def startup_warning() -> str | None:
    """What the hub says at start when its Gradio is not the tested one, or lacks an internal it changes (None when
    all is as tested)."""
    import gradio

    mcp_installed = importlib.util.find_spec("mcp") is not None  # without it the hub serves no MCP anyway
    missing = [MISSING.format(where=i.where, what=i.what) for i in INTERNALS
               if (mcp_installed or i.module != "gradio.mcp") and not i.present()]
    if gradio.__version__ == TESTED_GRADIO and not missing:
        return None
    warning = UNTESTED_GRADIO.format(installed=gradio.__version__, tested=TESTED_GRADIO)
    return warning + (f" Missing from this Gradio: {'; '.join(missing)}." if missing else "")


@contextlib.contextmanager
def apps_at_launch_only() -> Iterator[None]:
    """Build Blocks without the web app Gradio makes for each of them: it builds a FastAPI app (85 routes) at every
    ``Blocks()`` and every ``with`` block's end, 17 times for the hub (1.1 s of its 4.7 s start on 2 cores), and
    ``launch()`` builds the one it serves again. Inside this, calls from this thread build none (``blocks.app`` stays
    None until launch); other threads, and every launch, build theirs as before."""
    from gradio.routes import App

    original = App.__dict__.get("create_app")
    if not isinstance(original, staticmethod):  # another Gradio: build the apps as it does (startup_warning says so)
        yield
        return
    building = threading.get_ident()

    def create_app(*args, **kwargs):
        return None if threading.get_ident() == building else original.__func__(*args, **kwargs)

    App.create_app = staticmethod(create_app)
    try:
        yield
    finally:
        App.create_app = original


def say_less(blocks) -> str:
    """What visitors learn of the server's libraries: Gradio's major version only (``gradio_client`` reads the
    config's version to choose its protocol: anything above 4.29 is the current one), no MCP package version in the
    MCP server's ``initialize`` answer (no client reads it). Returns the version now published."""
    import gradio
    from gradio import routes

    public = gradio.__version__.split(".")[0]
    if isinstance(getattr(blocks, "config", None), dict) and "version" in blocks.config:
        blocks.config["version"] = public
    if isinstance(getattr(routes, "VERSION", None), str):
        routes.VERSION = public  # openapi.json's info.version
    server = getattr(getattr(blocks, "mcp_server_obj", None), "mcp_server", None)
    if server is not None and hasattr(server, "version"):
        server.version = "1"
    return public


_SCHEMA_WORDS = {"integer": "a whole number", "number": "a number", "string": "text", "array": "a list",
                 "object": "a JSON object", "boolean": "true or false", "null": "null"}


def argument_sentence(error) -> str:
    """A JSON-schema error on an MCP tool's arguments (``jsonschema.ValidationError``) as the hub's own sentence,
    naming the argument, instead of the library's ("'x' is not of type 'integer'")."""
    path = [str(p) for p in error.absolute_path]
    name = path[0] if path else None
    if error.validator == "required":
        missing = str(error.message).split("'")[1] if "'" in str(error.message) else "an argument"
        return f"The argument “{missing}” is missing; the tool list describes each argument."
    if error.validator == "additionalProperties":
        return "This tool takes only the arguments the tool list describes; leave the others out."
    where = f"“{name}”" + (f" (at item {'.'.join(path[1:])})" if len(path) > 1 else "") if name else "The arguments"
    if error.validator == "type":
        kinds = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        return f"The argument {where} must be {' or '.join(_SCHEMA_WORDS.get(k, k) for k in kinds)}."
    if error.validator == "enum":
        return f"The argument {where} must be one of: {', '.join(map(str, error.validator_value))[:200]}."
    if error.validator in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        bound = {"minimum": "at least", "maximum": "at most", "exclusiveMinimum": "more than",
                 "exclusiveMaximum": "less than"}[error.validator]
        return f"The argument {where} must be {bound} {error.validator_value}."
    if error.validator in ("minItems", "maxItems", "minLength", "maxLength"):
        return f"The argument {where} is too {'short' if error.validator.startswith('min') else 'long'}."
    return f"The argument {where} does not have the form the tool list describes."


def install_mcp_argument_sentences() -> None:
    """The MCP server checks a tool call's arguments against the tool's schema and answers the library's words
    ("Input validation error: 'x' is not of type 'integer'"); make its error name the argument in a sentence."""
    try:
        from mcp.server.lowlevel import server
    except ImportError:
        return
    library = server.jsonschema
    if getattr(library, "named_arguments", False):
        return

    class NamedArguments:
        named_arguments = True
        ValidationError = library.ValidationError

        def __getattr__(self, name):
            return getattr(library, name)

        @staticmethod
        def validate(instance, schema, *args, **kwargs):
            try:
                library.validate(instance, schema, *args, **kwargs)
            except library.ValidationError as error:
                raise library.ValidationError(argument_sentence(error)) from None

    server.jsonschema = NamedArguments()


def set_delete_cache(blocks, every_and_age: tuple[int, int] | None) -> None:
    """Gradio's ``delete_cache`` (a ``Blocks`` constructor argument) set on Blocks built before the operator's settings
    were read: the pages are built once, served under any settings."""
    blocks.delete_cache = every_and_age


def wrap_queue_push(blocks, refuse: Callable[[Any, Any, Any, str | None], tuple[str, str] | None],
                    hold: Callable[[Any, Any, str | None], contextlib.AbstractContextManager] | None = None) -> None:
    """The queue's ``push`` asks ``refuse(queue, body, request, username)`` first: ``(state, sentence)`` refuses the
    job (an ``HTTPException`` it raises answers the request as it says). An admitted job is not in the queue until
    ``push`` has run its validator (awaited: other joins are admitted meanwhile); ``hold(body, request, username)``
    is entered for that time, so that ``refuse`` can count such jobs too."""
    queue = blocks._queue
    push = queue.push

    async def admitted_push(body, request, username):
        refusal = refuse(queue, body, request, username)
        if refusal is not None:
            state, detail = refusal
            return False, detail, state
        with hold(body, request, username) if hold is not None else contextlib.nullcontext():
            return await push(body, request, username)

    queue.push = admitted_push


def wrap_event_reading(blocks, checked: Callable[[Callable], Callable], public: Callable[[Callable], Callable],
                       private: Callable[[Callable], Callable]) -> None:
    """``Blocks.preprocess_data`` (where Gradio reads an event's inputs, on every route) becomes ``checked(read)``,
    and each event's function ``public(fn)`` for named endpoints, ``private(fn)`` for page events."""
    blocks.preprocess_data = checked(blocks.preprocess_data)
    for block_fn in blocks.fns.values():
        if block_fn.fn is not None:
            block_fn.fn = (public if block_fn.api_visibility == "public" else private)(block_fn.fn)


def endpoint_function(dependency: dict):
    """The ``BlockFunction`` behind a ``gr.api`` dependency of the Blocks being built (its ``validator`` and the
    ``api_name`` Gradio actually gave it)."""
    from gradio.context import get_blocks_context

    return get_blocks_context().fns[dependency["id"]]


def set_validator(block_fn, validate: Callable[..., Any]) -> None:
    """A named endpoint's validator (``gr.api`` takes none): its inputs are checked before it is queued."""
    block_fn.validator = validate


def mcp_lifespan(blocks, mcp_on: bool, make_client: Callable[[str], Any]):
    """A Starlette lifespan that, once Gradio has built the MCP server and before any request, gives it our loopback
    client (``make_client(local_url)``), JSON tool results and file schemas strict hosts accept."""

    @contextlib.asynccontextmanager
    async def lifespan(app):
        server = getattr(blocks, "mcp_server_obj", None)
        if server is not None:
            _install_loopback(server, make_client)
            _install_json_results(server)
            _install_file_schema(server)
        elif mcp_on and getattr(blocks, "mcp_error", None):
            log.warning("%s", blocks.mcp_error)
        yield

    return lifespan


def _install_loopback(server, make_client: Callable[[str], Any]) -> None:
    """Gradio's MCP server calls queued tools through one ``gradio_client.Client`` of the app's own URL; ours is
    ``make_client``'s (logged in behind --auth, carrying the secret that lets HubGuard trust its caller header)."""

    def loopback_client():
        if server._client_instance is None:
            server._client_instance = make_client(server.local_url)
        return server._client_instance

    server._client_instance = None
    server._get_or_create_client = loopback_client


def _install_json_results(server) -> None:
    """Tool results as the endpoint's JSON text (Gradio gives ``str(dict)``, Python's repr), plus each PNG data URL
    in it as an MCP image, so an agent's host can show generated images."""
    from gradio_client import utils as client_utils
    from mcp import types

    postprocess = server.postprocess_output_data

    def json_results(data, root_url):
        content = []
        for output in data:
            if isinstance(output, (dict, list)) and not client_utils.is_file_obj_with_meta(output):
                content.append(types.TextContent(type="text", text=json.dumps(output, ensure_ascii=False)))
                content += [types.ImageContent(type="image", data=png, mimeType="image/png")
                            for png in _png_data_urls(output)]
            else:
                content += postprocess([output], root_url)
        return content

    server.postprocess_output_data = json_results


MCP_LIST_FILES = 1024  # files a list input (``gr.File(file_count="multiple")``) takes over MCP, by position


def _install_file_schema(server) -> None:
    """A file input's schema as Gradio turns it into a string (data URI or URL), without the FileData object's leftover
    ``required`` list, which strict MCP hosts refuse on a string. A list of files is found at the schema's position
    ``[name, "items"]`` (``[name, "anyOf", 0, "items"]`` when optional), which no value's position (``[name, 0]``,
    ``[name, 1]``, ...) equals, so Gradio never turned its data URIs into files: each index is named as one too."""
    simplify = server.simplify_filedata_schema

    def without_required(schema):
        simplified, positions = simplify(schema)
        for path in positions:
            node = simplified.get("properties", simplified)
            for key in path:
                node = node[key]
            if node.get("type") == "string":
                node.pop("required", None)
                node["format"] = "a data URI (data:image/png;base64,...), or a web address where the hub allows them"
        listed = [value + [i] for value in map(_list_position, positions) if value for i in range(MCP_LIST_FILES)]
        return simplified, positions + listed

    server.simplify_filedata_schema = without_required


def _list_position(path: list) -> list | None:
    """The value position of the items of a schema position that ends in a list's ``items`` (an optional list reads
    ``[name, "anyOf", 0, "items"]``: the alternatives are no position in the value); None for any other."""
    if path[-1:] != ["items"]:
        return None
    value, rest = [], path[:-1]
    while rest:
        if rest[0] in ("anyOf", "oneOf") and len(rest) > 1 and isinstance(rest[1], int):
            rest = rest[2:]
        else:
            value.append(rest[0])
            rest = rest[1:]
    return value


class LazyBlockConfigs(dict):
    """A session's ``config_values`` (Gradio's ``SessionState``): each block's config built when first read, all of
    them only when iterated (a deep link). Gradio builds all of them for every new session, inside the request that
    opens it: ~80 ms of the event loop for this hub's blocks on an idle machine and ~0.8 s on busy cores, so ten new
    visitors at once held every ``queue/join`` for over a second. An event reads only the blocks it updates."""

    def __init__(self, blocks_config, block_ids):
        super().__init__()
        self._blocks_config = blocks_config
        self._unbuilt = set(block_ids)

    def __missing__(self, key):
        if key not in self._unbuilt:
            raise KeyError(key)
        self._unbuilt.discard(key)
        config = self[key] = self._blocks_config.config_for_block(key, [], self._blocks_config.blocks[key])
        return config

    def __contains__(self, key) -> bool:
        return dict.__contains__(self, key) or key in self._unbuilt

    def __setitem__(self, key, value) -> None:
        self._unbuilt.discard(key)
        dict.__setitem__(self, key, value)

    def _build_all(self) -> None:
        """Every config, in the order Gradio's eager dict has: the blocks', then keys set later."""
        if not self._unbuilt:
            return
        built = {key: dict.__getitem__(self, key) for key in dict.keys(self)}
        self.clear()
        for key, block in self._blocks_config.blocks.items():
            if key in built:
                dict.__setitem__(self, key, built.pop(key))
            elif key in self._unbuilt:
                dict.__setitem__(self, key, self._blocks_config.config_for_block(key, [], block))
        for key, value in built.items():
            dict.__setitem__(self, key, value)
        self._unbuilt.clear()

    def items(self):
        self._build_all()
        return super().items()

    def values(self):
        self._build_all()
        return super().values()

    def keys(self):
        self._build_all()
        return super().keys()

    def __iter__(self):
        self._build_all()
        return super().__iter__()

    def __len__(self) -> int:
        return dict.__len__(self) + len(self._unbuilt)


def install_lazy_session_configs() -> None:
    """Gradio's ``SessionState`` with ``LazyBlockConfigs`` (for every Blocks of this process; idempotent)."""
    from types import SimpleNamespace

    from gradio import state_holder

    cls = state_holder.SessionState
    if getattr(cls, "_demohub_lazy", False):
        return
    eager_init = cls.__init__

    def __init__(self, blocks):
        # Gradio's own __init__ with no block ids, so it builds no config; then the lazy dict over the real ids
        eager_init(self, SimpleNamespace(default_config=blocks.default_config, blocks={}))
        self.config_values = LazyBlockConfigs(self.blocks_config, [k for k in self.blocks_config.blocks
                                                                   if k in blocks.blocks])

    cls.__init__ = __init__
    cls._demohub_lazy = True


def _png_data_urls(value: Any) -> list[str]:
    """The base64 payloads of the PNG data URLs anywhere in ``value``."""
    prefix = "data:image/png;base64,"
    if isinstance(value, str):
        return [value[len(prefix):]] if value.startswith(prefix) else []
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return [png for item in items for png in _png_data_urls(item)]
