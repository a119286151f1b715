"""Tag2Text: image tagging and tag-guided captioning (registration only; no heavy imports)."""

from shared.registry import Demo, Paper, WeightSet

PAPER = Paper(
    title="Tag2Text: Guiding Vision-Language Model via Image Tagging",
    authors=("Xinyu Huang, Youcai Zhang, Jinyu Ma, Weiwei Tian, Rui Feng, Yuejie Zhang, Yaqian Li, Yandong Guo, "
             "Lei Zhang"),
    arxiv_id="2303.05657",
    code_url="https://github.com/xinyu1205/recognize-anything",
    abstract=(
        "Tag2Text learns image tagging from tags parsed out of paired text, and uses the recognised tags to guide "
        "a vision-language model: a Swin encoder, a recognition decoder over 3,429 tags, and a caption decoder "
        "conditioned on the tags, so users can also steer the caption with their own tags."
    ),
)

DEMO = Demo(
    id="tag2text",
    title="Tag2Text: tags and captions",
    tagline="Upload images; get tags with scores and a caption you can steer with your own tags.",
    summary="Tag images and caption them, steered by your own tags",
    paper=PAPER,
    emoji="🏷️",
    space_colours=("blue", "indigo"),
    suggested_hardware="t4-small",
    weight_sets=(
        WeightSet("tag2text-swin-14m", "Official Tag2Text Swin-B checkpoint (14M images).",
                  repo_id="xinyu1205/recognize_anything_model", allow_patterns=("tag2text_swin_14m.pth",),
                  size_bytes=4_478_705_095, license="MIT"),
    ),
    pipeline="apps.tag2text.pipeline:Tag2TextPipeline",
    page="apps.tag2text.page",
    api="apps.tag2text.api",
    preview="apps.tag2text.actions:preview",
    about="upload images (one, several, or a zip); get tags with scores and a caption you can steer with your own "
          "tags; 3× faster than the official code on a CPU, same tags.",
    weights_give="the tags and captions",
    requirements=("transformers>=4.50",),
)
