"""What the PraX page does, without a UI: example-list state, the game, model calls, and their display.

Shared by the Gradio page (apps/prax/page.py) and the Streamlit page (apps/prax/streamlit_page.py); imports neither
gradio nor streamlit, nor torch: ``check_*`` run ``apps/prax/checks.py`` (``PraxPipeline.check_inputs``, torch-free),
so a page builds and a first call is checked without torch. The page keeps its examples as JSON dicts
(``{"string", "label"}``) and its game as ``Game.to_dict()``.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING

from apps import views
from apps.prax import DEMO, checks
from apps.prax.game import Game
from shared.context import DemoContext
from shared.errors import UserInputError, WeightsUnavailable, page_inputs
from shared.pace import Pace, duration_text

if TYPE_CHECKING:
    from apps.prax.pipeline import PraxOutput, PraxSuggestion
    from shared.pipeline import Callback
    from shared.weights import Progress

LITERAL_PREFERENCE = ("listener-suffix-idx-300k", "tiny-literal")
PRAGMATIC_PREFERENCE = ("pragmatic-ft-listener", "tiny-pragmatic")
PAGE_SAMPLES = 100  # the official Space's setting; the pipeline's default is upstream's 500
SHOWN = 5  # guesses shown per listener
SEED = 0  # the page samples with a fixed seed: the same examples give the same guesses
ROLES = ("literal", "PraX")  # the two listeners, as the game names them
# bf16 against fp32 with the bundled (trained) listeners on 100 held-out specs: benchmarks/reduced_precision.py.
BF16_TRADE_OFF = ("bf16 on a CPU with native bf16 (`demohub doctor` says): 1.3× faster on our test CPU, but the "
                  "top guess changed on 9-10% of held-out specs against fp32 (top-1 accuracy 0.22 → 0.20). fp32 stays "
                  "the CPU default; the operator opts in with `DEMOHUB_DTYPE=bf16`.")
WORKS_WITHOUT = "The bundled tiny listeners (tiny-literal, tiny-pragmatic) work without any download."
NO_EXAMPLES = "No examples yet, so no guess: add a string that should (+) or should not (−) match."
START = "Add an example to see guesses."
PRESETS = {
    "digits then letters": [("12ab", "+"), ("07xyz", "+"), ("1ab", "-"), ("12", "-")],
    "capitalised word": [("Hello", "+"), ("World", "+"), ("hello", "-"), ("HELLO", "-")],
    "semicolon-separated codes": [("a1;b2", "+"), ("c3;d4;e5", "+"), ("a1,b2", "-"), ("a1", "+")],
}


def precision_note() -> str:
    """The settings' line on precision (torch is not imported: the hub starts without it)."""
    return views.precision_note(DEMO.cpu_dtype, DEMO.gpu_dtype, BF16_TRADE_OFF)


# ---------------------------------------------------------------- checks (run before a model event is queued)


def check_weights(name: str | None, argument: str = "weights") -> None:
    try:
        DEMO.weight_set(name)
    except UserInputError as error:
        raise UserInputError(str(error), argument=argument) from None


def check_synthesize(examples, weights, k) -> None:
    """The ``/synthesize`` endpoint's inputs."""
    check_weights(weights)
    checks.check_inputs(examples, k=k, num_samples=PAGE_SAMPLES)


def check_suggest(examples) -> None:
    """The ``/suggest`` endpoint's input. (A check has exactly its event's inputs as parameters: Gradio fills any
    further parameter with its default and the validator's answer would no longer line up with the inputs.)"""
    checks.check_inputs(examples, num_samples=checks.SUGGEST_SAMPLES)


@page_inputs(examples="string")
def check_suggest_example(examples, weights, string: str = "") -> None:
    """The page's Suggest button: the examples and the pragmatic listener's weights. A refusal about the examples
    (none yet) is shown beside the example box, the ``string`` input (the list itself is the page's state)."""
    check_weights(weights)
    check_suggest(examples)


def check_update(examples, literal_weights, pragmatic_weights, num_samples, game) -> None:
    """The page's guesses event; with no examples yet it shows a hint and runs no model."""
    check_weights(literal_weights, "literal_weights")
    check_weights(pragmatic_weights, "pragmatic_weights")
    if examples:
        checks.check_inputs(examples, k=SHOWN, num_samples=num_samples)


# ---------------------------------------------------------------- the list of examples


def add_example(examples: Sequence[dict], string: str, label: str, game: dict | None) -> list[dict]:
    """The examples with one more, checked (against the game's regex too, when a game runs)."""
    check_game_labels([{"string": string, "label": label}], game)
    # Adding samples nothing: num_samples=1 asks only that the examples can be sampled at all.
    checked, _, _ = checks.check_inputs([*examples, {"string": string, "label": label}], num_samples=1)
    return [e.to_dict() for e in checked]


def check_game_labels(examples: Sequence[dict], game: dict | None) -> None:
    """Every example's label is true for the running game's regex (the Streamlit page's lines, checked at once)."""
    running = Game.from_dict(game)
    if running is not None:
        for e in examples:
            running.check_label(e["string"], e["label"])


