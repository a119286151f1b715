"""The Gradio hub: a landing page (demo cards + paper catalog) and one route per registered demo.

Run with ``python -m apps.hub`` or ``demohub serve``. A demo whose page is missing shows "coming soon"; one whose
page fails to import or build shows the reason, and every other route keeps working.
"""

from __future__ import annotations

import argparse
import html
import importlib
import importlib.util
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr  # noqa: E402

from apps import DEMOS, gradio_internals, serving, ui, views  # noqa: E402
from apps import catalog as papers  # noqa: E402
from apps.settings import ServeSettings, add_arguments, from_args  # noqa: E402
from apps.ui import look, notice  # noqa: E402
from shared import weights  # noqa: E402
from shared.api import Endpoint, Input  # noqa: E402
from shared.context import DemoContext, import_pipeline_class  # noqa: E402
from shared.errors import log, report  # noqa: E402
from shared.pool import ModelPool, default_pool  # noqa: E402
from shared.ray_pool import RayPool  # noqa: E402
from shared.registry import Demo  # noqa: E402


@dataclass
class PageResult:
    demo: Demo
    status: str  # "ready" | "coming-soon" | "error"
    module: ModuleType | None = None
    reason: str = ""


def import_page(demo: Demo) -> PageResult:
    """Import one demo's page module; never raises (failure isolation)."""
    try:
        missing = not demo.page_module or importlib.util.find_spec(demo.page_module) is None
    except ModuleNotFoundError:  # the demo's package itself does not exist yet
        missing = True
    if missing:
        return PageResult(demo, "coming-soon")
    try:
        return PageResult(demo, "ready", importlib.import_module(demo.page_module))
    except Exception as error:
        return PageResult(demo, "error", reason=_failure(error))


def _failure(error: BaseException) -> str:
    """What a visitor reads about a page that failed to build: a sentence and the id of the log entry."""
    return f"its page could not be built (error id {report(error)}; the server log has the details)"


def render_page(page: PageResult, ctx: DemoContext) -> None:
    """Build the page inside the current route."""
    if page.status == "ready":
        try:
            page.module.build(ctx)
            return
        except Exception as error:
            page.status, page.reason = "error", _failure(error)
    gr.Markdown(f"# {page.demo.title}\n\n{page.demo.tagline}")
    if page.status == "coming-soon":
        gr.HTML(notice("This demo is coming soon: its page is not built yet. The paper card and weights "
                       "are registered; see the catalog for the paper."))
    else:
        gr.HTML(notice(f"This demo failed to load, the rest of the hub works: {page.reason}.", kind="error"))


def card_html(page: PageResult, downloads: bool = False) -> str:
    """A demo's card: a picture made from its own editor or examples, title, tagline, links, and what runs here."""
    demo, p = page.demo, page.demo.paper
    if page.status == "ready":
        state = weights.summary(demo, downloads)
    else:
        state = {"coming-soon": "Coming soon.", "error": "Failed to load; the rest of the hub works."}[page.status]
    return views.demo_card(demo.id, demo.title, demo.tagline, p.url, p.code_url, state,
                           views.preview_of(demo) if page.status == "ready" else "", f"/{demo.id}")


def catalog_html(entries: list[papers.CatalogEntry]) -> str:
    if not entries:
        return "<p>No paper matches.</p>"
    rows = []
    for e in entries:
        badge = f' <a class="demo-badge" href="/{e.demo}">live demo</a>' if e.demo else ""
        link = f' · <a href="{e.url}">arXiv</a>' if e.url else ""
        code = f' · <a href="{html.escape(e.code_url)}">code</a>' if e.code_url else ""
        rows.append(
            f'<div class="catalog-entry" data-paper="{e.id}"><strong>{html.escape(e.title)}</strong>{badge}{link}{code}'
            f"<details><summary>Abstract</summary><p>{html.escape(e.abstract)}</p></details></div>"
        )
    return f"<p>{len(entries)} paper{'s' * (len(entries) != 1)}</p>" + "".join(rows)


