"""GeoDiffusion on the Streamlit hub: a layout (JSON) and a checkpoint in, images with the boxes drawn over them.

The controls take their limits and defaults from the checkpoint's generation config, as on the Gradio page; what the
page does is in actions.py (and the pipeline's check_inputs, run before any weights load).
"""

import json

import streamlit as st

from apps.geodiffusion import actions
from apps.geodiffusion.actions import GeoDiffusionPage
from apps.geodiffusion.layout import MAX_GUIDANCE, MAX_SEED, MAX_STEPS
from apps.streamlit_ui import demo_context, embed_section, paper_card, show_error, weights_select
from apps.views import text
from shared.errors import UserInputError

ctx = demo_context("geodiffusion")
page = GeoDiffusionPage(ctx)
paper_card("geodiffusion")
checkpoint = weights_select(ctx, key="checkpoint")
# What this page has without weights (no box editor here: the layout is its JSON text).
if message := ctx.weights_message(checkpoint, "You can still write layouts and see the prompt the model reads."):
    st.warning(message)
config = page.config(checkpoint)
with st.expander(f"{config.width}x{config.height} images, {len(config.classes)} labels"):
    st.markdown(text(", ".join(config.classes)))
examples = {f"{i + 1}. {name}": layout for i, (layout, name) in enumerate(actions.examples_for(config.dataset))}
example = st.selectbox("Start from an example layout", list(examples))
layout_json = st.text_area('Layout: {"camera": ..., "bbox": [[label, x1, y1, x2, y2], ...]} in [0, 1]',
                           json.dumps(examples[example]), key=f"layout-{checkpoint}-{example}", height=160)
try:
    page.check_layout(layout_json, checkpoint)
except UserInputError as error:
    st.error(text(error))  # right below the layout, as the Gradio page marks its layout box
else:
    st.caption(f"Prompt: {text(page.preview_prompt(layout_json, checkpoint))}")
    if note := page.budget_note(layout_json, checkpoint):
        st.caption(note)
steps_key, sampler_key = f"steps-{checkpoint}", f"sampler-{checkpoint}"


def on_sampler():  # Steps follow the sampler while they hold the other sampler's default
    st.session_state[steps_key] = actions.steps_for_sampler(
        st.session_state[sampler_key], st.session_state.get(steps_key, config.num_inference_steps), config)


st.session_state.setdefault(steps_key, config.num_inference_steps)
seed, steps, cfg = st.columns(3)
seed = seed.number_input("Seed", 0, min(MAX_SEED, 2**53 - 1), 0)  # Streamlit holds JavaScript-safe integers
steps = steps.number_input("Steps", 1, MAX_STEPS, key=steps_key)
cfg = cfg.number_input("Guidance scale (cfg)", 0.0, MAX_GUIDANCE, config.cfg_scale, step=0.5, key=f"cfg-{checkpoint}")
samplers = {value: label for label, value in actions.sampler_choices(config)}
sampler = st.radio("Sampler", list(samplers), format_func=samplers.get, horizontal=True, key=sampler_key,
                   help=actions.sampler_info(config), on_change=on_sampler)
num_images = st.slider("Images", 1, actions.PAGE_MAX_IMAGES, 1)
show_boxes = st.checkbox("Draw the layout boxes over the images", value=True)
if st.button("Generate", type="primary"):
    try:
        bar = st.progress(0.0, text="Loading the checkpoint")
        out = page.generate(layout_json, checkpoint, seed, steps, cfg, num_images, sampler=sampler,
                            callback=lambda i, n: bar.progress(min(i / max(n, 1), 1.0), text=f"Denoising {i}/{n}"))
    except Exception as error:
        st.session_state.pop("geodiffusion-result", None)
        show_error(error)
    else:
        st.session_state["geodiffusion-result"] = page.result(out, checkpoint)
if result := st.session_state.get("geodiffusion-result"):
    st.code(result.output.prompt, language=None)
    st.markdown(actions.summary(result.output))
    images, captions = zip(*actions.gallery_items(result, show_boxes), strict=True)
    st.image(list(images), caption=list(captions))
    st.download_button("Export as COCO dataset", actions.export_bytes(result), "geodiffusion_coco.zip",
                       mime="application/zip")
embed_section("geodiffusion")
