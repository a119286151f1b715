"""PraX page: type labelled strings, see a literal and a pragmatic listener's regex guesses side by side.

Layout and wiring only: what each button does is apps/prax/actions.py (shared with the Streamlit page), inference
is apps/prax/pipeline.py through ``ctx.compute``. The named API endpoints ``/synthesize`` and ``/suggest``
are declared in api.py.
"""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr

from apps import ui
from apps.prax import actions
from shared.context import DemoContext
from shared.errors import UserInputError

INTERNAL = {"api_visibility": "private"}  # page events: not in the API page, gradio_client or MCP


def build(ctx: DemoContext) -> gr.Blocks:
    with gr.Blocks(title=ctx.demo.title) as page:
        ui.paper_card(ctx.demo)
        w = SimpleNamespace(examples=gr.State([]), game=gr.State(None), suggestion=gr.State(None))
        with gr.Row():
            with gr.Column(scale=2):
                _examples_section(w)
            with gr.Column(scale=1):
                _listeners_section(ctx, w)
        with gr.Row():  # columns of 320 px at least: at 720 px the two panels stack instead of squeezing tables
            with gr.Column(min_width=320):
                w.literal_out = gr.HTML(actions.render_guesses("Literal listener", None, actions.START))
            with gr.Column(min_width=320):
                w.pragmatic_out = gr.HTML(actions.render_guesses("PraX listener", None, actions.START))
        _game_section(w)
        ui.embed_section(ctx, page)
        _wire_examples(w)
        _wire_models(ctx, w)
        ui.serve_endpoints(ctx)
    return page


def _examples_section(w: SimpleNamespace) -> None:
    # No max_length: the browser would cut a long paste silently; the check says how long it is and the limit.
    w.text = gr.Textbox(label="Example string", elem_id=BOX_ID,
                        placeholder="type a string, then press + or − (Enter adds it as +)")
    with gr.Row():
        w.add_pos = gr.Button("+ should match", variant="primary")
        w.add_neg = gr.Button("− should not match")
    w.refused = gr.Textbox(visible=False)  # the string the last add refused, for GIVE_BACK
    w.current = gr.CheckboxGroup(label="Examples (tick to remove)", choices=[])
    with gr.Row():
        w.remove = gr.Button("Remove ticked", size="sm")
        w.clear = gr.Button("Clear all", size="sm")
    w.preset = gr.Dropdown(list(actions.PRESETS), label="Start from an example set", value=None,
                           info="Choosing one replaces the examples above.")


def _listeners_section(ctx: DemoContext, w: SimpleNamespace) -> None:
    literal = ctx.default_weights(actions.LITERAL_PREFERENCE)
    pragmatic = ctx.default_weights(actions.PRAGMATIC_PREFERENCE)
    w.literal_weights = gr.Dropdown(ctx.weight_choices(), value=literal, label="Literal listener")
    w.pragmatic_weights = gr.Dropdown(ctx.weight_choices(), value=pragmatic, label="Pragmatic listener (PraX)")
    w.notice = ui.WeightsView.new_banner(ctx, actions.WORKS_WITHOUT, literal, pragmatic)
    w.samples = gr.Slider(10, 500, value=actions.PAGE_SAMPLES, step=10, label="Samples per listener")
    w.estimate = gr.Markdown(elem_classes=ui.QUIET)  # how long the next re-guess takes (actions.run_estimate)
    with gr.Accordion("Precision and speed", open=False):
        gr.Markdown(actions.precision_note())
    w.suggest = gr.Button("Suggest an informative example")
    w.suggestion_md = gr.Markdown()
    w.accept = gr.Button("Add the suggestion", size="sm", visible=False)
    w.weights = ui.WeightsView(ctx, [w.literal_weights, w.pragmatic_weights], w.notice, actions.WORKS_WITHOUT)
    gr.on([w.samples.change, w.literal_weights.change, w.pragmatic_weights.change], actions.run_estimate,
          [w.samples, w.literal_weights, w.pragmatic_weights], w.estimate, **INTERNAL)


def _game_section(w: SimpleNamespace) -> None:
    with gr.Accordion(GAME_TITLE, open=False):
        gr.Markdown("You get a regex; the listeners do not. Add strings it matches (+) and strings it does not "
                    "(−); a wrong label is refused.\n\nA listener gets it when its top guess means the same regex: "
                    "teach both in as few examples as you can.")
        w.new_game = gr.Button("New regex to teach")
        w.game_md = gr.Markdown("No game running.")


GAME_TITLE = "Game: teach the listeners a regex"


def _listed(examples: list[dict]):
    return gr.update(choices=actions.example_choices(examples), value=[])


def _adder(label: str):
    def add(examples, string, game):
        try:
            updated = actions.add_example(examples, string, label, game)
        except UserInputError as error:  # the sentence as a toast; the refused string is given back to the box
            return ui.toast(error), gr.skip(), string
        return updated, _listed(updated), ""

    return ui.user_errors(add)


