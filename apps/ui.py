"""Pieces every Gradio demo page uses: paper card, weights selector, embed snippets, error handling, GPU events."""

from __future__ import annotations

import contextvars
import functools
import html
import inspect
import json
import os
import queue
import re
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import gradio as gr

from apps import gradio_internals, views
from apps.serving import EXAMPLES_ROUTE  # example files served by name: no page config names a server path
from shared.api import Endpoint, Input, attribute
from shared.context import DemoContext
from shared.errors import UserInputError, user_message
from shared.registry import Demo
from shared.weights import WeightState

GRADIO_JS_URL = f"https://gradio.s3-us-west-2.amazonaws.com/{gr.__version__}/gradio.js"


OUTPUTS_MAX_AGE = 600  # seconds: Gradio copies returned files into its own cache at once; ours are then stale


def as_gradio_error(error: BaseException) -> gr.Error:
    """Any exception as a ``gr.Error`` carrying one readable sentence (``shared.errors.user_message``)."""
    if isinstance(error, gr.Error):
        return error
    return gr.Error(user_message(error), print_exception=False)  # the log has it under the id already


def model_events(ctx: DemoContext) -> dict[str, Any]:
    """Events that run a model: one concurrency group per demo, so one demo's queue never holds up another's (the
    device itself is shared through ``ctx.compute``)."""
    return {"concurrency_id": ctx.demo.id, "concurrency_limit": ctx.concurrency}


def work_events(ctx: DemoContext) -> dict[str, Any]:
    """Events whose long work runs in the bounded worker processes (``shared.bounded``: a conformer, say): one
    concurrency group per demo that lets as many through as there are workers, so one visitor's slow molecule
    never holds up another's while a worker is free, and the rest wait in the queue, where a page shows its place."""
    from shared.bounded import WORKERS

    return {"concurrency_id": f"{ctx.demo.id}-work", "concurrency_limit": WORKERS}


def output_folder(prefix: str) -> Path:
    """A fresh folder under Gradio's cache for files a handler returns; older ones are removed on the way."""
    from gradio.utils import get_upload_folder

    root = Path(get_upload_folder()) / "demohub-outputs"
    if root.is_dir():
        cutoff = time.time() - OUTPUTS_MAX_AGE
        for old in root.iterdir():
            if old.is_dir() and old.stat().st_mtime < cutoff:
                shutil.rmtree(old, ignore_errors=True)
    folder = root / f"{prefix}-{uuid.uuid4().hex[:12]}"
    folder.mkdir(parents=True)
    return folder


def download_progress(progress: gr.Progress) -> Callable[[int, int], None]:
    """Weight-download bytes on the page's progress bar (where the operator lets visitors download)."""
    return lambda done, total: progress((done, total), desc="Downloading weights", unit="bytes")


def user_errors(fn: Callable) -> Callable:
    """Show any exception from ``fn`` as one readable ``gr.Error`` sentence; the server keeps serving. Plain,
    generator, async and async-generator functions keep their kind (Gradio calls each kind its own way). API callers
    read the sentence as their call's error (gradio_client's ``AppError``, MCP's error result)."""
    if getattr(fn, "gives_sentences", False):
        return fn
    return _on_error(fn, lambda error: _raise(as_gradio_error(error)))


def page_errors(fn: Callable) -> Callable:
    """For a page's own events: an exception from ``fn`` becomes a toast with its sentence, and the event's outputs
    stay as they were (``gr.skip()``), so no input or result is left covered by an "Error" badge: the visitor fixes
    the input and goes on. (A raised ``gr.Error`` would put every output of the event in an error state.)"""
    return _on_error(fn, toast)  # around ``user_errors`` too: its gr.Error's sentence is the toast's


def _raise(error: BaseException):
    raise error


def toast(error: BaseException):
    """Show ``error``'s sentence as a toast; returns ``gr.skip()``, for the outputs it leaves as they were."""
    gr.Warning(html.escape(as_gradio_error(error).message), duration=15)
    return gr.skip()


