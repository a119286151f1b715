"""The Tag2Text Gradio page: one image (tags with scores, caption, your tags) or a batch (table + CSV/JSON)."""

from __future__ import annotations

import csv
import html
import json
from pathlib import Path

import gradio as gr

from apps.tag2text.images import IMAGE_SUFFIXES, scan_images
from apps.ui import (
    download_progress,
    embed_section,
    model_call,
    model_events,
    output_folder,
    paper_card,
    user_errors,
    weights_dropdown,
    weights_notice,
)
from shared.context import DemoContext
from shared.errors import UserInputError

EXAMPLES_DIR = Path(__file__).resolve().parent / "examples"
DEFAULT_THRESHOLD = 0.68
# Inline styles: a page rendered inside the hub cannot bring its own CSS (Gradio 6 takes css at launch()).
CHIPS_STYLE = "display:flex;flex-wrap:wrap;gap:6px"
CHIP_STYLE = "border-radius:999px;padding:2px 10px;background:var(--color-accent-soft,#e0e7ff)"


def example_images() -> list[str]:
    return sorted(str(p) for p in EXAMPLES_DIR.glob("*.png"))


def tag_chips(tags) -> str:
    """Tags as HTML chips with their scores (names escaped: they come from the checkpoint's tag list)."""
    if not tags:
        return f'<div style="{CHIPS_STYLE}"><i>No tag passed the threshold; try a lower one.</i></div>'
    chips = "".join(f'<span class="t2t-chip" style="{CHIP_STYLE}">{html.escape(t.name)} <b>{t.score:.2f}</b></span>'
                    for t in tags)
    return f'<div class="t2t-chips" style="{CHIPS_STYLE}">{chips}</div>'


class Tag2TextPage:
    """The page's actions, kept apart from the widgets so tests and the API call the same code."""

    def __init__(self, ctx: DemoContext):
        self.ctx = ctx

    def tag_image(self, image: str | None, threshold: float = DEFAULT_THRESHOLD, user_tags: str = "",
                  weights_name: str | None = None, on_step=None, on_download=None):
        if not image:
            raise UserInputError("Upload an image first (or pick one of the examples).")
        with self.ctx.compute(weights_name, on_download) as pipe:
            result = pipe(image, threshold=threshold, user_tags=user_tags, on_step=on_step)[0]
        scores = {f"{t.name} (#{t.index})": round(t.score, 4) for t in result.tags}
        return tag_chips(result.tags), result.caption, ", ".join(result.user_tags), scores

    def tag_batch(self, files: list[str] | None, threshold: float = DEFAULT_THRESHOLD, user_tags: str = "",
                  weights_name: str | None = None, on_step=None, on_download=None):
        batch = scan_images([str(f) for f in files or []])  # headers only: every limit before any pixel is decoded
        self.ctx.pipeline(weights_name, on_download)  # weights here (or a clear message) before any pixel is decoded
        images = batch.decode()
        with self.ctx.compute(weights_name) as pipe:
            results = pipe([im.image for im in images], threshold=threshold, user_tags=user_tags, on_step=on_step)
        pairs = list(zip(images, results, strict=True))
        table = [[im.name, ", ".join(r.tag_names), r.caption] for im, r in pairs]
        out = output_folder("tag2text")
        with open(out / "tag2text.csv", "w", newline="", encoding="utf-8") as fh:
            csv.writer(fh).writerows([["file", "tags", "caption"], *table])
        rows = [{"file": im.name, **r.to_dict()} for im, r in pairs]
        (out / "tag2text.json").write_text(json.dumps({"images": rows}, indent=1, ensure_ascii=False), encoding="utf-8")
        note = f"Skipped: {'; '.join(batch.skipped)}" if batch.skipped else f"{len(rows)} image(s) processed."
        return table, [str(out / "tag2text.csv"), str(out / "tag2text.json")], note

    def download(self, weights_name: str | None, on_download=None):
        """The Download button (rendered only where visitors may download; ``ctx.download`` refuses otherwise)."""
        name = weights_name or self.ctx.default_weights()
        self.ctx.download(name, on_download)
        return weights_notice(self.ctx, name), gr.update(choices=self.ctx.weight_choices(), value=name)


