"""Tag2Text on the Streamlit hub, as on the Gradio page: one image (upload or example) -> tags with scores and a
caption; or a batch (images and zip archives) -> a table, with the CSV and the JSON to download. The same actions
(actions.py): each uploaded file is screened by the pipeline's own check, and one that is not an image is named
and left out."""

import tempfile
from pathlib import Path

import streamlit as st

from apps.streamlit_ui import demo_context, embed_section, paper_card, saved_upload, show_error, weights_select
from apps.tag2text import actions
from apps.views import text

ctx = demo_context("tag2text")
paper_card("tag2text")
weights_name = weights_select(ctx)
if message := ctx.weights_message(weights_name, actions.WORKS_WITHOUT_WEIGHTS):
    st.warning(message)
threshold = st.slider("Tag threshold", 0.0, 1.0, actions.DEFAULT_THRESHOLD, 0.01)
user_tags = st.text_input("Your tags (optional, comma-separated)")
with st.expander("Precision and speed"):
    st.markdown(actions.precision_note())
one, batch = st.tabs(["One image", "Batch"])


def tagged(check, tag, files):
    """``check`` then ``tag`` (a tab's actions) on ``files`` with the page's settings and a progress bar; None, its
    sentence shown, when refused or failed."""
    try:
        check(files, threshold, user_tags, weights_name)
        bar = st.progress(0.0, text="Tagging and captioning")
        output = tag(ctx, files, threshold, user_tags, weights_name,
                     callback=lambda step, total: bar.progress(min(1.0, step / max(1, total)), text="Beam search"))
        bar.empty()
        return output
    except Exception as error:
        show_error(error)
        return None


with one:
    examples = {p.rsplit("/", 1)[-1]: p for p in actions.example_images()}
    upload = st.file_uploader("Image", type=[suffix.lstrip(".") for suffix in actions.UPLOAD_TYPES])
    source = saved_upload(upload) if upload is not None else None
    if source is not None and (problem := actions.upload_problem(source)):
        st.error(text(problem))  # right below the image input; the example is tagged meanwhile
        source = None
    example = st.selectbox("…or an example", list(examples), disabled=source is not None)
    chosen = source or examples[example]
    if st.button("Tag and caption", type="primary") and (
            output := tagged(actions.check_image_tab, actions.tag_image, chosen)):
        result = output.results[0]
        st.image(str(chosen), width=384)
        st.subheader("Caption")
        st.markdown(text(result.caption))
        st.subheader("Tags")
        st.dataframe(actions.tag_rows(result), hide_index=True)
        if result.user_tags:
            st.caption(f"Caption guided by your tags: {text(', '.join(result.user_tags))}")

with batch:
    uploads = st.file_uploader("Images or zip archives of images", accept_multiple_files=True,
                               type=[*(suffix.lstrip(".") for suffix in actions.UPLOAD_TYPES), "zip"])
    kept, problems = actions.screen_uploads([saved_upload(u) for u in uploads or ()])
    if problems:
        st.warning(text(actions.left_out_note(problems, len(kept))))
    if st.button("Tag and caption all", type="primary", disabled=not kept) and (
            output := tagged(actions.check_batch_tab, actions.tag_batch, kept)):
        st.caption(text(actions.batch_note(output)))
        st.dataframe([dict(zip(actions.TABLE_HEADERS, row, strict=True)) for row in actions.batch_table(output)],
                     hide_index=True)
        for path in actions.write_exports(output, Path(tempfile.mkdtemp(prefix="demohub-tag2text-"))):
            st.download_button(f"Download {path.name}", path.read_bytes(), file_name=path.name)
embed_section("tag2text")