def _on_error(fn: Callable, answer: Callable[[BaseException], Any]) -> Callable:
    """``fn`` whose exceptions go to ``answer`` (which raises, or returns what the event answers instead)."""
    if inspect.isasyncgenfunction(fn):
        @functools.wraps(fn)
        async def wrapper(*args, **kwargs):
            try:
                async for item in fn(*args, **kwargs):
                    yield item
            except Exception as error:
                yield answer(error)
    elif inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def wrapper(*args, **kwargs):
            try:
                return await fn(*args, **kwargs)
            except Exception as error:
                return answer(error)
    elif inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            try:
                yield from fn(*args, **kwargs)
            except Exception as error:
                yield answer(error)
    else:
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except Exception as error:
                return answer(error)
    wrapper.gives_sentences = True
    return wrapper


def model_call(fn: Callable | None = None, *, duration: int = 120) -> Callable:
    """For handlers that run a model: readable errors, plus a GPU slot on ZeroGPU Spaces (a no-op elsewhere)."""
    from shared.device import gpu

    def wrap(f: Callable) -> Callable:
        return gpu(user_errors(f), duration=duration)

    return wrap(fn) if fn is not None else wrap


def streamed(run: Callable[[Callable[[Any], None]], Any]) -> Iterator[tuple[Any, Any]]:
    """For a generator handler that shows partial results: ``run(on_partial)`` in a worker thread (in this event's
    context, so its ``gr.Progress`` still reports), yielding ``(partial, None)`` for each partial result it gives and
    ``(None, result)`` at the end; an exception from ``run`` is raised here, in the handler."""
    partials: queue.SimpleQueue = queue.SimpleQueue()
    outcome: dict[str, Any] = {}
    done = object()

    def work() -> None:
        try:
            outcome["result"] = run(partials.put)
        except BaseException as error:  # raised again in the handler's thread, below
            outcome["error"] = error
        finally:
            partials.put(done)

    worker = threading.Thread(target=contextvars.copy_context().run, args=(work,), name="demohub-streamed",
                              daemon=True)
    worker.start()
    while (partial := partials.get()) is not done:
        yield partial, None
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
    yield None, outcome["result"]


def serve_endpoints(ctx: DemoContext) -> None:
    """Every API function the demo declares (``Demo.endpoints()``, ``shared.api``) as a Gradio named endpoint, inside
    the page being built: each is also an MCP tool, described from its declaration, and checked before it is queued
    (its validator runs the declared limits, then the demo's check; the function runs them again, for routes without
    a validator)."""
    for endpoint in ctx.demo.endpoints():
        serve_endpoint(ctx, endpoint)


def serve_endpoint(ctx: DemoContext | None, endpoint: Endpoint) -> Any:
    """One declared endpoint (of the demo of ``ctx``; None: the hub's own): a function whose signature, defaults and
    docstring come from the declaration."""
    defaults = endpoint.defaults(ctx)
    signature = endpoint_signature(endpoint, defaults)
    for path, fn in ((endpoint.run, endpoint.runner()), (endpoint.check, endpoint.check and attribute(endpoint.check))):
        if fn and list(inspect.signature(fn).parameters) != ["ctx", *signature.parameters]:
            raise TypeError(f"{path} must take (ctx, {', '.join(signature.parameters)}): /{endpoint.name}'s "
                            f"declared inputs, in order")

    def call(*values, **named):
        arguments = signature.bind(*values, **named)
        arguments.apply_defaults()
        return endpoint.call(ctx, arguments.arguments)

    def check(*values):
        endpoint.check_call(ctx, endpoint.arguments(values, defaults))

    weight_names = [ws.name for ws in ctx.demo.weight_sets] if ctx is not None else []
    for fn in (call, check):
        fn.__name__ = fn.__qualname__ = endpoint.name  # MCP clients call the tool by its function's name
        fn.__signature__ = signature
        fn.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()} | {
            "return": signature.return_annotation}
    call.__doc__ = tool_docstring(endpoint.docstring(defaults, weight_names))
    events = {"model": model_events, "bounded": work_events}.get(endpoint.work)
    handler = model_call(call) if endpoint.work == "model" else user_errors(call)
    dep = gr.api(handler, api_name=endpoint.name, **(events(ctx) if events else {}))
    block_fn = gradio_internals.endpoint_function(dep)
    if block_fn.api_name != endpoint.name:  # Gradio renames a taken name (a page handler's, say) silently
        raise ValueError(f"api_name {endpoint.name!r} is taken; Gradio would serve this endpoint as "
                         f"{block_fn.api_name!r}")
    gradio_internals.set_validator(block_fn, validator(check))
    return dep


