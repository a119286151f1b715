"""Tag2Text on the Streamlit hub: one image (upload or example) -> tags with scores and a caption."""

import streamlit as st

from apps.streamlit_ui import demo_context, paper_card, show_error, weights_select
from apps.tag2text import actions
from apps.views import text

ctx = demo_context("tag2text")
paper_card("tag2text")
weights_name = weights_select(ctx)
if message := ctx.weights_message(weights_name, actions.WORKS_WITHOUT_WEIGHTS):
    st.warning(message)
examples = {p.rsplit("/", 1)[-1]: p for p in actions.example_images()}
upload = st.file_uploader("Image", type=[suffix.lstrip(".") for suffix in actions.UPLOAD_TYPES])
example = st.selectbox("…or an example", list(examples))
threshold = st.slider("Tag threshold", 0.0, 1.0, actions.DEFAULT_THRESHOLD, 0.01)
user_tags = st.text_input("Your tags (optional, comma-separated)")
with st.expander("Precision and speed"):
    st.markdown(actions.precision_note())
if st.button("Tag and caption", type="primary"):
    source = upload.getvalue() if upload is not None else examples[example]
    try:
        actions.check_image_tab(source, threshold, user_tags, weights_name)  # the page's own file, not a caller's
        bar = st.progress(0.0, text="Tagging and captioning")
        output = actions.tag_image(ctx, source, threshold, user_tags, weights_name,
                                   callback=lambda step, total: bar.progress(step / total, text="Beam search"))
        bar.empty()
    except Exception as error:
        show_error(error)
    else:
        result = output.results[0]
        st.image(source, width=384)
        st.subheader("Caption")
        st.markdown(text(result.caption))
        st.subheader("Tags")
        st.dataframe(actions.tag_rows(result), hide_index=True)
        if result.user_tags:
            st.caption(f"Caption guided by your tags: {text(', '.join(result.user_tags))}")
