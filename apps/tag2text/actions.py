"""What the Tag2Text pages do, without any UI library: checks, runs, and what a result looks like on a page.

The Gradio page (page.py) and the Streamlit page (streamlit_page.py) both call these; so do the tests. Input checks
are the pipeline's own ``Tag2TextPipeline.check_inputs`` (headers only, no weights), run before a request is queued.
Importing this module imports neither a UI library nor torch (the pipeline module is imported on first use).
"""

from __future__ import annotations

import base64
import csv
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from apps import views
from apps.tag2text import DEMO, checks
from apps.tag2text.checks import Tag2TextInputs
from apps.tag2text.config import OFFICIAL_THRESHOLD
from apps.tag2text.images import IMAGE_SUFFIXES
from shared.context import DemoContext
from shared.errors import UserInputError, page_inputs
from shared.pipeline import Callback
from shared.uploads import each

if TYPE_CHECKING:  # the pipeline module imports torch: pages import it only when a check or a run needs it
    from apps.tag2text.pipeline import Tag, Tag2TextImageResult, Tag2TextOutput

EXAMPLES_DIR = Path(__file__).resolve().parent / "examples"
DEFAULT_THRESHOLD = OFFICIAL_THRESHOLD
UPLOAD_TYPES = sorted(IMAGE_SUFFIXES)  # what the upload widgets accept (plus ".zip" for a batch)
WORKS_WITHOUT_WEIGHTS = ""  # nothing on this page runs without the weights
TABLE_HEADERS = ["file", "tags", "caption"]
# Measured (BENCHMARKS.md; tests/tag2text/test_bf16.py checks these figures against it): fp32 against the official
# code ("Tag2Text: official code vs ours", whole call at batch 1 and 8) and bf16 against fp32 ("Reduced precision": the
# full-size model with random weights, 2 threads of a Xeon with AMX, change rates over 64 noise inputs).
SPEED_NOTE = ("In fp32 this code tags and captions one image 3.1× faster than the official implementation on the same "
              "weights, with the same tags and caption, and a batch of 8 3.2× faster, with the same tags (upstream "
              "captions a whole batch from the first image's tags, so only that caption was compared). bf16 on a CPU "
              "with native bf16 (AVX512-BF16 or AMX; `demohub doctor` says which): one image 1.4× faster and a batch "
              "of 8 2.6× faster than fp32 on our test CPU, but tags changed on 11% and captions on 89% of test images "
              "(random weights, whose near-ties make these counts pessimistic). fp32 stays the CPU default; the "
              "operator opts in with `DEMOHUB_DTYPE=bf16`.")
# Inline styles: a page rendered inside the hub cannot bring its own CSS (Gradio 6 takes css at launch()).
CHIPS_STYLE = "display:flex;flex-wrap:wrap;gap:6px"
CHIP_STYLE = "border-radius:999px;padding:2px 10px;background:var(--color-accent-soft,#e0e7ff)"


def example_images() -> list[str]:
    return sorted(str(p) for p in EXAMPLES_DIR.glob("*.png"))


def upload_path(value: Any) -> Any:
    """A file input's value as the pipeline takes it: Gradio's FileData (a dict or an object with ``path``) or a path
    string -> a ``Path`` (what marks it as a file: under Ray it then travels to the replica as bytes); bytes, PIL
    images and arrays unchanged; None stays None."""
    if isinstance(value, dict):
        value = value.get("path")
    value = getattr(value, "path", value)
    return Path(value) if isinstance(value, str) else value


def upload_paths(values: Any) -> list[Any]:
    """A multi-file input's value -> a list for the pipeline."""
    return [upload_path(v) for v in each(values)]


def precision_note() -> str:
    """The settings' line on precision (torch is not imported: the hub starts without it)."""
    return views.precision_note(DEMO.cpu_dtype, DEMO.gpu_dtype, SPEED_NOTE)


# -- checks (Gradio validators, before queueing; the pipeline runs the same ones again) --------------------------------


@page_inputs(images="image")
def check_image_tab(image: Any, threshold: Any, user_tags: Any, weights_name: str | None) -> Tag2TextInputs:
    """The "One image" tab's inputs (the weights choice is the page's server-side state: nothing to check)."""
    return checks.check_inputs(upload_path(image), threshold, user_tags)


@page_inputs(images="files")
def check_batch_tab(files: Any, threshold: Any, user_tags: Any, weights_name: str | None) -> Tag2TextInputs:
    """The "Batch" tab's inputs (as ``check_image_tab``)."""
    return checks.check_inputs(upload_paths(files), threshold, user_tags)


# -- uploads (screened as they arrive, by the same check, so a file that is not an image never sits in an input) -------