def endpoint_signature(endpoint: Endpoint, defaults: dict[str, Any]) -> inspect.Signature:
    """The declared inputs as a Python signature: names, types (Gradio reads the API's JSON schema from them) and
    defaults (``defaults``: each optional input's, a weights input's chosen by the server)."""
    parameters = [inspect.Parameter(i.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=_annotation(i),
                                    default=defaults.get(i.name, inspect.Parameter.empty)) for i in endpoint.inputs]
    return inspect.Signature(parameters, return_annotation=list[dict] if endpoint.returns.startswith("[") else dict)


def _annotation(i: Input) -> Any:
    """The Python type Gradio reads an input's JSON schema from (the API page's, gradio_client's, MCP's)."""
    kinds = {"text": str, "integer": int, "number": float, "boolean": bool, "weights": str, "records": list[dict],
             "file": gr.FileData, "files": list[gr.FileData]}
    kind = Literal[i.choices] if i.kind == "choice" else list[Literal[i.choices]] if i.kind == "choices" \
        else kinds[i.kind]  # type: ignore[valid-type]
    return kind | None if i.default is None and i.kind != "weights" else kind


_DOC_SECTIONS = ("Args:", "Parameters:", "Arguments:", "Returns:")


def tool_docstring(doc: str) -> str:
    """``doc`` with every ``Args:`` entry on one line and the ``Returns:`` section as one line: Gradio reads an
    entry's description (the MCP tool's parameter description, the API page's) from its first line only, and each
    further line after ``Returns:`` as one more return value."""
    lines, section, out = inspect.cleandoc(doc).splitlines(), None, []
    entry_indent = None
    for line in lines:
        stripped = line.strip()
        if stripped.startswith(_DOC_SECTIONS):
            section, entry_indent = stripped.split(":", 1)[0], None
            out.append(stripped if section != "Returns" else "Returns:")
            rest = stripped.split(":", 1)[1].strip()
            if section == "Returns" and rest:
                out.append("    " + rest)
            continue
        if section is None or not stripped:
            out.append(line)
            continue
        indent = len(line) - len(line.lstrip())
        if section == "Returns":
            if out[-1] == "Returns:":
                out.append("    " + stripped)
            else:
                out[-1] += " " + stripped
        elif entry_indent is None or indent <= entry_indent:
            entry_indent = indent
            out.append("    " + stripped)
        else:
            out[-1] += " " + stripped
    return "\n".join(out)


_EXAMPLE_NAME = re.compile(r"^[A-Za-z0-9][\w.-]{0,100}\.(?:png|jpe?g|webp)$")
served_examples: dict[tuple[str, str], Path] = {}  # (demo id, file name) -> the file; filled as pages are built
_static_folders: set[str] = set()  # folders of example files Gradio serves as they are


def serve_static(paths) -> None:
    """Let Gradio serve these example files as they are (a click puts one into a component, whose value the browser
    then loads and sends back). ``gr.set_static_paths`` replaces its list, so every page's folders are kept here."""
    _static_folders.update(str(Path(p).resolve().parent) for p in paths)
    gr.set_static_paths(sorted(_static_folders))


def image_examples(demo: Demo, paths: list[str], target: gr.Image, label: str = "Examples") -> gr.Dataset:
    """Clickable example images for ``target``. The thumbnails come from ``EXAMPLES_ROUTE/<demo>/<name>``; a click
    runs a private event that puts the file into ``target`` (its folder is a Gradio static path, served as it is)."""
    for path in map(Path, paths):
        if not _EXAMPLE_NAME.match(path.name):
            raise ValueError(f"example file name {path.name!r} is not one the examples route serves")
        served_examples[(demo.id, path.name)] = path.resolve()
    serve_static(paths)
    samples = [[f'<img src="{EXAMPLES_ROUTE}/{demo.id}/{Path(p).name}" alt="{Path(p).stem}" '
                'style="height:72px;width:auto;border-radius:6px">'] for p in paths]
    dataset = gr.Dataset(components=[gr.HTML(visible=False)], samples=samples, label=label, type="index",
                         samples_per_page=len(samples) or 1)
    dataset.click(lambda index: paths[index], dataset, target, api_visibility="private", queue=False)
    return dataset