# Edits of the example list: every press counts (a second Enter while the first is on its way is not dropped, as
# Gradio's default "once" would), and they run one at a time in the order sent, each on the list the previous one
# left, so no example is lost or reordered however fast a person types or however slow the hub answers.
EDITS = {**INTERNAL, "trigger_mode": "multiple", "concurrency_id": "prax-example-list", "concurrency_limit": 1}
BOX_ID = "prax-example-string"
# The box empties in the browser as the string is sent, so the next one can be typed while the hub answers, and the
# toasts of earlier refusals close, so a refusal on the screen is always about the latest string (they stacked into
# one "Warning (4)" with four sentences)...
SEND_AND_EMPTY = f"""(examples, string, game) => {{
  document.querySelectorAll("[data-testid='toast-close']").forEach((close) => close.click());
  const box = document.querySelector('#{BOX_ID} textarea, #{BOX_ID} input');
  if (box) {{ box.value = ''; box.dispatchEvent(new Event('input', {{bubbles: true}})); }}
  return [examples, string, game];
}}"""
# ... and a refused string comes back to be fixed, unless the person has typed something else since: focused and
# selected, so what is typed next replaces it (it was appended to it: "abc" refused, then "123" sent "abc123").
GIVE_BACK = f"""(text, refused) => {{
  if (text !== '' || !refused) return text;
  setTimeout(() => {{
    const box = document.querySelector('#{BOX_ID} textarea, #{BOX_ID} input');
    if (box) {{ box.focus(); box.select(); }}
  }}, 50);
  return refused;
}}"""


def _wire_examples(w: SimpleNamespace) -> None:
    io = ([w.examples, w.text, w.game], [w.examples, w.current, w.refused])
    for trigger, label in ((w.add_pos.click, "+"), (w.text.submit, "+"), (w.add_neg.click, "-")):
        trigger(_adder(label), *io, js=SEND_AND_EMPTY, **EDITS).then(
            None, [w.text, w.refused], w.text, js=GIVE_BACK, queue=False, **INTERNAL)

    def remove(examples, ticked):
        kept = actions.remove_examples(examples, ticked)
        return kept, _listed(kept)

    def load(name):  # the menu empties again, so the same set can be chosen again after edits
        if not name:  # the menu opened and closed without a choice: nothing to do, nothing to say
            return gr.skip(), gr.skip(), gr.skip(), gr.skip()
        loaded = actions.load_preset(name)
        return loaded, _listed(loaded), None, None

    def accept(examples, suggestion, game):
        updated = actions.accept_suggestion(examples, suggestion, game)
        return updated, _listed(updated), gr.update(visible=False)

    def new_game():
        game = actions.new_game()
        return game, [], _listed([]), actions.game_text(game)

    w.remove.click(ui.user_errors(remove), [w.examples, w.current], [w.examples, w.current], **EDITS)
    w.clear.click(lambda: ([], _listed([])), None, [w.examples, w.current], **EDITS)
    w.preset.input(ui.user_errors(load), w.preset, [w.examples, w.current, w.game, w.preset], **EDITS)
    w.accept.click(ui.user_errors(accept), [w.examples, w.suggestion, w.game], [w.examples, w.current, w.accept],
                   **EDITS)
    w.new_game.click(new_game, None, [w.game, w.examples, w.current, w.game_md], **INTERNAL)


def _steps(progress: gr.Progress, desc: str):
    return lambda step, total: progress((step, total), desc=desc)


def _wire_models(ctx: DemoContext, w: SimpleNamespace) -> None:
    def update(examples, literal_weights, pragmatic_weights, num_samples, game, progress=gr.Progress()):
        """The search's guesses at once (torch-free: on a cold hub they come before the listeners have loaded), then
        each listener's ranking of its samples with them."""
        if examples:
            yield *actions.search_panels(examples, literal_weights, pragmatic_weights), gr.skip(), gr.skip()
        yield actions.update(ctx, examples, literal_weights, pragmatic_weights, num_samples, game,
                             ui.download_progress(progress), _steps(progress, "Sampling regexes"))

    def suggest_example(examples, weights, string="", progress=gr.Progress()):  # "suggest" is the API's name
        s = actions.suggest(ctx, examples, weights, ui.download_progress(progress), _steps(progress, "Sampling"))
        return s.to_dict(), actions.suggestion_markdown(s), gr.update(visible=True)

    # One update event for every change, "always_last": with several model calls allowed at once, separate
    # events could finish out of order and show guesses for an older list of examples.
    w.weights.follow(
        gr.on([w.examples.change, w.literal_weights.change, w.pragmatic_weights.change], ui.model_call(update),
              [w.examples, w.literal_weights, w.pragmatic_weights, w.samples, w.game],
              [w.literal_out, w.pragmatic_out, w.game, w.game_md], trigger_mode="always_last",
              validator=ui.validator(actions.check_update), **ui.model_events(ctx), **INTERNAL),
        w.suggest.click(ui.model_call(suggest_example), [w.examples, w.pragmatic_weights, w.text],
                        [w.suggestion, w.suggestion_md, w.accept],
                        validator=ui.validator(actions.check_suggest_example), **ui.model_events(ctx), **INTERNAL))


if __name__ == "__main__":
    from apps.prax import DEMO

    build(DemoContext(DEMO)).launch(theme=ui.theme())