ENDPOINTS = (  # the hub's own API functions (``shared.api``), beside each demo's
    Endpoint(
        name="catalog",
        summary="Search the catalog of ICLR 2024 papers: those whose title or abstract contains every word of the "
                "query.",
        inputs=(Input("query", "text", 'words to look for, any case (e.g. "diffusion layout"), at most '
                      f'{papers.MAX_QUERY_WORDS} words; "" lists every paper', default="",
                      max_length=papers.MAX_QUERY_CHARS, example="diffusion"),
                Input("only_demos", "boolean", "true keeps only the papers with a live demo on this hub",
                      default=False, example=False)),
        returns='[{"id", "title", "abstract", "arxiv_id", "url" (arXiv), "code_url", "demo" (its id on this hub, or '
                "null)}]",
        run="apps.hub:catalog",
        check="apps.hub:check_catalog",
        work="light",
    ),
)


def catalog(ctx: None, query: str, only_demos: bool) -> list[dict]:
    return [e.as_dict() for e in papers.search(query, only_demos)]


def check_catalog(ctx: None, query: str, only_demos: bool) -> None:
    """The catalog search's check: bounded text, true/false."""
    papers.check_query(query, only_demos)


def build_hub(pool: ModelPool | None = None, settings: ServeSettings | None = None) -> gr.Blocks:
    """The hub's Blocks: landing page and catalog, a route per demo. No web app is built until launch."""
    with gradio_internals.apps_at_launch_only():
        return _build_hub(pool, settings)


def _build_hub(pool: ModelPool | None, settings: ServeSettings | None) -> gr.Blocks:
    pool = pool or default_pool()
    settings = settings or ServeSettings()
    pages = [import_page(demo) for demo in DEMOS]
    contexts = {p.demo.id: settings.context(p.demo, pool) for p in pages}
    with gr.Blocks(title="Paper Demo Hub", analytics_enabled=False) as hub:
        gr.Markdown(
            "# Paper Demo Hub\nTry ICLR 2024 papers hands-on, on their official weights. "
            "Pick a demo, or browse the catalog below."
        )
        cards = gr.HTML()
        gr.Markdown("## ICLR 2024 catalog")
        query = gr.Textbox(label="Search titles and abstracts", placeholder="e.g. diffusion, molecules, program "
                           "synthesis", max_length=papers.MAX_QUERY_CHARS)
        only_demos = gr.Checkbox(label="Only papers with a demo", value=False)  # its own line: one line at 720 px
        listing = gr.HTML(catalog_html(papers.search()))
        for trigger in (query.submit, only_demos.change):
            trigger(lambda q, o: catalog_html(papers.search(q, o)), [query, only_demos], listing,
                    api_visibility="private", validator=ui.validator(papers.check_query))
        for endpoint in ENDPOINTS:
            ui.serve_endpoint(None, endpoint)

    for page in pages:
        with hub.route(page.demo.name, f"/{page.demo.id}"):
            render_page(page, contexts[page.demo.id])
    # Cards after the routes: a page that failed to build shows "failed to load" on its card too.
    cards.value = ('<div class="demo-cards">' + "".join(card_html(p, settings.downloads_allowed) for p in pages)
                   + "</div>")
    hub.config = hub.get_config_file()  # launch() recomputes it too; this keeps the built Blocks consistent
    return hub


def launch(settings: ServeSettings | None = None, *, prevent_thread_lock: bool = False,
           pool: ModelPool | RayPool | None = None):
    """Serve the hub under ``settings`` (defaults: a private hub on 127.0.0.1:7860); returns (blocks, launch result).

    With ``settings.ray`` the models live in Ray Serve (``settings.ray_pool``): the weight sets serve.yaml names (or
    those on disk) start deploying at once, the rest on first use; a local Ray instance stops with the hub."""
    settings = settings or ServeSettings()
    if pool is None and settings.ray:
        pool = settings.ray_pool(DEMOS)
        start_deployments(pool)
    pool = pool or default_pool()
    hub = build_hub(pool, settings)
    from apps.spaces import fetch_at_start

    fetch_at_start(DEMOS)  # on a Space: what preload_from_hub cannot fetch
    closes_ray = not pool.computes_here and not prevent_thread_lock  # a blocking launch owns the RayPool's lifetime
    if closes_ray:
        stop_on_sigterm()  # a service manager's stop closes the hub the way Ctrl-C does, and Ray with it
    try:
        warm = settings.warm and pool.computes_here  # with Ray the models, and torch, live in the replicas
        result = serving.launch(hub, settings, stats=lambda: pool.stats().as_dict(),
                                prevent_thread_lock=prevent_thread_lock, on_serving=warm_up if warm else None,
                                footer_links=["api", "settings"], **look())
    finally:
        if closes_ray:
            pool.close()
    return hub, result