def example_file(demo_id: str, name: str) -> Path | None:
    """The example file ``image_examples`` registered under ``name`` for ``demo_id``, or None."""
    return served_examples.get((demo_id, name))


def paper_card(demo: Demo) -> gr.Markdown:
    p = demo.paper
    return gr.Markdown(
        f"## {demo.title}\n\n{demo.tagline}\n\n"
        f"**{p.title}** — {p.authors} ({p.venue}). [Paper]({p.url}) · [Official code]({p.code_url})\n\n"
        f"<details><summary>Abstract</summary>\n\n{p.abstract}\n\n</details>",
        elem_classes=["paper-card"],
    )


def weights_section(ctx: DemoContext, works_without: str = "") -> WeightsView:
    """Weights selector, its banner, and (where the operator allows downloads) a Download button; one state."""
    name = ctx.default_weights()
    with gr.Row():
        chooser = weights_dropdown(ctx)
        download_btn = None
        if ctx.downloads:
            label = WeightsView.download_label(ctx, name)
            download_btn = gr.Button(label or "Download", variant="secondary", scale=0, visible=label is not None)
    status = WeightsView.new_banner(ctx, works_without, name)
    view = WeightsView(ctx, [chooser], status, works_without, download_btn)
    if download_btn is not None:
        def download(chosen, progress=gr.Progress()):
            ctx.download(chosen or ctx.default_weights(), download_progress(progress))

        view.follow(download_btn.click(download, chooser, None, api_visibility="private"))
    return view


def weights_dropdown(ctx: DemoContext, label: str = "Weights") -> gr.Dropdown:
    """A selector listing each weight set with its state (loaded / bundled / cached / downloadable, size)."""
    return gr.Dropdown(choices=ctx.weight_choices(), value=ctx.default_weights(), label=label, interactive=True)


def weights_notice(ctx: DemoContext, name: str | None = None, works_without: str = "") -> str:
    """``ctx.weights_message`` as a banner ("" when the chosen weights are here)."""
    message = ctx.weights_message(name, works_without)
    return notice(message, "warning") if message else ""


QUIET = ["demohub-quiet"]  # a banner or note that takes no room while empty (CSS below)


class WeightsView:
    """Everything a page shows about its chosen weights, from their one state (``DemoContext.weight_state``): each
    selector's labels (loaded / on disk / downloadable, size / not on this server), the banner, and, where visitors
    may download, a Download button shown only while a chosen set is downloadable. ``follow(event)`` redraws it all
    after an event (a download, a model call), so a failed or refused download leaves nothing saying
    "downloadable"; a changed choice redraws the banner and the button."""

    def __init__(self, ctx: DemoContext, selectors: list[gr.Dropdown], banner: gr.HTML, works_without: str = "",
                 download: gr.Button | None = None):
        self.ctx, self.selectors, self.banner, self.works_without = ctx, selectors, banner, works_without
        self.download = download
        gr.on([s.change for s in selectors], self.redraw_messages, selectors, self._message_outputs,
              api_visibility="private")

    @property
    def _message_outputs(self) -> list[gr.components.Component]:
        return [self.banner] + ([self.download] if self.download is not None else [])

    @staticmethod
    def new_banner(ctx: DemoContext, works_without: str, *names: str) -> gr.HTML:
        """The banner component for the chosen sets; it takes no room while it has nothing to say."""
        return gr.HTML(WeightsView.banner_for(ctx, works_without, *names), elem_classes=QUIET)

    @staticmethod
    def banner_for(ctx: DemoContext, works_without: str, *names: str) -> str:
        """The banner for the chosen sets: one notice per distinct set that is not here ("" when all are)."""
        return "".join(weights_notice(ctx, name, works_without) for name in dict.fromkeys(names))

    def banner_html(self, *names: str) -> str:
        return self.banner_for(self.ctx, self.works_without, *names)

    @staticmethod
    def download_label(ctx: DemoContext, *names: str) -> str | None:
        """The Download button's label for the first chosen set that is downloadable (with its size); None: none is,
        and the button hides."""
        for name in names:
            ws = ctx.demo.weight_set(name)
            if ctx.weight_state(ws) is WeightState.DOWNLOADABLE:
                return f"Download {name} ({ws.size_text})"
        return None

    def download_button(self, *names: str) -> dict:
        label = self.download_label(self.ctx, *names)
        return gr.update(value=label, visible=True) if label else gr.update(visible=False)

    def redraw_messages(self, *names: str) -> tuple:
        return (self.banner_html(*names),) + ((self.download_button(*names),) if self.download is not None else ())

    def redraw(self, *names: str) -> tuple:
        labels = tuple(gr.update(choices=self.ctx.weight_choices()) for _ in self.selectors)
        return labels + self.redraw_messages(*names)

    def follow(self, *events: Any) -> None:
        for event in events:
            event.then(self.redraw, self.selectors, [*self.selectors, *self._message_outputs],
                       api_visibility="private")


