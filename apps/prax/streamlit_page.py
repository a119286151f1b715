"""PraX on the Streamlit hub: labelled strings in, the literal and the pragmatic listener's guesses side by side."""

import streamlit as st

from apps.prax import actions
from apps.streamlit_ui import demo_context, paper_card, progress, show_error

ctx = demo_context("prax")
paper_card("prax")
preset = st.selectbox("Start from an example set", list(actions.PRESETS))
text = st.text_area("Examples, one per line: + for should match, - for should not", key=f"examples-{preset}",
                    value=actions.preset_text(preset), height=140)
names = [ws.name for ws in ctx.demo.weight_sets]
left, right = st.columns(2)
literal = left.selectbox("Literal listener", names, index=names.index(ctx.default_weights(actions.LITERAL_PREFERENCE)))
pragmatic = right.selectbox("Pragmatic listener (PraX)", names,
                            index=names.index(ctx.default_weights(actions.PRAGMATIC_PREFERENCE)))
for name in dict.fromkeys((literal, pragmatic)):
    if message := ctx.weights_message(name, actions.WORKS_WITHOUT):
        st.warning(message)
with st.expander("Precision and speed"):
    st.markdown(actions.precision_note())
if st.button("Guess the regex", type="primary"):
    try:
        examples = actions.parse_lines(text)
        for name in (literal, pragmatic):  # the same checks as the Gradio page, before any model loads
            actions.check_synthesize(examples, name, actions.SHOWN)
        bar, step = progress("Sampling regexes, both listeners")
        listeners = ((f"Literal listener ({literal})", literal), (f"PraX listener ({pragmatic})", pragmatic))
        results = [(title, actions.synthesize(ctx, examples, name, callback=lambda s, t, i=i: step(i * t + s, 2 * t)))
                   for i, (title, name) in enumerate(listeners)]
        bar.empty()
    except Exception as error:
        show_error(error)
    else:
        for column, (title, result) in zip((left, right), results, strict=True):
            with column:
                st.html(actions.render_guesses(title, result))
