"""3D-MoLM on the Streamlit hub: SMILES -> conformer, 2D depiction, RDKit table; ask the model when weights are here.

The same actions (and so the same checks) as the Gradio page; no gradio here.
"""

import streamlit as st
import streamlit.components.v1 as components

from apps.molm3d import actions
from apps.molm3d.tasks import DECODINGS, TASKS
from apps.streamlit_ui import demo_context, embed_section, paper_card, progress, show_error, weights_select
from apps.views import text

ctx = demo_context("molm3d")
paper_card("molm3d")
weights_name = weights_select(ctx)
notice = ctx.weights_message(weights_name, actions.WORKS_WITHOUT_WEIGHTS)
if notice:
    st.warning(notice)
smiles = st.text_input("SMILES", actions.EXAMPLES[0][0])
task = st.selectbox("Task", list(TASKS), format_func=lambda key: TASKS[key].label)
question = st.text_input("Free question (for the free-question task)") if task == "description" else ""
decoding = st.radio("Decoding", list(DECODINGS), horizontal=True,
                    help="official: five beams, as the paper's evaluation; fast: one beam, about 5x less work per word "
                         "on a CPU (the answer may differ)")
with st.expander("Precision and speed"):
    st.markdown(actions.precision_note())
ask = st.button("Ask 3D-MoLM", type="primary")
try:
    view = actions.show(smiles)
    left, right = st.columns(2)
    with left:
        components.html(view.depiction, height=320)  # st.markdown strips inline SVG: the drawing was blank
    with right:
        components.html(view.viewer, height=320)
    st.markdown(view.info)
    answer = None
    if ask:
        bar, step = progress("Generating the answer")
        writing = st.empty()  # the answer as it is written, every few words
        answer = actions.answer(ctx, view, task, question, weights_name, callback=step, decoding=decoding,
                                on_text=lambda text: writing.markdown(actions.partial_markdown(text)))
        bar.empty()
        writing.empty()
        st.subheader("3D-MoLM")
        st.markdown(text(answer.text))
        for note in answer.notes:
            st.warning(text(note))
    headers, rows = actions.comparison_table(actions.table_rows(view, answer))
    st.dataframe([dict(zip(headers, row, strict=True)) for row in rows], hide_index=True)
except Exception as error:
    show_error(error)
embed_section("molm3d")