def validator(check: Callable[..., Any]) -> Callable[..., Any]:
    """A Gradio ``validator=`` from a UI-free check: ``check(*inputs)`` runs when the event is submitted, before it is
    queued, so a bad input never takes a model slot. A ``UserInputError`` marks the input its ``argument`` names
    (matched to ``check``'s parameter names; the first input otherwise) with the error's sentence; the API client
    reads the same sentence. Any other exception lets the event through: the handler reports it with an error id.
    A check marked with ``shared.errors.page_inputs`` names the page's input for an argument the errors name.

    ``check`` must take exactly the event's inputs, in order: Gradio fills any further parameter with its default,
    and a validator answering for more inputs than the event has is read as "valid"."""
    names = list(inspect.signature(check).parameters)
    page_names = getattr(check, "page_inputs", {})  # shared.errors.page_inputs

    @functools.wraps(check)
    def validate(*inputs):
        try:
            check(*inputs)
            failed = None
        except UserInputError as error:
            failed = error
        except Exception:  # not the visitor's input: the model call will report it properly
            failed = None
        results = [gr.validate(True, "") for _ in inputs]
        if failed is not None:
            argument = page_names.get(failed.argument, failed.argument)
            at = names.index(argument) if argument in names[:len(inputs)] else 0
            results[at] = gr.validate(False, str(failed))
        return results[0] if len(results) == 1 else results

    return validate


# Embedding. A page opened with ?embed=1 is its embedded view: no hub navigation, no "Embed this demo" section, and
# its height reported to the page around it, whose copy of the iframe snippet sets the iframe's height from it, so
# nothing is cut off however long the results grow. The height is the content's: the embedded view drops Gradio's
# fill-the-window minimum heights and measures the app, not the body (which fills the frame: an iframe made taller
# would report itself taller, forever, and never shrink).
EMBED_PARAMETER = "embed=1"
HEIGHT_MESSAGE = "demohub:height"
MAX_EMBED_HEIGHT = 20_000  # px: what a snippet accepts from the frame, whatever it sends
EMBED_HEIGHT = views.EMBED_HEIGHT  # px: the iframe's height until the page reports its own (the Streamlit pages' too)
PAGE_URL = "https://YOUR-HUB/DEMO"  # in the snippets until the browser puts in the address the visitor reached

EMBED_HEAD = """<script>
(() => {
  if (new URLSearchParams(location.search).get("embed") !== "1") return;
  document.documentElement.classList.add("demohub-embed");
  let reported = 0;
  const report = (app) => {
    const height = Math.ceil(app.getBoundingClientRect().bottom + window.scrollY);
    if (height === reported || window.parent === window) return;
    reported = height;
    window.parent.postMessage({type: "HEIGHT_MESSAGE", height: height}, "*");
  };
  const observe = () => {
    const app = document.querySelector("gradio-app") || document.body;
    new ResizeObserver(() => report(app)).observe(app);
  };
  document.readyState === "loading" ? addEventListener("DOMContentLoaded", observe) : observe();
})();
</script>""".replace("HEIGHT_MESSAGE", HEIGHT_MESSAGE)

EMBED_CSS = """
.demohub-embed .nav-holder, .demohub-embed .demohub-embed-section { display: none !important; }
.demohub-embed gradio-app, .demohub-embed .gradio-container, .demohub-embed .gradio-container > .main,
.demohub-embed .gradio-container .wrap { min-height: 0 !important; flex-grow: 0 !important; }
"""