def _progress_callback(progress: gr.Progress):
    return lambda step, total: progress((step, total), desc="Beam search")


def build(ctx: DemoContext) -> gr.Blocks:
    page = Tag2TextPage(ctx)
    ws_default = ctx.default_weights()
    with gr.Blocks(title=ctx.demo.title) as demo:
        paper_card(ctx.demo)
        with gr.Row():
            chooser = weights_dropdown(ctx)
            if ctx.downloads:
                download_btn = gr.Button(f"Download weights ({ctx.demo.weight_set(ws_default).size_text})",
                                         variant="secondary", scale=0)
        status = gr.HTML(weights_notice(ctx, ws_default))
        selected = gr.State(ws_default)
        chooser.change(lambda name: (name, weights_notice(ctx, name)), chooser, [selected, status],
                       api_visibility="private")
        if ctx.downloads:
            @user_errors
            def download(name, progress=gr.Progress()):
                return page.download(name, download_progress(progress))

            download_btn.click(download, selected, [status, chooser], api_visibility="private")
        threshold = gr.Slider(0.0, 1.0, value=DEFAULT_THRESHOLD, step=0.01, label="Tag threshold",
                              info="A tag is shown when its score is above this (official default 0.68; "
                                   "person/man/woman keep 0.7).")
        user_tags = gr.Textbox(label="Your tags (optional)", placeholder="e.g. dog, beach, frisbee",
                               info="Comma-separated; when given, the caption follows these instead of the "
                                    "recognised tags.")
        with gr.Tab("One image"):
            with gr.Row():
                with gr.Column():
                    image = gr.Image(type="filepath", label="Image", sources=["upload", "clipboard"])
                    run = gr.Button("Tag and caption", variant="primary")
                    gr.Examples(example_images(), inputs=image)
                with gr.Column():
                    chips = gr.HTML(label="Recognised tags")
                    caption = gr.Textbox(label="Caption", interactive=False)
                    echoed = gr.Textbox(label="Your tags used for the caption", interactive=False)
                    with gr.Accordion("Tag scores", open=False):
                        scores = gr.JSON(label="Scores of the shown tags")

            @model_call
            def tag_image(image, threshold, user_tags, weights_name, progress=gr.Progress()):
                """Tag one image and caption it (guided by your tags if you give any).

                Args:
                    image: the image file.
                    threshold: tags scoring above this are shown (0-1; official default 0.68).
                    user_tags: optional comma-separated tags that steer the caption.
                """
                if isinstance(image, dict):  # raw upload (preprocess=False): our reader checks the file, not PIL's
                    image = image.get("path")
                return page.tag_image(image, threshold, user_tags, weights_name, _progress_callback(progress),
                                      download_progress(progress))

            # preprocess=False: Gradio's own image preprocessing would open the file with PIL first and turn a
            # truncated file or a decompression bomb into an unreadable error; our reader gives a clear one.
            run.click(tag_image, [image, threshold, user_tags, selected], [chips, caption, echoed, scores],
                      api_name="tag_image", preprocess=False, **model_events(ctx))
        with gr.Tab("Batch"):
            files = gr.File(label="Images or a zip of images", file_count="multiple",
                            file_types=sorted(IMAGE_SUFFIXES) + [".zip"])
            run_batch = gr.Button("Tag and caption all", variant="primary")
            batch_note = gr.Markdown()
            table = gr.Dataframe(headers=["file", "tags", "caption"], label="Results", wrap=True, interactive=False)
            downloads = gr.File(label="Download CSV / JSON", file_count="multiple", interactive=False)

            @model_call
            def tag_batch(files, threshold, user_tags, weights_name, progress=gr.Progress()):
                """Tag and caption several images (or a zip); returns a table and CSV/JSON files."""
                return page.tag_batch(files, threshold, user_tags, weights_name, _progress_callback(progress),
                                      download_progress(progress))

            run_batch.click(tag_batch, [files, threshold, user_tags, selected], [table, downloads, batch_note],
                            api_name="tag_batch", **model_events(ctx))
        embed_section(ctx.demo)
    return demo


if __name__ == "__main__":
    from apps.tag2text import DEMO

    build(DemoContext(DEMO)).launch()
