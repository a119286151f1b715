"""Tag2Text on the Streamlit hub: one image (upload or example) -> tags with scores and a caption."""

import streamlit as st

from apps.streamlit_ui import demo_context, paper_card, show_error, weights_select
from apps.tag2text.page import DEFAULT_THRESHOLD, example_images

ctx = demo_context("tag2text")
paper_card("tag2text")
weights_name = weights_select(ctx)
examples = {p.rsplit("/", 1)[-1]: p for p in example_images()}
upload = st.file_uploader("Image", type=["png", "jpg", "jpeg", "webp", "bmp", "gif", "tif", "tiff"])
example = st.selectbox("…or an example", list(examples))
threshold = st.slider("Tag threshold", 0.0, 1.0, DEFAULT_THRESHOLD, 0.01)
user_tags = st.text_input("Your tags (optional, comma-separated)")
if st.button("Tag and caption", type="primary"):
    source = upload.getvalue() if upload is not None else examples[example]
    try:
        with st.spinner("Tagging and captioning"):
            result = ctx.pipeline(weights_name)(source, threshold=threshold, user_tags=user_tags)[0]
    except Exception as error:
        show_error(error)
    else:
        st.image(source, width=384)
        st.subheader("Caption")
        st.write(result.caption)
        st.subheader("Tags")
        st.dataframe([{"tag": t.name, "score": round(t.score, 3)} for t in result.tags], hide_index=True)
        if result.user_tags:
            st.caption(f"Caption guided by your tags: {', '.join(result.user_tags)}")
