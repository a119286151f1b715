"""GeoDiffusion on the Streamlit hub: a layout (JSON) and a checkpoint in, images with the boxes drawn over them."""

import json

import streamlit as st

from apps.geodiffusion.export import draw_layout
from apps.geodiffusion.page import COCO_EXAMPLES, NUIMAGES_EXAMPLES, GeoDiffusionPage
from apps.streamlit_ui import demo_context, paper_card, show_error, weights_select

ctx = demo_context("geodiffusion")
page = GeoDiffusionPage(ctx)
paper_card("geodiffusion")
checkpoint = weights_select(ctx, key="checkpoint")
examples = {f"{i + 1}. {name}": layout for i, (layout, name) in enumerate(NUIMAGES_EXAMPLES + COCO_EXAMPLES)}
example = st.selectbox("Start from an example layout", list(examples))
layout_json = st.text_area('Layout: {"camera": ..., "bbox": [[label, x1, y1, x2, y2], ...]} in [0, 1]',
                           json.dumps(examples[example]), key=f"layout-{example}", height=160)
seed, steps, cfg = st.columns(3)
seed = seed.number_input("Seed", 0, 2**31 - 1, 0)
steps = steps.number_input("Steps", 1, 200, 50)
cfg = cfg.number_input("Guidance scale (cfg)", 0.0, 30.0, 5.0)
show_boxes = st.checkbox("Draw the layout boxes over the images", value=True)
if st.button("Generate", type="primary"):
    try:
        bar = st.progress(0.0, text="Denoising")
        out = page.generate(layout_json, checkpoint, seed, steps, cfg,
                            on_step=lambda i, n: bar.progress(min(i / max(n, 1), 1.0), text=f"Denoising {i}/{n}"))
    except Exception as error:
        show_error(error)
    else:
        st.code(out.prompt, language=None)
        st.image([draw_layout(im, out.layout) if show_boxes else im for im in out.images],
                 caption=[f"seed {out.seed}"] * len(out.images))
