"""PraX on the Streamlit hub: labelled strings in, the literal and the pragmatic listener's guesses side by side."""

import streamlit as st

from apps.prax.page import (
    LITERAL_PREFERENCE,
    PRAGMATIC_PREFERENCE,
    PRESETS,
    as_examples,
    render_guesses,
    synthesize,
)
from apps.streamlit_ui import demo_context, paper_card, show_error

ctx = demo_context("prax")
paper_card("prax")
preset = st.selectbox("Start from an example set", list(PRESETS))
text = st.text_area("Examples, one per line: + for should match, - for should not", key=f"examples-{preset}",
                    value="\n".join(f"{label}{string}" for string, label in PRESETS[preset]), height=140)
names = [ws.name for ws in ctx.demo.weight_sets]
left, right = st.columns(2)
literal = left.selectbox("Literal listener", names, index=names.index(ctx.default_weights(LITERAL_PREFERENCE)))
pragmatic = right.selectbox("Pragmatic listener (PraX)", names,
                            index=names.index(ctx.default_weights(PRAGMATIC_PREFERENCE)))
if st.button("Guess the regex", type="primary"):
    try:
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        examples = as_examples([{"string": line[1:], "label": line[0]} for line in lines])
        with st.spinner("Sampling and checking candidate regexes"):
            results = [(title, synthesize(ctx, examples, name)) for title, name in
                       ((f"Literal listener ({literal})", literal), (f"PraX listener ({pragmatic})", pragmatic))]
    except Exception as error:
        show_error(error)
    else:
        for column, (title, result) in zip((left, right), results, strict=True):
            with column:
                st.html(render_guesses(title, result))
