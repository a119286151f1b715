"""PraX on the Streamlit hub: labelled strings in (one a line), the literal and the pragmatic listener's guesses side
by side; the most informative next example; the paper's game (teach the listeners a regex they cannot see). The
same actions as the Gradio page (actions.py); the examples, the suggestion and the game live in the session."""

import streamlit as st

from apps.prax import actions
from apps.streamlit_ui import demo_context, embed_section, paper_card, progress, show_error

ctx = demo_context("prax")
paper_card("prax")
state = st.session_state
state.setdefault("prax-game", None)
state.setdefault("prax-suggestion", None)
state.setdefault("prax-examples", actions.preset_text(next(iter(actions.PRESETS))))


def load_preset():
    state["prax-examples"] = actions.preset_text(state["prax-preset"])
    state["prax-suggestion"] = None


def new_game():
    state["prax-game"], state["prax-examples"], state["prax-suggestion"] = actions.new_game(), "", None


def end_game():
    state["prax-game"] = None


def accept_suggestion():
    examples = actions.parse_lines(state["prax-examples"])
    state["prax-examples"] = actions.lines_text([*examples, state["prax-suggestion"]["example"]])
    state["prax-suggestion"] = None


st.selectbox("Start from an example set", list(actions.PRESETS), key="prax-preset", on_change=load_preset)
text = st.text_area("Examples, one per line: + for should match, - for should not", key="prax-examples", height=140)
names = [ws.name for ws in ctx.demo.weight_sets]
left, right = st.columns(2)
literal = left.selectbox("Literal listener", names, index=names.index(ctx.default_weights(actions.LITERAL_PREFERENCE)))
pragmatic = right.selectbox("Pragmatic listener (PraX)", names,
                            index=names.index(ctx.default_weights(actions.PRAGMATIC_PREFERENCE)))
for name in dict.fromkeys((literal, pragmatic)):
    if message := ctx.weights_message(name, actions.WORKS_WITHOUT):
        st.warning(message)
samples = st.slider("Samples per listener", 10, 500, actions.PAGE_SAMPLES, step=10)
if estimate := actions.run_estimate(samples, literal, pragmatic):
    st.caption(estimate)
with st.expander("Precision and speed"):
    st.markdown(actions.precision_note())
with st.expander("Game: teach the listeners a regex", expanded=state["prax-game"] is not None):
    st.write("The page picks a regex the listeners never trained on; you give examples (true labels only) until "
             "their top guess is it.")
    start, stop = st.columns(2)
    start.button("New regex to teach", on_click=new_game)
    if state["prax-game"] is not None:
        stop.button("End the game", on_click=end_game)
    st.markdown(actions.game_text(state["prax-game"]))
guess, suggest = st.columns(2)
guessed = guess.button("Guess the regex", type="primary")
suggested = suggest.button("Suggest an informative example")

try:
    examples = actions.parse_lines(text)
    if suggested:
        actions.check_suggest_example(examples, pragmatic)
        bar, step = progress("Sampling the listener's guesses and candidate examples")
        suggestion = actions.suggest(ctx, examples, pragmatic, callback=step)
        state["prax-suggestion"], state["prax-suggestion-text"] = (suggestion.to_dict(),
                                                                   actions.suggestion_markdown(suggestion))
        bar.empty()
    if guessed:
        actions.check_update(examples, literal, pragmatic, samples, state["prax-game"])
        actions.check_game_labels(examples, state["prax-game"])
        bar, step = progress("Sampling regexes, both listeners")
        literal_html, pragmatic_html, state["prax-game"], game_md = actions.update(
            ctx, examples, literal, pragmatic, samples, state["prax-game"], callback=step)
        bar.empty()
        for column, panel in zip((left, right), (literal_html, pragmatic_html), strict=True):
            with column:
                st.html(panel)
        if state["prax-game"] is not None:
            st.info(game_md)
except Exception as error:
    show_error(error)
if state["prax-suggestion"] is not None:
    st.markdown(state["prax-suggestion-text"], unsafe_allow_html=True)  # its strings escaped (views.text)
    st.button("Add the suggestion", on_click=accept_suggestion)
embed_section("prax")
