"""One declaration per API function: a demo's ``apps/<id>/api.py`` lists its ``ENDPOINTS`` (``Endpoint``), and the
rest follows from them: the Gradio named endpoint with its validator and its MCP tool's description
(``apps.ui.serve_endpoints``), the API reference in docs/api.md (``reference``), and the tests that list endpoints,
their honest calls and their hostile inputs (``tests/shared/test_api_declarations.py``).

An ``Input`` carries the public name (the API's, MCP's and the docs'), its kind, its limits and a one-line description;
the declared limits are checked before the demo's own check (``Endpoint.check``). A demo's check may name a pipeline
argument (``molecule``) where the API says ``smiles``: ``Input.argument`` declares that, and the error is reported under
the public name. UI-free and light: no gradio, no torch.
"""

from __future__ import annotations

import importlib
import inspect
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shared.errors import UserInputError
from shared.validation import check_choices, check_number, json_problem, kind_of

if TYPE_CHECKING:
    from shared.context import DemoContext

REQUIRED = inspect.Parameter.empty
# What an input holds, as JSON: text, a number (``integer``: whole), true or false, one of ``choices``, a weight set's
# name (its default chosen at run time from ``preference``), one uploaded file or a list of them, a list of objects.
# ``choices``: some of ``choices``, as a list (a text of comma-separated choices is read as that list).
KINDS = ("text", "integer", "number", "boolean", "choice", "choices", "weights", "file", "files", "records")
MEDIA = ("", "audio")  # what a file input holds, where a page can do more with it than with any file
WORK = ("model", "bounded", "light")  # a model's queue (and GPU slot), the bounded workers, or neither


@dataclass(frozen=True)
class Input:
    name: str  # the public name
    kind: str
    description: str  # one line: what it is and how to write it; limits and the default are added from the fields
    default: Any = REQUIRED
    minimum: float | None = None  # integer, number
    maximum: float | None = None
    max_length: int | None = None  # text (choices given as text): characters
    choices: tuple[str, ...] = ()  # choice
    preference: tuple[str, ...] = ()  # weights: the default is the first of these that is on the server
    argument: str = ""  # the demo's check's name for this input, where it differs ("molecule" for "smiles")
    example: Any = None  # an honest value: the docs' and the generated tests'
    media: str = ""  # file: what it holds ("audio": a page records it too and draws its waveform), "" for any file
    # For a page, where the API's words would not do (a page never shows ``description``'s API terms: null, "",
    # data URI): its label and help line; what a page shows for each choice; an optional number's on/off switch
    # (off sends null); a text box of several lines for code or a molecule file.
    label: str = ""  # default: the name in words ("window" -> "Window")
    help: str = ""  # default: the description
    choice_labels: tuple[str, ...] = ()  # choice, choices: one per choice ("Key (GS)"); default: the choices
    switch: str = ""  # an optional number: "Show a timeline"
    multiline: bool = False  # text

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"input {self.name!r}: kind must be one of {KINDS}, not {self.kind!r}")
        if self.kind in ("integer", "number") and self.minimum is None:
            raise ValueError(f"input {self.name!r}: a number input declares its minimum")
        if self.media not in MEDIA or (self.media and self.kind != "file"):
            raise ValueError(f"input {self.name!r}: media is one of {MEDIA[1:]}, for a file input")
        if self.choice_labels and len(self.choice_labels) != len(self.choices):
            raise ValueError(f"input {self.name!r}: one choice label per choice")
        if self.switch and not (self.kind in ("integer", "number") and self.default is None):
            raise ValueError(f"input {self.name!r}: a switch is for an optional number (default None)")
        if self.multiline and self.kind != "text":
            raise ValueError(f"input {self.name!r}: multiline is for a text input")

    @property
    def page_label(self) -> str:
        """What a page calls it: ``label``, else the name in words."""
        return self.label or self.name.replace("_", " ").capitalize()

    @property
    def page_help(self) -> str:
        """A page's help line: ``help``, else the description, as a sentence."""
        text = self.help or self.description
        return text[:1].upper() + text[1:]

    @property
    def page_choices(self) -> list[tuple[str, str]]:
        """(what a page shows, the value) for each choice."""
        return list(zip(self.choice_labels or self.choices, self.choices, strict=True))

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def limits_text(self) -> str:
        """The declared limits in words ("1 to 50", "at most 2,000 characters", "one of: a, b"), "" if none."""
        if self.kind in ("integer", "number"):
            low = f"{self.minimum:,}" if self.kind == "integer" else f"{self.minimum:g}"
            if self.maximum is None:
                return f"at least {low}"
            high = f"{self.maximum:,}" if self.kind == "integer" else f"{self.maximum:g}"
            return f"{'a whole number ' if self.kind == 'integer' else ''}from {low} to {high}"
        if self.kind == "text" and self.max_length is not None:
            return f"at most {self.max_length:,} characters"
        if self.kind == "choice":
            return "one of " + ", ".join(f'"{c}"' for c in self.choices)
        if self.kind == "choices":
            return "a list of some of " + ", ".join(f'"{c}"' for c in self.choices)
        return ""

    def from_text(self, text: str) -> Any:
        """A form's text field as the value an API call sends: records parsed from JSON, an optional number's box
        read as a number or, empty, as null; anything else as it is (the declared check then says what is wrong)."""
        if self.kind == "records":
            try:
                return json.loads(text)
            except json.JSONDecodeError as error:
                raise UserInputError(json_problem(error, self.name), argument=self.name) from None
        if self.kind in ("integer", "number"):
            cleaned = text.strip().replace(",", "")
            if not cleaned:
                return None
            try:
                number = float(cleaned)
            except ValueError:
                return text
            return int(number) if self.kind == "integer" and number.is_integer() else number
        return text

    def as_text(self, value: Any) -> str:
        """Records as a form's JSON box shows them, one a line (what ``from_text`` reads back)."""
        return "[\n" + ",\n".join(f"  {json.dumps(record)}" for record in value or ()) + "\n]"

    def check(self, value: Any) -> None:
        """The declared kind and limits of ``value``; a ``UserInputError`` naming this input otherwise. What the
        declaration cannot say (a SMILES that parses, a layout's boxes) is the demo's own check's."""
        if value is None and (self.default is None or self.kind in ("file", "files")):
            return  # absent where absence has a meaning; a missing file is the demo's check's sentence
        if self.kind in ("integer", "number"):
            check_number(value, self.name, self.minimum, self.maximum, whole=self.kind == "integer",
                         argument=self.name)
        elif self.kind in ("text", "weights", "choice"):
            if not isinstance(value, str):
                raise UserInputError(f"{self.name} must be text, not {kind_of(value)}.", argument=self.name)
            if self.max_length is not None and len(value) > self.max_length:
                raise UserInputError(f"{self.name} is {len(value):,} characters long; the limit is "
                                     f"{self.max_length:,} characters.", argument=self.name)
            if self.kind == "choice" and value not in self.choices:
                raise UserInputError(f"{self.name} must be {self.limits_text()}; got {value!r:.40}.",
                                     argument=self.name)
        elif self.kind == "choices":
            if isinstance(value, str) and self.max_length is not None and len(value) > self.max_length:
                raise UserInputError(f"{self.name} is {len(value):,} characters long; the limit is "
                                     f"{self.max_length:,} characters.", argument=self.name)
            if not (isinstance(value, str) and not value.strip()):  # blank text: the demo's check reads it
                check_choices(value, self.choices, self.name, argument=self.name)
        elif self.kind == "boolean":
            if not isinstance(value, bool):
                raise UserInputError(f"{self.name} must be true or false, not {kind_of(value)}.", argument=self.name)
        elif self.kind == "records":
            if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
                raise UserInputError(f"{self.name} must be a list of objects, not {kind_of(value)}.",
                                     argument=self.name)


