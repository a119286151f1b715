"""PraX page: type labelled strings, see a literal and a pragmatic listener's regex guesses side by side.

Thin: widgets and rendering only. Inference goes through ``ctx.pipeline(...)`` (apps/prax/pipeline.py); the game
logic is apps/prax/game.py. Named API endpoints: ``/synthesize`` and ``/suggest``.
"""

from __future__ import annotations

import html

import gradio as gr

from apps.prax import dsl
from apps.prax.game import Game
from apps.ui import embed_section, model_call, model_events, paper_card, theme, user_errors, weights_dropdown
from shared.context import DemoContext
from shared.errors import UserInputError

LITERAL_PREFERENCE = ("listener-suffix-idx-300k", "tiny-literal")
PRAGMATIC_PREFERENCE = ("pragmatic-ft-listener", "tiny-pragmatic")
PAGE_SAMPLES = 100  # the official Space's setting; the pipeline's default is upstream's 500
SHOWN = 5
PRESETS = {
    "digits then letters": [("12ab", "+"), ("07xyz", "+"), ("1ab", "-"), ("12", "-")],
    "capitalised word": [("Hello", "+"), ("World", "+"), ("hello", "-"), ("HELLO", "-")],
    "semicolon-separated codes": [("a1;b2", "+"), ("c3;d4;e5", "+"), ("a1,b2", "-"), ("a1", "+")],
}


def as_examples(items) -> list[dict]:
    return [e.as_dict() for e in dsl.validate_examples(items, allow_empty=True)]


def synthesize(ctx: DemoContext, examples: list[dict], weights: str, k: int = SHOWN,
               samples: int = PAGE_SAMPLES) -> dict:
    """One listener's ranked guesses as plain data (the pipeline's SynthesisResult.as_dict())."""
    with ctx.compute(weights) as pipe:
        result = pipe(examples, k=k, num_samples=samples, seed=0)
    return {"weights": weights, **result.as_dict()}


def suggest(ctx: DemoContext, examples: list[dict], weights: str | None = None) -> dict:
    with ctx.compute(weights or ctx.default_weights(PRAGMATIC_PREFERENCE)) as pipe:
        s = pipe.suggest_example(examples)
    return {"string": s.example.string, "label": s.example.label,
            "speaker_probability": round(s.speaker_probability, 4),
            "assumed_program": s.assumed_program, "programs": s.n_programs, "candidates": s.n_candidates,
            "remaining": s.remaining, "method": s.method, "note": s.note}


def render_guesses(title: str, result: dict | None, message: str = "") -> str:
    """An HTML table: rank, regex, score, and the candidate's full match on every example."""
    head = f"<h4>{html.escape(title)}</h4>"
    if result is None:
        return head + f"<p><em>{html.escape(message)}</em></p>"
    examples = result["examples"]
    if not result["candidates"]:
        return head + (f"<p>No regex consistent with all {len(examples)} examples among "
                       f"{result['n_samples']} samples. Try more samples or simpler examples.</p>")
    cols = "".join(f"<th title='label {e['label']}'><code>{html.escape(e['string'])}</code> {e['label']}</th>"
                   for e in examples)
    rows = []
    for i, c in enumerate(result["candidates"], 1):
        cells = "".join(
            f"<td style='text-align:center'>{'✓' if m else '✗'}</td>" for m in c["matches"])
        rows.append(f"<tr><td>{i}</td><td><code>{html.escape(c['program'])}</code></td>"
                    f"<td>{c['probability']:.0%} <small>(log p {c['logprob']:.1f})</small></td>{cells}</tr>")
    note = (f"<p><small>{result['n_consistent']} of {result['n_samples']} samples fit every example; "
            f"{result['n_unique']} distinct. ✓ = full match.</small></p>")
    return (head + f"<table><thead><tr><th>#</th><th>regex</th><th>score</th>{cols}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>" + note)


def example_choices(examples: list[dict]) -> list[tuple[str, int]]:
    return [(f"{e['label']}  {e['string']}", i) for i, e in enumerate(examples)]


