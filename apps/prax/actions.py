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
from apps.prax.ranking import LISTENER_WEIGHT, SEARCH_ONLY
from shared.context import DemoContext
from shared.errors import UserInputError, WeightsUnavailable, page_inputs
from shared.pace import Pace, duration_text

if TYPE_CHECKING:
    from apps.prax.pipeline import Candidate, PraxOutput, PraxSuggestion
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
SAMPLING = "The listener is sampling its own guesses; they follow."
PRESETS = {
    "digits then letters": [("12ab", "+"), ("07xyz", "+"), ("1ab", "-"), ("12", "-")],
    "capitalised word": [("Hello", "+"), ("World", "+"), ("hello", "-"), ("HELLO", "-")],
    "semicolon-separated numbers": [("12;7", "+"), ("3;45;600", "+"), ("8", "+"), ("12,7", "-")],
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


def search_panels(examples: Sequence[dict], literal_weights: str, pragmatic_weights: str) -> tuple[str, str]:
    """Both panels with the search's own guesses (torch-free, a fraction of a second): what the page shows at once,
    while the listeners load and sample."""
    from apps.prax.ranking import search_only

    checked, _, _ = checks.check_inputs(examples, k=SHOWN, num_samples=1)
    output = search_only(checked, SHOWN)
    return tuple(render_guesses(f"{title} ({name})", output, SAMPLING)
                 for title, name in (("Literal listener", literal_weights), ("PraX listener", pragmatic_weights)))


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
    searching = output is not None and output.weights == SEARCH_ONLY
    if output is None or (searching and not output.candidates):
        return head + f"<p><em>{html.escape(message)}</em></p>"
    if not output.candidates:
        return head + f"<p>{html.escape(no_regex(output))}</p>"

    def scrolling(table: str) -> str:
        return f"<div style='overflow-x:auto;max-width:100%'><table style='{GUESS_TABLE}'>{table}</table></div>"

    guesses = "".join(
        f"<tr><td style='{CELL}'>{i}</td><td style='{CELL}'><code style='{REGEX}'>{views.text(c.program)}</code>"
        f"</td><td style='{CELL}'><span style='white-space:nowrap'>{c.probability:.0%}</span> "
        f"<small style='white-space:nowrap'>({score_words(c, searching)})</small>"
        "</td></tr>" for i, c in enumerate(output.candidates, 1))
    numbers = "".join(f"<th style='{CELL};text-align:center'>#{i}</th>" for i in range(1, len(output.candidates) + 1))
    checks = "".join(
        f"<tr><td style='{CELL};overflow-wrap:anywhere;font-family:ui-monospace,monospace'>"
        f"{views.text(e.string)}</td><td style='{CELL}'>{sign(e.label)}</td>"
        + "".join(f"<td style='{CELL};text-align:center'>{'✓' if c.matches[j] else '✗'}</td>"
                  for c in output.candidates) + "</tr>"
        for j, e in enumerate(output.examples))
    searched = sum(c.search_score is not None for c in output.candidates)
    sampled = sum(c.count > 0 for c in output.candidates)
    if searching:
        found = f"The search's guesses, from the regexes that read your examples, most likely first. {message}"
    else:
        found = (f"{output.n_consistent} of {output.n_samples} samples fit every example. Of these "
                 f"{len(output.candidates)} guesses the listener sampled {sampled} and the search read {searched}; "
                 f"ranked by the search's score plus {LISTENER_WEIGHT:g} times the listener's log-probability.")
    note = f"<p><small>{html.escape(found)} ✓ = the guess matches the whole string.</small></p>"
    return (head
            + scrolling(f"<thead><tr><th style='{CELL}'>#</th><th style='{CELL}'>regex</th>"
                        f"<th style='{CELL}'>score</th></tr></thead><tbody>{guesses}</tbody>")
            + scrolling(f"<thead><tr><th style='{CELL}'>example</th><th style='{CELL}'></th>{numbers}</tr></thead>"
                        f"<tbody>{checks}</tbody>")
            + note)


def score_words(candidate: Candidate, searching: bool = False) -> str:
    """A guess's scores in a few words: the listener's log-probability and the search's score, where each has one."""
    parts = [] if searching else [f"listener log p {candidate.logprob:.1f}".replace("-", "−")]
    if candidate.search_score is not None:
        parts.append(f"search {candidate.search_score:.1f}".replace("-", "−"))
    return ", ".join(parts)


def no_regex(output: PraxOutput) -> str:
    """Why there is no guess, in one sentence: which example rules out what."""
    from apps.prax import dsl, search

    positives = [e for e in output.examples if e.positive]
    if not positives:
        return ("Only strings that should not match: give at least one that should (+), so there is a pattern to "
                "read.")
    readings = search.search(positives, keep=search.KEEP)
    negatives = [e.string for e in output.examples if not e.positive]
    blocking = next((n for n in negatives if dsl.matches(readings[0], n)), None) if readings else None
    if blocking is None:  # (a search cut short on a busy machine may read here what it did not read before)
        return (f"No regex of the program space (at most six parts) reads all {len(positives)} strings that should "
                f"match, and none of the listener's {output.n_samples} samples fits: they may be too different to "
                "share one pattern; try removing one.")
    return (f"The best regex that reads the strings that should match, {readings[0]}, also matches “{blocking}”, "
            f"which should not match, and each of the other {len(readings) - 1} read matches one that should not "
            f"too; none of the listener's {output.n_samples} samples fits either. Check that example's label.")


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