def embed_snippets(demo: Demo, page_url: str, space_id: str | None = None) -> dict[str, str]:
    """Copyable HTML that embeds this demo from ``page_url`` (the page's own address): an iframe of its embedded
    view that starts at ``EMBED_HEIGHT`` and takes the height the page reports (a few lines of script; without them it
    keeps ``EMBED_HEIGHT``, and scrolls inside where the view is taller), and Gradio's web component, which sizes
    itself. With ``space_id`` (the hub runs on that Space) the web component names the Space."""
    frame = f"demohub-{demo.id}"
    src = page_url + ("&" if "?" in page_url else "?") + EMBED_PARAMETER
    iframe = (
        f'<iframe id="{frame}" src="{html.escape(src)}" title="{html.escape(demo.title)}" '
        f'style="border:0;width:100%" height="{EMBED_HEIGHT}" loading="lazy"></iframe>\n'
        "<script>\n"
        'addEventListener("message", (event) => {\n'
        f'  const frame = document.getElementById("{frame}");\n'
        f'  if (!frame || event.source !== frame.contentWindow || event.data?.type !== "{HEIGHT_MESSAGE}") return;\n'
        f"  frame.height = Math.min(Math.max(Number(event.data.height) || 0, 200), {MAX_EMBED_HEIGHT});\n"
        "});\n"
        "</script>"
    )
    source = f'space="{html.escape(space_id)}"' if space_id else f'src="{html.escape(page_url)}"'
    component = f'<script type="module" src="{GRADIO_JS_URL}"></script>\n<gradio-app {source}></gradio-app>'
    return {"iframe": iframe, "web_component": component}


# Where the page's address is one only its visitor can reach, the embed section says so before its snippets, and how
# to get an address others can reach. The browser decides (it knows the address it reached); ADDRESS and REACH are
# filled in there.
LOCAL_ADDRESS_WARNING = views.LOCAL_ADDRESS_WARNING  # the Streamlit pages say the same (apps/streamlit_ui.py)
# The hosts only this machine, or only its local network, reaches (the browser's location.hostname); the same rule as
# ``views.local_reach`` (tests/hub/test_look.py runs both on one table of hosts).
_LOCAL_HOST_JS = """(host) => {
  const h = host.replace(/^\\[|\\]$/g, "").toLowerCase();
  if (h === "localhost" || h.endsWith(".localhost") || /^127\\./.test(h) || h === "::1" || h === "0.0.0.0")
    return "on this machine";
  if (/^10\\./.test(h) || /^192\\.168\\./.test(h) || /^172\\.(1[6-9]|2[0-9]|3[01])\\./.test(h) ||
      /^169\\.254\\./.test(h) || /^f[cd][0-9a-f]{2}:/.test(h) || /^fe80:/.test(h) || h.endsWith(".local") ||
      h.endsWith(".internal") || h.endsWith(".lan") || !/[.:]/.test(h))
    return "inside this local network";
  return "";
}"""