def warm_up(demos: Sequence[Demo] = DEMOS) -> threading.Thread:
    """Import every demo's pipeline module (torch, transformers, diffusers) in a background thread, so the first model
    call after start does not wait for it (12.9 s on a busy 2-core machine). Checks never need it: they live in each
    demo's torch-free ``checks.py``, so a request is admitted at once even while this runs. Each import holds the
    load lock (``shared.context.import_pipeline_class``): a model loading meanwhile waits for one module, never
    imports beside it."""

    def run() -> None:
        start = time.perf_counter()
        preload_torch_libraries()
        for demo in demos:
            try:
                import_pipeline_class(demo)
            except Exception:  # its first model call reports the same failure to the visitor, in a sentence
                log.warning("could not import the %s pipeline ahead of its first call", demo.id, exc_info=True)
        log.info("model code imported in the background in %.1f s", time.perf_counter() - start)

    thread = threading.Thread(target=run, name="demohub-warm-up", daemon=True)
    thread.start()
    return thread


def preload_torch_libraries() -> None:
    """Load torch's big shared libraries with the interpreter lock released, so that ``import torch`` in the warm-up
    thread finds them loaded. Python's own ``dlopen`` of an extension holds the lock: linking libtorch_cpu stalled
    every other thread, the server's event loop included, for ~0.4 s on an idle 2-core machine and over a second on
    busy cores; a ctypes call into libc's ``dlopen`` releases it (longest stall measured: 0.06 s). Linux only; a
    library that does not load yet (a CUDA build's, before torch loads its CUDA runtime) is left to ``import torch``."""
    import ctypes
    import sys

    spec = importlib.util.find_spec("torch")
    if not sys.platform.startswith("linux") or spec is None or not spec.submodule_search_locations:
        return
    folder = os.path.join(spec.submodule_search_locations[0], "lib")
    try:
        dlopen = ctypes.CDLL(None).dlopen
    except (OSError, AttributeError):
        return
    dlopen.restype, dlopen.argtypes = ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_int]
    rtld_now, rtld_global = 2, 0x100
    for name, flags in (("libtorch_global_deps.so", rtld_now | rtld_global),  # as torch loads it
                        ("libtorch_cpu.so", rtld_now), ("libtorch_python.so", rtld_now)):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            dlopen(path.encode(), flags)  # a NULL answer (not loadable yet) is fine: import torch loads it


def stop_on_sigterm() -> None:
    """SIGTERM raises KeyboardInterrupt in the main thread, which Gradio's wait loop turns into a clean close."""
    import signal
    import threading

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, interrupt)


def start_deployments(pool: RayPool) -> None:
    """Deploy, without waiting, each demo's start-up weight sets that are on this machine (serve.yaml's ``weights``,
    else all those on disk); one named but missing is logged and deploys on first use once it is fetched."""
    keys = []
    for demo in DEMOS:
        here = [ws.name for ws in demo.weight_sets if weights.state(demo.id, ws, ask_hub=False).here]
        for name in pool.config.startup_weights(demo, here):
            if name in here:
                keys.append((demo.id, name))
            else:
                log.warning("serve config: %s/%s is not on this machine; it deploys on first use once its weights "
                            "are fetched (demohub download %s --weights %s)", demo.id, name, demo.id, name)
    if keys:
        pool.deploy(keys)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m apps.hub", description="Serve the Paper Demo Hub (Gradio).")
    add_arguments(parser)
    launch(from_args(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