def upload_problem(upload: Any) -> str | None:
    """The sentence the pipeline's own check (``checks.check_inputs``) gives for one uploaded file (an image or a zip),
    naming it by its file name; None when it passes, or when nothing was uploaded."""
    if upload is None:
        return None
    try:
        checks.check_inputs(upload_path(upload))
    except UserInputError as error:
        return str(error)
    return None


def screen_uploads(files: Any) -> tuple[list[Any], list[str]]:
    """A batch upload, file by file through ``upload_problem``: (the files that pass, in order; a sentence per file
    that does not). Limits on the batch as a whole (how many images, all their pixels) are the Run button's check."""
    kept, problems = [], []
    for upload in each(files):
        problem = upload_problem(upload)
        if problem is None:
            kept.append(upload)
        else:
            problems.append(problem)
    return kept, problems


def left_out_note(problems: list[str], kept: int) -> str:
    """What the batch input says about the files ``screen_uploads`` took out ("" when none was)."""
    if not problems:
        return ""
    if not kept:
        return " ".join(problems)
    others = "the other file" if kept == 1 else f"the other {kept} files"
    return f"Left out of this batch ({others} will be tagged): {' '.join(problems)}"


# -- runs ------------------------------------------------------------------------------------------------------------


def tag_image(ctx: DemoContext, image: Any, threshold: Any = DEFAULT_THRESHOLD, user_tags: Any = "",
              weights_name: str | None = None, callback: Callback | None = None,
              on_download=None) -> Tag2TextOutput:
    """One image through the pool's pipeline (loading or downloading its weights first)."""
    with ctx.compute(weights_name, on_download) as pipe:
        return pipe(upload_path(image), threshold, user_tags, callback=callback)


def tag_batch(ctx: DemoContext, files: Any, threshold: Any = DEFAULT_THRESHOLD, user_tags: Any = "",
              weights_name: str | None = None, callback: Callback | None = None,
              on_download=None) -> Tag2TextOutput:
    """Uploaded images and/or zips: the weights are here (or a clear message) before any pixel is decoded."""
    with ctx.compute(weights_name, on_download) as pipe:
        return pipe(upload_paths(files), threshold, user_tags, callback=callback)


# -- what a page shows -----------------------------------------------------------------------------------------------


def tag_chips(tags: tuple[Tag, ...] | list[Tag]) -> str:
    """Tags as HTML chips with their scores (names escaped: they come from the checkpoint's tag list)."""
    if not tags:
        return f'<div style="{CHIPS_STYLE}"><i>No tag passed the threshold; try a lower one.</i></div>'
    chips = "".join(f'<span class="t2t-chip" style="{CHIP_STYLE}">{views.text(t.name)} <b>{t.score:.2f}</b></span>'
                    for t in tags)
    return f'<div class="t2t-chips" style="{CHIPS_STYLE}">{chips}</div>'


def tag_scores(result: Tag2TextImageResult) -> dict[str, float]:
    """"name (#index)" -> score rounded to 4 places, for the shown tags."""
    return {f"{t.name} (#{t.index})": round(t.score, 4) for t in result.tags}


def tag_rows(result: Tag2TextImageResult, digits: int = 3) -> list[dict[str, Any]]:
    """The shown tags as table rows: {"tag", "score"}."""
    return [{"tag": t.name, "score": round(t.score, digits)} for t in result.tags]


def image_view(output: Tag2TextOutput) -> tuple[str, str, str, dict[str, float]]:
    """One image's result as the page shows it: (tag chips HTML, caption, your tags echoed, tag scores)."""
    result = output.results[0]
    return tag_chips(result.tags), result.caption, ", ".join(result.user_tags), tag_scores(result)


def batch_table(output: Tag2TextOutput) -> list[list[str]]:
    """[file, tags, caption] per image, in input order."""
    return [[r.name, ", ".join(r.tag_names), r.caption] for r in output.results]


def batch_note(output: Tag2TextOutput) -> str:
    return f"Skipped: {'; '.join(output.skipped)}" if output.skipped else f"{len(output.results)} image(s) processed."


def write_exports(output: Tag2TextOutput, folder: Path) -> list[Path]:
    """``tag2text.csv`` (the table) and ``tag2text.json`` (``output.to_dict()``, what the API answers) in ``folder``."""
    csv_path, json_path = folder / "tag2text.csv", folder / "tag2text.json"
    with open(csv_path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([TABLE_HEADERS, *batch_table(output)])
    json_path.write_text(json.dumps(output.to_dict(), indent=1, ensure_ascii=False), encoding="utf-8")
    return [csv_path, json_path]


def preview() -> str:
    """The hub card's picture: the first example image, inline (a 2 KB PNG as a data URL: no route to serve it, so
    it shows on the Gradio and the Streamlit hub alike)."""
    data = base64.b64encode(Path(example_images()[0]).read_bytes()).decode()
    return f'<img src="data:image/png;base64,{data}" alt="an example image" style="height:100%;width:auto">'