@dataclass(frozen=True)
class Example:
    """A whole call a visitor can start from: a generated page offers each as a click that fills its form."""

    label: str  # what the visitor reads, a few words
    arguments: dict[str, Any]  # public input name -> value (a file: its path in the repository); the rest: defaults


@dataclass(frozen=True)
class Endpoint:
    """One API function: ``/<name>`` for gradio_client and @gradio/client, the MCP tool ``<name>``."""

    name: str
    summary: str  # the first line of its description: what it does and what it needs
    inputs: tuple[Input, ...]
    returns: str  # the answer's form, one paragraph
    run: str  # "apps.<id>.api:<function>": function(ctx, **inputs) -> JSON (ctx: None for the hub's own)
    check: str = ""  # "apps.<id>.api:<function>": function(ctx, **inputs), torch-free, after the declared limits
    work: str = "model"
    view: str = ""  # "apps.<id>.api:<function>": function(answer) -> HTML (apps/views.py), a generated page's answer
    examples: tuple[Example, ...] = ()  # offered on a generated page; none: one call made of the inputs' examples

    def __post_init__(self):
        if self.work not in WORK:
            raise ValueError(f"endpoint {self.name!r}: work must be one of {WORK}, not {self.work!r}")
        names = [i.name for i in self.inputs]
        if len(set(names)) != len(names):
            raise ValueError(f"endpoint {self.name!r}: two inputs named alike in {names}")
        seen_default = False
        for i in self.inputs:
            if i.required and seen_default:
                raise ValueError(f"endpoint {self.name!r}: required input {i.name!r} after one with a default")
            seen_default = seen_default or not i.required
        for example in self.examples:
            unknown = set(example.arguments) - set(names)
            if unknown:
                raise ValueError(f"endpoint {self.name!r}: example {example.label!r} sets no input named {unknown}")

    def in_page_words(self, error: UserInputError) -> UserInputError:
        """The sentence a page's form shows beside a field, naming it as the page does: a declared limit's sentence
        starts with the API's name for the input ("k must be ..."), the page calls it by its label ("Guesses must
        be ..."). Both generated forms (Gradio's and Streamlit's) show it so."""
        named = next((i for i in self.inputs if i.name == error.argument), None)
        message = str(error)
        if named is None or not message.startswith(f"{named.name} ") or named.page_label == named.name:
            return error
        return UserInputError(named.page_label + message[len(named.name):], argument=error.argument)

    def example_calls(self) -> tuple[Example, ...]:
        """The declared examples, each with every input that is not a weights selector (missing ones at their
        declared defaults); none declared: one made of the inputs' examples, where every required input has one."""
        fields = [i for i in self.inputs if i.kind != "weights"]
        examples = self.examples
        if not examples and all(i.example is not None for i in fields if i.required):
            examples = (Example("Example", {i.name: i.example for i in fields if i.example is not None}),)
        return tuple(Example(e.label, {i.name: e.arguments.get(i.name, None if i.required else i.default)
                                       for i in fields}) for e in examples)

    def defaults(self, ctx: DemoContext | None = None) -> dict[str, Any]:
        """Each optional input's default; a weights input's the server's choice (``ctx.default_weights`` from its
        ``preference``; with no ``ctx``, its declared default)."""
        out = {}
        for i in self.inputs:
            if i.kind == "weights" and not i.required and ctx is not None:
                out[i.name] = ctx.default_weights(i.preference)
            elif not i.required:
                out[i.name] = i.default
        return out

    def arguments(self, values: Sequence[Any], defaults: dict[str, Any] | None = None) -> dict[str, Any]:
        """Positional ``values`` (as Gradio passes them) by public name, missing ones at their defaults."""
        defaults = self.defaults() if defaults is None else defaults
        out = {}
        for index, i in enumerate(self.inputs):
            out[i.name] = values[index] if index < len(values) else defaults.get(i.name)
        return out

    def check_call(self, ctx: DemoContext | None, arguments: dict[str, Any]) -> Any:
        """Each input's declared limits (a weights input: one of the demo's weight sets), then the demo's check
        (what it returns: its ``<Name>Inputs``). Any ``UserInputError`` names the public input: a check's own name
        for it (``Input.argument``) is translated here, once, for every demo."""
        for i in self.inputs:
            value = arguments.get(i.name)
            i.check(value)
            if i.kind == "weights" and value is not None:
                try:
                    ctx.demo.weight_set(value)
                except UserInputError as error:
                    error.argument = i.name
                    raise
        if not self.check:
            return None
        try:
            return attribute(self.check)(ctx, **arguments)
        except UserInputError as error:
            public = {i.argument: i.name for i in self.inputs if i.argument}
            if error.argument in public:
                error.argument = public[error.argument]
            raise

    def runner(self) -> Callable[..., dict]:
        return attribute(self.run)

    def call(self, ctx: DemoContext | None, arguments: dict[str, Any]) -> Any:
        """``check_call``, then the function (looked up per call, as its module holds it now): what every front end
        runs for this endpoint."""
        self.check_call(ctx, arguments)
        return self.runner()(ctx, **arguments)

    def docstring(self, defaults: dict[str, Any] | None = None, weight_names: Sequence[str] = ()) -> str:
        """The description Gradio shows on the API page and gives the MCP tool: the summary, an ``Args:`` entry per
        input on one line (description, limits, default) and ``Returns:`` on one line."""
        defaults = self.defaults() if defaults is None else defaults
        lines = [self.summary, "", "Args:"]
        for i in self.inputs:
            words = [i.description.rstrip(".")]
            if i.kind == "weights" and weight_names:
                words.append("one of " + ", ".join(weight_names))
            if i.limits_text():
                words.append(i.limits_text())
            if not i.required:
                words.append(f"default {_shown(defaults.get(i.name, i.default))}")
            lines.append(f"    {i.name}: " + "; ".join(words) + ".")
        lines += ["Returns:", f"    {self.returns}"]
        return "\n".join(lines)


def _shown(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list | tuple):
        return json.dumps(list(value))
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def attribute(path: str) -> Any:
    """``"package.module:name"`` -> that object, imported when first asked for."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def reference(endpoints_by_demo: dict[str, Sequence[Endpoint]]) -> str:
    """docs/api.md's endpoint reference, generated from the declarations (a test keeps the page equal to it)."""
    out = []
    for demo_id, endpoints in endpoints_by_demo.items():
        for endpoint in endpoints:
            out += [f"#### `/{endpoint.name}` ({demo_id})", "", endpoint.summary, "",
                    "| input | kind | required | limits | description |", "|---|---|---|---|---|"]
            for i in endpoint.inputs:
                default = "yes" if i.required else "no (default: all)" if i.kind == "choices" and \
                    tuple(i.default) == i.choices else f"no (default {_shown(i.default)})"
                if i.kind == "weights" and not i.required:
                    default = "no (default: the server's first of " + ", ".join(i.preference) + ")"
                out.append(f"| `{i.name}` | {i.kind} | {default} | {i.limits_text() or '—'} | "
                           f"{i.description.replace('|', '/')} |")
            out += ["", f"Returns: {endpoint.returns}", ""]
    return "\n".join(out).rstrip() + "\n"