def accept_suggestion(examples: Sequence[dict], suggestion: dict | None, game: dict | None) -> list[dict]:
    """The examples with the suggested one added (a ``PraxSuggestion.to_dict()``)."""
    if not suggestion:
        raise UserInputError("Ask for a suggestion first.", argument="suggestion")
    return add_example(examples, suggestion["example"]["string"], suggestion["example"]["label"], game)


def remove_examples(examples: Sequence[dict], ticked: Sequence[int] | None) -> list[dict]:
    ticked = set(ticked or ())
    return [e for i, e in enumerate(examples) if i not in ticked]


def load_preset(name: str | None) -> list[dict]:
    """A shipped example set's examples (a name not among them: a UserInputError; the page asks only with one)."""
    if name not in PRESETS:
        raise UserInputError("Choose an example set from the list first.", argument="name")
    return [{"string": string, "label": label} for string, label in PRESETS[name]]


def example_choices(examples: Sequence[dict]) -> list[tuple[str, int]]:
    """(label, index) pairs for the list of examples a visitor can tick to remove; the sign as the buttons write it
    (+ or −)."""
    return [(f"{sign(e['label'])}  {e['string']}", i) for i, e in enumerate(examples)]


def sign(label: str) -> str:
    """A label as the page writes it: + or − (the minus sign of the "− should not match" button, not a hyphen)."""
    return "+" if label == "+" else "−"


def preset_text(name: str) -> str:
    """A preset as the Streamlit page's text: one example a line, its label first."""
    return lines_text([{"string": string, "label": label} for string, label in PRESETS[name]])


def lines_text(examples: Sequence[dict]) -> str:
    """Examples as the Streamlit page's text (what ``parse_lines`` reads back)."""
    return "\n".join(f"{e['label']}{e['string']}" for e in examples)


def parse_lines(text: str) -> list[dict]:
    """The Streamlit page's text (``+abc`` / ``-abc``, one a line) as examples; checked by ``check_inputs``."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return [{"string": line[1:], "label": line[0]} for line in lines]


# ---------------------------------------------------------------- model calls


def synthesize(ctx: DemoContext, examples, weights: str | None, k: int = SHOWN, num_samples: int = PAGE_SAMPLES,
               on_download: Progress | None = None, callback: Callback | None = None) -> PraxOutput:
    """One listener's ranked guesses (its sampling time, loading excluded, feeds ``PACE``)."""
    with ctx.compute(weights, on_download) as pipe, PACE.timing(weights or "", num_samples):
        return pipe(examples, k=k, num_samples=num_samples, seed=SEED, callback=callback)


PACE = Pace()  # seconds per sampled program, per listener, on this server
LONG_RUN_SECONDS = 10  # a re-guess that should take longer says so before it starts


def run_estimate(num_samples: int, literal_weights: str, pragmatic_weights: str) -> str:
    """What the page says under the samples slider: how long the next re-guess (both listeners) should take, once
    it is long enough to matter and the chosen listeners have run here once; "" otherwise."""
    parts = [PACE.estimate(name, int(num_samples)) for name in (literal_weights, pragmatic_weights)]
    if any(part is None for part in parts) or sum(parts) < LONG_RUN_SECONDS:
        return ""
    return (f"With {int(num_samples)} samples each re-guess takes {duration_text(sum(parts))} here (both listeners, "
            "measured on this server's last runs).")


def suggest(ctx: DemoContext, examples, weights: str | None = None, on_download: Progress | None = None,
            callback: Callback | None = None) -> PraxSuggestion:
    """The most informative next example for the pragmatic listener's current top guess."""
    with ctx.compute(weights or ctx.default_weights(PRAGMATIC_PREFERENCE), on_download) as pipe:
        return pipe.suggest_example(examples, callback=callback)


def update(ctx: DemoContext, examples: Sequence[dict], literal_weights: str, pragmatic_weights: str,
           num_samples: int, game: dict | None, on_download: Progress | None = None,
           callback: Callback | None = None) -> tuple[str, str, dict | None, str]:
    """Both listeners' guesses as HTML tables, and the game after them: (literal, pragmatic, game, game text)."""
    if not examples:
        return (render_guesses("Literal listener", None, NO_EXAMPLES),
                render_guesses("PraX listener", None, NO_EXAMPLES), game, game_text(game))
    panels, outputs = [], []
    for i, (title, name) in enumerate((("Literal listener", literal_weights), ("PraX listener", pragmatic_weights))):
        try:
            output = synthesize(ctx, examples, name, num_samples=int(num_samples), on_download=on_download,
                                callback=_share(callback, i, 2))
        except WeightsUnavailable as missing:  # its own panel says so, in place of its older guesses
            output, message = None, str(missing)
        else:
            message = ""
        panels.append(render_guesses(f"{title} ({name})", output, message))
        outputs.append(output)
    running = Game.from_dict(game)
    if running is not None:
        for role, output in zip(ROLES, outputs, strict=True):
            if output is not None:
                running.record(role, output.top1, len(examples))
        game = running.to_dict()
    return (*panels, game, game_text(game))


