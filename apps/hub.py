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
import traceback
from dataclasses import dataclass
from types import ModuleType

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr  # noqa: E402

from apps import DEMOS, catalog  # noqa: E402
from apps.ui import gpu_event_kwargs, notice, theme  # noqa: E402
from shared import weights  # noqa: E402
from shared.context import DemoContext  # noqa: E402
from shared.pool import ModelPool, default_pool  # noqa: E402
from shared.registry import Demo  # noqa: E402

CSS = """
.demo-cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(260px, 1fr)); gap: 1rem; }
.demo-card { border: 1px solid var(--border-color-primary); border-radius: 12px; padding: 1rem; }
.demo-card h3 { margin: 0 0 .4rem 0; }
.demo-card .state { font-size: .85em; opacity: .8; }
.catalog-entry { border-bottom: 1px solid var(--border-color-primary); padding: .5rem 0; }
.demo-badge { background: var(--color-accent-soft); border-radius: 6px; padding: 0 .4rem; font-size: .8em; }
.demohub-notice { padding: .8rem 1rem; border-radius: 8px; background: var(--color-accent-soft); }
.demohub-error { background: #fde8e8; color: #7f1d1d; }
"""


@dataclass
class PageResult:
    demo: Demo
    status: str  # "ready" | "coming-soon" | "error"
    module: ModuleType | None = None
    reason: str = ""


def import_page(demo: Demo) -> PageResult:
    """Import one demo's page module; never raises (failure isolation)."""
    try:
        missing = importlib.util.find_spec(demo.page) is None
    except ModuleNotFoundError:  # the demo's package itself does not exist yet
        missing = True
    if missing:
        return PageResult(demo, "coming-soon")
    try:
        return PageResult(demo, "ready", importlib.import_module(demo.page))
    except Exception as error:
        traceback.print_exc()
        return PageResult(demo, "error", reason=f"{type(error).__name__}: {error}")


def render_page(page: PageResult, pool: ModelPool) -> None:
    """Build the page inside the current route (a nested Blocks: no app of its own, so the hub starts faster)."""
    if page.status == "ready":
        try:
            page.module.build(DemoContext(page.demo, pool))
            return
        except Exception as error:
            traceback.print_exc()
            page.status, page.reason = "error", f"{type(error).__name__}: {error}"
    gr.Markdown(f"# {page.demo.emoji} {page.demo.title}\n\n{page.demo.tagline}")
    if page.status == "coming-soon":
        gr.HTML(notice("This demo is coming soon: its page is not built yet. The paper card and weights "
                       "are registered; see the catalog for the paper."))
    else:
        gr.HTML(notice(f"This demo failed to load, the rest of the hub works. Reason: {page.reason}", kind="error"))


def card_html(page: PageResult) -> str:
    demo, p = page.demo, page.demo.paper
    status = {"ready": "", "coming-soon": " · coming soon", "error": " · failed to load"}[page.status]
    return (
        f'<div class="demo-card" data-demo="{demo.id}"><h3>{demo.emoji} <a href="/{demo.id}">'
        f"{html.escape(demo.title)}</a></h3><p>{html.escape(demo.tagline)}</p>"
        f'<p><a href="{p.url}">Paper</a> · <a href="{p.code_url}">Official code</a></p>'
        f'<p class="state">{html.escape(weights.summary(demo))}{status}</p></div>'
    )


def catalog_html(entries: list[catalog.CatalogEntry]) -> str:
    if not entries:
        return "<p>No paper matches.</p>"
    rows = []
    for e in entries:
        badge = f' <a class="demo-badge" href="/{e.demo}">▶ live demo</a>' if e.demo else ""
        link = f' · <a href="{e.url}">arXiv</a>' if e.url else ""
        code = f' · <a href="{html.escape(e.code_url)}">code</a>' if e.code_url else ""
        rows.append(
            f'<div class="catalog-entry" data-paper="{e.id}"><strong>{html.escape(e.title)}</strong>{badge}{link}{code}'
            f"<details><summary>Abstract</summary><p>{html.escape(e.abstract)}</p></details></div>"
        )
    return f"<p>{len(entries)} papers</p>" + "".join(rows)


def catalog_api(query: str = "", only_demos: bool = False) -> list[dict]:
    """The ICLR 2024 papers whose title or abstract contains every word of ``query``.

    Args:
        query: words to look for (empty: every paper).
        only_demos: keep only the papers that have a live demo here.
    """
    return [e.as_dict() for e in catalog.search(query, only_demos)]


def pool_stats_api() -> dict:
    """Loaded models with their sizes in bytes, and the pool's hits, misses, loads and evictions."""
    stats = default_pool().stats()
    return {"loaded": stats.loaded, "hits": stats.hits, "misses": stats.misses, "loads": stats.loads,
            "evictions": stats.evictions, "budget_bytes": stats.budget_bytes, "used_bytes": stats.used_bytes}


def build_hub(pool: ModelPool | None = None) -> gr.Blocks:
    pool = pool or default_pool()
    pages = [import_page(demo) for demo in DEMOS]
    with gr.Blocks(title="Paper Demo Hub", analytics_enabled=False) as hub:
        gr.Markdown(
            "# 📄 Paper Demo Hub\nTry ICLR 2024 papers hands-on, on their official weights. "
            "Pick a demo, or browse the catalog below."
        )
        gr.HTML('<div class="demo-cards">' + "".join(card_html(p) for p in pages) + "</div>")
        gr.Markdown("## ICLR 2024 catalog")
        with gr.Row():
            query = gr.Textbox(label="Search titles and abstracts", scale=4)
            only_demos = gr.Checkbox(label="Only papers with a demo", value=False, scale=1)
        listing = gr.HTML(catalog_html(catalog.search()))
        for trigger in (query.submit, only_demos.change):
            trigger(lambda q, o: catalog_html(catalog.search(q, o)), [query, only_demos], listing,
                    api_visibility="private")
        gr.api(catalog_api, api_name="catalog")
        gr.api(pool_stats_api, api_name="pool_stats")

    for page in pages:
        with hub.route(f"{page.demo.emoji} {page.demo.id}", f"/{page.demo.id}"):
            render_page(page, pool)
    return hub


def launch(host: str = "127.0.0.1", port: int | None = None, share: bool = False,
           prevent_thread_lock: bool = False, pool: ModelPool | None = None):
    hub = build_hub(pool)
    hub.queue(default_concurrency_limit=gpu_event_kwargs()["concurrency_limit"])
    return hub, hub.launch(
        server_name=host, server_port=port, share=share, prevent_thread_lock=prevent_thread_lock,
        show_error=True,  # Gradio's own input checks (wrong types through the API) then say what was wrong
        theme=theme(), css=CSS, footer_links=["api", "settings"], quiet=prevent_thread_lock,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m apps.hub", description="Serve the Paper Demo Hub (Gradio).")
    parser.add_argument("--host", default=os.environ.get("DEMOHUB_HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("DEMOHUB_PORT", "7860")))
    parser.add_argument("--share", action="store_true", help="also open a temporary public gradio.live link")
    args = parser.parse_args(argv)
    launch(args.host, args.port, args.share)


if __name__ == "__main__":
    main()