def code_notice(text: str, kind: str) -> str:
    """``notice`` whose `backticked` parts show as code (escaped first, so nothing else becomes markup)."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", notice(text, kind))


def embed_section(ctx: DemoContext, page: gr.Blocks) -> None:
    """The "Embed this demo" accordion: snippets for the hub's public address (``--public-url``, a Space's host), else
    for the address this visitor reached (host, port, root path and route as the browser sees them, so they work
    behind a proxy too), filled in by the browser when the page loads. An address only this machine or its local
    network reaches gets a warning first, with the ways to a public one."""
    demo = ctx.demo
    templates = embed_snippets(demo, PAGE_URL, os.environ.get("SPACE_ID") or None)
    warning = code_notice(LOCAL_ADDRESS_WARNING.replace("DEMO", demo.id), "warning")
    with gr.Accordion("Embed this demo", open=False, elem_classes="demohub-embed-section"):
        local = gr.HTML("", elem_classes=QUIET)
        gr.Markdown("Paste one of these into your paper's project page. The iframe grows with the demo's results.")
        codes = [gr.Code(templates["iframe"], language="html", label="iframe", interactive=False),
                 gr.Code(templates["web_component"], language="html", label="Gradio web component",
                         interactive=False)]
    route = f"/{demo.id}"
    fill = ("() => { const here = location.origin + location.pathname.replace(/(.)\\/+$/, '$1'); "
            f"const base = {json.dumps(ctx.public_url)}; "
            f"const route = location.pathname.replace(/\\/+$/, '').endsWith({json.dumps(route)}) "
            f"? {json.dumps(route)} : ''; "
            "const page = base ? base + route : here; "
            f"const reach = base ? '' : ({_LOCAL_HOST_JS})(location.hostname); "
            f"const warning = reach ? {json.dumps(warning)}.replace('ADDRESS', here).replace('REACH', reach) : ''; "
            f"return [warning, ...{json.dumps([templates['iframe'], templates['web_component']])}"
            f".map((snippet) => snippet.replaceAll({json.dumps(PAGE_URL)}, page))]; }}")
    page.load(None, None, [local, *codes], js=fill)


NOTICE_KINDS = ("info", "success", "warning", "error")


def notice(text: str, kind: str = "info") -> str:
    """A small HTML banner (weight states, "coming soon", load failures); styled by ``CSS`` in light and dark."""
    if kind not in NOTICE_KINDS:
        raise ValueError(f"notice kind {kind!r} is not one of {NOTICE_KINDS}")
    return f'<div class="demohub-notice demohub-{kind}" role="status">{html.escape(text)}</div>'


# The hub's and every single-demo Space's look: one stylesheet (Gradio's CSS variables, so light and dark themes both
# work), passed to ``launch`` through ``look()``.
CSS = """
.form-answer td:first-child, .form-answer th:first-child { white-space: nowrap; }
.catalog-entry { border-bottom: 1px solid var(--border-color-primary); padding: .5rem 0; overflow-wrap: anywhere; }
.demo-badge { background: var(--color-accent-soft); border-radius: 6px; padding: 0 .4rem; font-size: .8em; }
.demohub-notice { padding: .8rem 1rem; border-radius: 8px; border-left: 4px solid; overflow-wrap: anywhere; }
.demohub-info { background: #e0f2fe; color: #0c4a6e; border-color: #0284c7; }
.demohub-success { background: #dcfce7; color: #14532d; border-color: #16a34a; }
.demohub-warning { background: #fef3c7; color: #78350f; border-color: #d97706; }
.demohub-error { background: #fde8e8; color: #7f1d1d; border-color: #dc2626; }
.dark .demohub-info { background: #0c2a3f; color: #bae6fd; }
.dark .demohub-success { background: #0f2e1a; color: #bbf7d0; }
.dark .demohub-warning { background: #3a2a06; color: #fde68a; }
.dark .demohub-error { background: #3b1111; color: #fecaca; }
.demohub-notice code { background: transparent; color: inherit; }
.gradio-container table { display: block; max-width: 100%; overflow-x: auto; }
.demohub-quiet:not(:has(.demohub-notice, p, li)) { display: none !important; }
.gradio-container pre, .gradio-container code { white-space: pre-wrap; overflow-wrap: anywhere; }
.gradio-container label { max-width: 100%; }
.gradio-container label span { overflow-wrap: anywhere; }
""" + views.CARDS_CSS + EMBED_CSS
# Rules for what Gradio's own stylesheet places outside the app's content (the page links above it), which ``css``
# cannot reach (Gradio scopes it to ``.contain``): in the page's head. At a paper page's ~720 px the page links keep
# one line (Gradio's margins and padding wrapped the last one).
HEAD_CSS = """<style>
@media (max-width: 800px) {
  .nav-holder nav { margin: 0 .5rem !important; padding: 0 .5rem !important; gap: 2px !important; }
  .nav-holder nav a { padding: 4px 6px !important; }
}
</style>"""


def look() -> dict[str, Any]:
    """``launch(**look())``: the theme and stylesheet every Gradio front end of the hub uses."""
    return {"theme": theme(), "css": CSS, "head": HEAD_CSS + EMBED_HEAD}


def theme() -> gr.themes.Base:
    """A theme with system fonts only: the default asks Google Fonts, which fails offline."""
    system = ["ui-sans-serif", "system-ui", "-apple-system", "Segoe UI", "Roboto", "sans-serif"]
    mono = ["ui-monospace", "SFMono-Regular", "Menlo", "Consolas", "monospace"]
    return gr.themes.Soft(font=system, font_mono=mono)
