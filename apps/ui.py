"""Pieces every Gradio demo page uses: paper card, weights selector, embed snippets, error handling, GPU events."""

from __future__ import annotations

import functools
import html
import inspect
import os
from collections.abc import Callable
from typing import Any

import gradio as gr

from shared.context import DemoContext
from shared.errors import as_gradio_error
from shared.registry import Demo

GRADIO_JS_URL = f"https://gradio.s3-us-west-2.amazonaws.com/{gr.__version__}/gradio.js"


def gpu_event_kwargs() -> dict[str, Any]:
    """Events that run a model share one concurrency group sized by ``DEMOHUB_GPU_CONCURRENCY``."""
    return {"concurrency_id": "gpu", "concurrency_limit": int(os.environ.get("DEMOHUB_GPU_CONCURRENCY", "1"))}


def user_errors(fn: Callable) -> Callable:
    """Show any exception from ``fn`` as one readable ``gr.Error`` sentence; the server keeps serving."""
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def gen_wrapper(*args, **kwargs):
            try:
                yield from fn(*args, **kwargs)
            except Exception as error:
                raise as_gradio_error(error) from error

        return gen_wrapper

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as error:
            raise as_gradio_error(error) from error

    return wrapper


def model_call(fn: Callable | None = None, *, duration: int = 120) -> Callable:
    """For handlers that run a model: readable errors, plus a GPU slot on ZeroGPU Spaces (a no-op elsewhere)."""
    from shared.device import gpu

    def wrap(f: Callable) -> Callable:
        return gpu(user_errors(f), duration=duration)

    return wrap(fn) if fn is not None else wrap


def paper_card(demo: Demo) -> gr.Markdown:
    p = demo.paper
    return gr.Markdown(
        f"## {demo.emoji} {demo.title}\n\n{demo.tagline}\n\n"
        f"**{p.title}** — {p.authors} ({p.venue}). [Paper]({p.url}) · [Official code]({p.code_url})\n\n"
        f"<details><summary>Abstract</summary>\n\n{p.abstract}\n\n</details>",
        elem_classes=["paper-card"],
    )


def weights_dropdown(ctx: DemoContext, label: str = "Weights") -> gr.Dropdown:
    """A selector listing each weight set with its state (loaded / bundled / cached / downloadable, size)."""
    return gr.Dropdown(choices=ctx.weight_choices(), value=ctx.default_weights(), label=label, interactive=True)


def embed_snippets(demo: Demo, space_id: str | None = None, hub_url: str = "http://localhost:7860") -> dict[str, str]:
    """Copyable HTML that embeds this demo: its Space (web component and iframe) and a self-hosted hub route."""
    space_id = space_id or f"paper-demo-hub/{demo.id}"
    space_url = "https://" + space_id.replace("/", "-").replace("_", "-").lower() + ".hf.space"
    route = f"{hub_url.rstrip('/')}/{demo.id}"
    return {
        "space_component": f'<script type="module" src="{GRADIO_JS_URL}"></script>\n'
                           f'<gradio-app space="{space_id}"></gradio-app>',
        "space_iframe": f'<iframe src="{space_url}" style="border:0" width="100%" height="900"></iframe>',
        "hub_component": f'<script type="module" src="{GRADIO_JS_URL}"></script>\n'
                         f'<gradio-app src="{route}"></gradio-app>',
        "hub_iframe": f'<iframe src="{route}" style="border:0" width="100%" height="900"></iframe>',
    }


def embed_section(demo: Demo) -> None:
    """The "Embed" accordion with copyable snippets."""
    snippets = embed_snippets(demo)
    with gr.Accordion("Embed this demo", open=False):
        gr.Markdown("Paste one of these into your paper's project page.")
        gr.Code(snippets["space_component"], language="html", label="Hugging Face Space (web component)")
        gr.Code(snippets["space_iframe"], language="html", label="Hugging Face Space (iframe)")
        gr.Code(snippets["hub_component"], language="html", label="Self-hosted hub route (web component)")
        gr.Code(snippets["hub_iframe"], language="html", label="Self-hosted hub route (iframe)")


def notice(text: str, kind: str = "info") -> str:
    """A small HTML banner (for weight-state or "coming soon" messages)."""
    return f'<div class="demohub-notice demohub-{kind}">{html.escape(text)}</div>'


def theme() -> gr.themes.Base:
    """A theme with system fonts only: the default asks Google Fonts, which fails offline."""
    system = ["ui-sans-serif", "system-ui", "-apple-system", "Segoe UI", "Roboto", "sans-serif"]
    mono = ["ui-monospace", "SFMono-Regular", "Menlo", "Consolas", "monospace"]
    return gr.themes.Soft(font=system, font_mono=mono)
