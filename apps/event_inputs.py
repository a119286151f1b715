"""The form of every event's inputs, checked before Gradio reads them, on every route (page events, named endpoints,
``/run/*``, MCP): one sentence naming the input instead of a library's exception.

Each input component takes one JSON form: a text box text, a number box a finite number, a checkbox true or false, an
example list the index of one of its examples, a file input a file reference, and so on. Anything the form check lets
through that a component still cannot read, and any exception a handler raises, reaches the visitor as a sentence
with an error id (``install``); no event can show a library's words.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any

from apps import gradio_internals
from shared.errors import report

MAX_DEPTH = 32  # lists and objects inside one another; no input of ours nests deeper than 4
MAX_ITEMS = 100_000  # values in one event's inputs, all nested ones counted
MAX_NUMBER = 1e15  # no number box of ours takes more; beyond it floats lose whole numbers

UNREADABLE = ("{label} could not be read (error id {error_id}); check it against the API page (“Use via API” at the "
              "foot of the page).")
TOO_FEW = "This event takes {wanted} values; the request sent {got}."
TOO_DEEP = "The inputs nest lists or objects more than {depth} levels deep; send flat values."
TOO_MANY = "The inputs hold over {items:,} values; send fewer."
NOT_UPLOADED = ("A file input names a file that was not uploaded to this hub; upload it first (the page does; "
                "gradio_client's handle_file does) and send the reference the upload returns.")
NOT_UNICODE = "The inputs hold text that is not valid Unicode (a lone surrogate); send ordinary text."

_TEXT = {"Textbox", "Code", "Markdown", "HTML", "Text"}
_NUMBER = {"Number", "Slider"}
_CHOICE = {"Dropdown", "Radio"}
_FILES = {"File", "Image", "Gallery", "Model3D", "Audio", "Video", "UploadButton", "DownloadButton", "ImageEditor"}
_TABLE = {"Dataframe"}
_SCALAR = (str, int, float)


def label_of(component: Any, index: int) -> str:
    label = getattr(component, "label", None)
    return str(label) if label else f"input {index + 1}"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def value_problem(component: Any, value: Any, label: str) -> str | None:
    """What is wrong with ``value`` as an input of ``component`` (a sentence), or None. Components not listed here
    (gr.State, gr.JSON, the typed inputs of ``gr.api`` endpoints, whose own checks read them) take any JSON."""
    kind = type(component).__name__
    if kind in _TEXT:
        if value is not None and not isinstance(value, str):
            return f"“{label}” must be text."
    elif kind in _NUMBER:
        if value is None and kind == "Number":
            return None
        if not _is_number(value):
            return f"“{label}” must be a number."
        if (isinstance(value, float) and not math.isfinite(value)) or abs(value) > MAX_NUMBER:  # ints: exact
            return f"“{label}” must be a number between {-MAX_NUMBER:,.0f} and {MAX_NUMBER:,.0f}."
    elif kind == "Checkbox":
        if not isinstance(value, bool):
            return f"“{label}” must be true or false."
    elif kind in _CHOICE or kind == "CheckboxGroup":
        if value is None:
            return None
        many = kind == "CheckboxGroup" or getattr(component, "multiselect", False)
        if many and not isinstance(value, list):
            return f"“{label}” must be a list of its choices."
        chosen = value if many else [value]
        custom = getattr(component, "allow_custom_value", False)
        offered = [c[1] if isinstance(c, (list, tuple)) else c for c in getattr(component, "choices", None) or ()]
        if not all(isinstance(v, _SCALAR) and not isinstance(v, bool) and (custom or v in offered) for v in chosen):
            if custom:
                return f"“{label}” must be text."
            names = ", ".join(map(str, offered[:8])) + (", …" if len(offered) > 8 else "")
            return f"“{label}” must be one of its choices ({names})." if offered else f"“{label}” has no choices yet."
    elif kind == "Dataset":
        count = len(getattr(component, "samples", None) or ())
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < count):
            return f"“{label}” has {count} examples; pick one by its number, 0 to {count - 1}."
    elif kind in _FILES and value is not None:
        many = kind == "Gallery" or getattr(component, "file_count", "single") in ("multiple", "directory")
        if many != isinstance(value, list) or not all(map(_file_reference, value if many else [value])):
            what = "a list of uploaded files" if many else "an uploaded file"
            return f"“{label}” must be {what}: upload first, then send the file reference the upload returns."
    elif kind in _TABLE:
        if value is not None and not isinstance(value, (dict, list)):
            return f"“{label}” must be a table."
    return None


def _file_reference(value: Any) -> bool:
    """A file reference (Gradio's FileData: a "path" or "url" string), or a gallery item holding one."""
    if isinstance(value, dict) and isinstance(value.get("image", value.get("video")), dict):
        value = value.get("image", value.get("video"))
    elif isinstance(value, list) and len(value) == 2:  # a gallery item as [file, caption]
        value = value[0]
    return isinstance(value, dict) and isinstance(value.get("path") or value.get("url"), str)


def size_problem(values: list) -> str | None:
    """Too deep or too many values, or text that is not Unicode (a lone surrogate, which JSON can carry but no
    response can), found without recursion (a deeply nested body must not exhaust the stack)."""
    stack, items = [(v, 1) for v in values], 0
    while stack:
        value, depth = stack.pop()
        items += 1
        if items > MAX_ITEMS:
            return TOO_MANY.format(items=MAX_ITEMS)
        if isinstance(value, str) and not _is_unicode(value):
            return NOT_UNICODE
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        for child in children:
            if depth + 1 > MAX_DEPTH:
                return TOO_DEEP.format(depth=MAX_DEPTH)
            stack.append((child, depth + 1))
    return None


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def with_defaults(block_fn: Any, inputs: Any) -> Any:
    """An event's inputs with the trailing ones a raw request left out filled with the defaults of its function's
    signature (a named endpoint's declared defaults; its validator carries the same signature), so an endpoint that
    gains an optional input keeps answering callers that do not send it (gradio_client and MCP fill them in already).
    A function whose parameters are not one per input (a page event's), or that has no default for one left out,
    keeps the sentence that says how many values the event takes."""
    if not isinstance(inputs, list) or len(inputs) >= len(block_fn.inputs) or block_fn.fn is None:
        return inputs
    try:
        parameters = list(inspect.signature(block_fn.fn).parameters.values())
    except (TypeError, ValueError):
        return inputs
    missing = parameters[len(inputs):]
    if len(parameters) != len(block_fn.inputs) or any(p.default is inspect.Parameter.empty for p in missing):
        return inputs
    return [*inputs, *(p.default for p in missing)]


def inputs_problem(block_fn: Any, inputs: list, state: Any = None) -> str | None:
    """The first thing wrong with an event's ``inputs`` (one value per input component), or None. A component this
    session changed (new choices, say) is read from the session's ``state``, as Gradio reads it."""
    components = [state[c._id] if state is not None and c._id in state else c for c in block_fn.inputs]
    if not isinstance(inputs, list):
        return TOO_FEW.format(wanted=len(components), got="no list")
    if len(inputs) < len(components):
        return TOO_FEW.format(wanted=len(components), got=len(inputs))
    problem = size_problem(inputs)
    if problem:
        return problem
    for index, (component, value) in enumerate(zip(components, inputs, strict=False)):
        if index in getattr(block_fn, "component_prop_inputs", ()) and isinstance(value, dict):
            value = value.get("value")
        problem = value_problem(component, value, label_of(component, index))
        if problem:
            return problem
    return None


def install(blocks: Any, sentences: Callable[[Callable], Callable], toasts: Callable[[Callable], Callable]) -> None:
    """Check every event's inputs before Gradio reads them, and make any failure of reading or handling a sentence.

    Gradio reads an event's inputs in ``Blocks.preprocess_data`` on every route (the validator's run included), so
    the check goes there: a bad form raises a ``gr.Error`` with the sentence (every route shows those as they are),
    and whatever else fails while reading becomes ``UNREADABLE`` with an error id. Every named endpoint's function
    gets ``sentences`` (``apps.ui.user_errors``), so a handler's exception is a sentence its caller reads; every page
    event's gets ``toasts`` (``apps.ui.page_errors``): the sentence as a toast, the page's components unchanged."""
    import gradio as gr
    from gradio.exceptions import InvalidPathError

    def checked(read):
        async def checked_preprocess_data(block_fn, inputs, state, explicit_call=False):
            inputs = with_defaults(block_fn, inputs)
            problem = inputs_problem(block_fn, inputs, state)
            if problem:
                raise gr.Error(problem, print_exception=False)
            try:
                return await read(block_fn, inputs, state, explicit_call)
            except gr.Error:
                raise
            except InvalidPathError:
                raise gr.Error(NOT_UPLOADED, print_exception=False) from None
            except Exception as failure:
                sentence = UNREADABLE.format(label=_failed_input(block_fn, failure), error_id=report(failure))
                raise gr.Error(sentence, print_exception=False) from failure

        return checked_preprocess_data

    gradio_internals.wrap_event_reading(blocks, checked, public=sentences, private=toasts)


def _failed_input(block_fn: Any, failure: BaseException) -> str:
    """The input Gradio names in a processing error (“Its label”), else "The inputs"."""
    text = str(failure)
    for index, component in enumerate(block_fn.inputs):
        label = label_of(component, index)
        if getattr(component, "label", None) and label in text:
            return f"“{label}”"
    return "The inputs"
