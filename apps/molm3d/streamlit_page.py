"""3D-MoLM on the Streamlit hub: SMILES -> conformer, 2D depiction, RDKit table; ask the model when weights are here."""

import streamlit as st
import streamlit.components.v1 as components

from apps.molm3d.page import EXAMPLES, TABLE_HEADERS
from apps.molm3d.tasks import TASKS
from apps.streamlit_ui import demo_context, paper_card, show_error, weights_select

ctx = demo_context("molm3d")
paper_card("molm3d")
weights_name = weights_select(ctx)
smiles = st.text_input("SMILES", EXAMPLES[0][0])
task = st.selectbox("Task", list(TASKS), format_func=lambda key: TASKS[key].label)
question = st.text_input("Free question (for the free-question task)") if task == "description" else ""
ask = st.button("Ask 3D-MoLM", type="primary")
try:
    from apps.molm3d import views
    from apps.molm3d.conformer import featurize
    from apps.molm3d.properties import reference_rows

    conf = featurize(smiles)
    left, right = st.columns(2)
    with left:
        st.markdown(views.depiction_svg(conf), unsafe_allow_html=True)
    with right:
        components.html(views.viewer_html(conf), height=320)
    st.markdown(views.info_markdown(conf, 42))
    answer = None
    if ask:
        with st.spinner("Generating the answer (5-beam search)"):
            answer = ctx.pipeline(weights_name).ask(conf, question or None, task)
        st.subheader("3D-MoLM")
        st.write(answer.text)
        for note in answer.notes:
            st.warning(note)
    rows = reference_rows(conf.mol, {task: answer.value} if answer is not None and TASKS[task].numeric else None)
    st.dataframe([dict(zip(TABLE_HEADERS, row, strict=True)) for row in rows], hide_index=True)
except Exception as error:
    show_error(error)