def build(ctx: DemoContext) -> gr.Blocks:
    literal_default = ctx.default_weights(LITERAL_PREFERENCE)
    pragmatic_default = ctx.default_weights(PRAGMATIC_PREFERENCE)
    gpu = model_events(ctx)
    internal = {"api_visibility": "undocumented"}

    with gr.Blocks(title=ctx.demo.title) as page:
        paper_card(ctx.demo)
        examples_state = gr.State([])
        game_state = gr.State(None)
        suggestion_state = gr.State(None)
        with gr.Row():
            with gr.Column(scale=2):
                text = gr.Textbox(label="Example string", max_length=dsl.MAX_STRING_CHARS,
                                  placeholder="type a string, then press + or − (Enter adds it as +)")
                with gr.Row():
                    add_pos = gr.Button("+ should match", variant="primary")
                    add_neg = gr.Button("− should not match")
                current = gr.CheckboxGroup(label="Examples (tick to remove)", choices=[])
                with gr.Row():
                    remove = gr.Button("Remove ticked", size="sm")
                    clear = gr.Button("Clear all", size="sm")
                with gr.Row():
                    preset = gr.Dropdown(list(PRESETS), label="Load an example set", value=None)
                    load = gr.Button("Load", size="sm")
            with gr.Column(scale=1):
                literal_weights = gr.Dropdown(ctx.weight_choices(), value=literal_default, label="Literal listener")
                pragmatic_weights = weights_dropdown(ctx, label="Pragmatic listener (PraX)")
                samples = gr.Slider(10, 500, value=PAGE_SAMPLES, step=10, label="Samples per listener")
                suggest_btn = gr.Button("Suggest an informative example")
                suggestion_md = gr.Markdown()
                accept = gr.Button("Add the suggestion", size="sm", visible=False)
        with gr.Row():
            literal_out = gr.HTML(render_guesses("Literal listener", None, "Add an example to see guesses."))
            pragmatic_out = gr.HTML(render_guesses("PraX listener", None, "Add an example to see guesses."))
        with gr.Accordion("Game: teach a hidden regex", open=False):
            gr.Markdown("The page picks a regex and keeps it hidden. Add true examples of it; the page says when "
                        "each listener's top guess becomes equivalent to it, and after how many examples.")
            with gr.Row():
                new_game = gr.Button("New hidden regex")
                reveal = gr.Button("Reveal", size="sm")
            game_md = gr.Markdown("No game running.")
        embed_section(ctx.demo)

        def _add(examples, string, label, game):
            game_obj = Game.from_dict(game)
            if game_obj is not None:
                game_obj.check_label(string, label)
            updated = as_examples([*examples, {"string": string, "label": label}])
            return updated, "", gr.update(choices=example_choices(updated), value=[])

        def _remove(examples, ticked):
            kept = [e for i, e in enumerate(examples) if i not in set(ticked or [])]
            return kept, gr.update(choices=example_choices(kept), value=[])

        def _load(name):
            if name not in PRESETS:
                raise UserInputError("Choose an example set from the list first.")
            loaded = as_examples(list(PRESETS[name]))
            return loaded, gr.update(choices=example_choices(loaded), value=[]), None

        def _update(examples, lit_w, prag_w, n_samples, game):
            if not examples:
                msg = "No examples yet, so no guess: add a string that should (+) or should not (−) match."
                return (render_guesses("Literal listener", None, msg), render_guesses("PraX listener", None, msg),
                        game, _game_text(game))
            lit = synthesize(ctx, examples, lit_w, samples=int(n_samples))
            prag = synthesize(ctx, examples, prag_w, samples=int(n_samples))
            game_obj = Game.from_dict(game)
            if game_obj is not None:
                game_obj.record("literal", lit["candidates"][0]["program"] if lit["candidates"] else None,
                                len(examples))
                game_obj.record("PraX", prag["candidates"][0]["program"] if prag["candidates"] else None,
                                len(examples))
                game = game_obj.as_dict()
            return (render_guesses(f"Literal listener ({lit_w})", lit),
                    render_guesses(f"PraX listener ({prag_w})", prag), game, _game_text(game))

        def _game_text(game):
            g = Game.from_dict(game)
            if g is None:
                return "No game running."
            return "Hidden regex set. " + g.status(["literal", "PraX"])

        def _suggest(examples, prag_w):
            s = suggest(ctx, examples, prag_w)
            text_md = (f"Try <code>{html.escape(s['string'])}</code> as **{'+' if s['label'] == '+' else '−'}**: "
                       f"assuming you mean <code>{html.escape(s['assumed_program'])}</code>, it leaves "
                       f"{s['remaining']} of {s['programs']} candidate regexes "
                       f"(S1 = {s['speaker_probability']:.2f} over {s['candidates']} candidate examples).")
            return s, text_md, gr.update(visible=True)

        def _accept(examples, suggestion, game):
            if not suggestion:
                raise UserInputError("Ask for a suggestion first.")
            updated, _, choices = _add(examples, suggestion["string"], suggestion["label"], game)
            return updated, choices, gr.update(visible=False)

        def _new_game():
            game = Game.new().as_dict()
            return game, [], gr.update(choices=[], value=[]), _game_text(game)

        def _reveal(game):
            g = Game.from_dict(game)
            if g is None:
                raise UserInputError("Start a game first with 'New hidden regex'.")
            return f"The hidden regex is `{g.target}`. " + g.status(["literal", "PraX"])

        update_io = dict(fn=model_call(_update), inputs=[examples_state, literal_weights, pragmatic_weights,
                                                           samples, game_state],
                         outputs=[literal_out, pragmatic_out, game_state, game_md], **gpu, **internal)
        for button, label in ((add_pos, "+"), (add_neg, "-")):
            button.click(user_errors(lambda e, s, g, _l=label: _add(e, s, _l, g)),
                         [examples_state, text, game_state], [examples_state, text, current], **internal)
        text.submit(user_errors(lambda e, s, g: _add(e, s, "+", g)), [examples_state, text, game_state],
                    [examples_state, text, current], **internal)
        remove.click(user_errors(_remove), [examples_state, current], [examples_state, current], **internal)
        clear.click(lambda: ([], gr.update(choices=[], value=[])), None, [examples_state, current], **internal)
        load.click(user_errors(_load), preset, [examples_state, current, game_state], **internal)
        # One update event for every change, "always_last": with several model calls allowed at once, separate
        # events could finish out of order and show guesses for an older list of examples.
        gr.on([examples_state.change, literal_weights.change, pragmatic_weights.change], trigger_mode="always_last",
              **update_io)
        suggest_btn.click(model_call(_suggest), [examples_state, pragmatic_weights],
                          [suggestion_state, suggestion_md, accept], **gpu, **internal)
        accept.click(user_errors(_accept), [examples_state, suggestion_state, game_state],
                     [examples_state, current, accept], **internal)
        new_game.click(_new_game, None, [game_state, examples_state, current, game_md], **internal)
        reveal.click(user_errors(_reveal), game_state, game_md, **internal)

        def synthesize_endpoint(examples: list[dict], weights: str = pragmatic_default, k: int = SHOWN) -> dict:
            """Ranked regex guesses for labelled examples.

            Args:
                examples: list of {"string": str, "label": "+" or "-"}.
                weights: weight set name, e.g. "tiny-pragmatic" or "pragmatic-ft-listener".
                k: how many guesses to return (1-50).
            """
            return synthesize(ctx, examples, weights, k=k)

        def suggest_endpoint(examples: list[dict]) -> dict:
            """The most informative next example for the PraX listener's current top guess.

            Args:
                examples: list of {"string": str, "label": "+" or "-"}.
            """
            return suggest(ctx, examples, pragmatic_default)

        gr.api(model_call(synthesize_endpoint), api_name="synthesize", **gpu)
        gr.api(model_call(suggest_endpoint), api_name="suggest", **gpu)
    return page


if __name__ == "__main__":
    from apps.prax import DEMO

    build(DemoContext(DEMO)).launch(theme=theme())