def _share(callback: Callback | None, index: int, parts: int) -> Callback | None:
    """``callback`` for part ``index`` of ``parts`` equal runs: steps continue across the runs."""
    if callback is None:
        return None
    return lambda step, total: callback(index * total + step, parts * total)


# ---------------------------------------------------------------- the game


def new_game() -> dict:
    return Game.new().to_dict()


def game_text(game: dict | None) -> str:
    """The running game as the person sees it: the regex to teach (shown to the person only, as in the paper's
    setting: the speaker knows the program, the listeners do not) and how each listener is doing."""
    running = Game.from_dict(game)
    if running is None:
        return "No game running."
    return f"Teach the listeners `{running.target}`. " + running.status(list(ROLES))


# ---------------------------------------------------------------- display


GUESS_TABLE = "width:100%;border-collapse:collapse"
CELL = "padding:3px 6px;border-bottom:1px solid #8883;text-align:left;vertical-align:top"
REGEX = "white-space:pre;font-family:ui-monospace,monospace"  # a regex never breaks inside a token


def render_guesses(title: str, output: PraxOutput | None, message: str = "") -> str:
    """Two small tables that read at any width: the guesses (rank, regex in monospace, score), then one row per
    example with ✓/✗ per guess. Each scrolls inside its own box when too wide, never the page."""
    head = f"<h4>{html.escape(title)}</h4>"
    if output is None:
        return head + f"<p><em>{html.escape(message)}</em></p>"
    if not output.candidates:
        return head + (f"<p>No regex consistent with all {len(output.examples)} examples among "
                       f"{output.n_samples} samples. Try more samples or simpler examples.</p>")

    def scrolling(table: str) -> str:
        return f"<div style='overflow-x:auto;max-width:100%'><table style='{GUESS_TABLE}'>{table}</table></div>"

    guesses = "".join(
        f"<tr><td style='{CELL}'>{i}</td><td style='{CELL}'><code style='{REGEX}'>{views.text(c.program)}</code>"
        f"</td><td style='{CELL};white-space:nowrap'>{c.probability:.0%} <small>(log p {c.logprob:.1f})</small>"
        "</td></tr>" for i, c in enumerate(output.candidates, 1))
    numbers = "".join(f"<th style='{CELL};text-align:center'>#{i}</th>" for i in range(1, len(output.candidates) + 1))
    checks = "".join(
        f"<tr><td style='{CELL};overflow-wrap:anywhere;font-family:ui-monospace,monospace'>"
        f"{views.text(e.string)}</td><td style='{CELL}'>{sign(e.label)}</td>"
        + "".join(f"<td style='{CELL};text-align:center'>{'✓' if c.matches[j] else '✗'}</td>"
                  for c in output.candidates) + "</tr>"
        for j, e in enumerate(output.examples))
    if output.n_consistent:
        found = f"{output.n_consistent} of {output.n_samples} samples fit every example; {output.n_unique} distinct."
    else:  # the listener ranked the search's regexes (count 0)
        found = (f"None of the {output.n_samples} samples fit every example: these {len(output.candidates)} come from "
                 "a search of the regexes shaped like the examples, ranked by this listener.")
    note = f"<p><small>{found} ✓ = the guess matches the whole string.</small></p>"
    return (head
            + scrolling(f"<thead><tr><th style='{CELL}'>#</th><th style='{CELL}'>regex</th>"
                        f"<th style='{CELL}'>score</th></tr></thead><tbody>{guesses}</tbody>")
            + scrolling(f"<thead><tr><th style='{CELL}'>example</th><th style='{CELL}'></th>{numbers}</tr></thead>"
                        f"<tbody>{checks}</tbody>")
            + note)


def suggestion_markdown(s: PraxSuggestion) -> str:
    """The suggestion in words: the example, the guess it assumes, how many of the listener's guesses it leaves, and
    among how many strings it was chosen (the RSA speaker's probability stays in the API's answer)."""
    left = "only that guess" if s.remaining == 1 else f"{s.remaining} of its {s.n_programs} guesses"
    return (f"Try <code>{views.text(s.example.string)}</code> as **{sign(s.example.label)}**: "
            f"if you mean <code>{views.text(s.assumed_program)}</code>, the listener's best guess, it leaves {left} "
            f"standing; of {s.n_candidates} strings tried, it singles that guess out best.")


def preview() -> str:
    """The hub card's picture: the first example set, as the page lists it."""
    name, examples = next(iter(PRESETS.items()))
    chips = "".join(f"<code style='{CHIP}'>{sign(label)} {views.text(string)}</code>"
                    for string, label in examples)
    return f"<div style='display:flex;flex-wrap:wrap;gap:.4rem;justify-content:center'>{chips}</div>"


CHIP = "border:1px solid var(--border-color-primary);border-radius:6px;padding:.15rem .45rem;white-space:pre"
