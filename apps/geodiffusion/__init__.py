"""GeoDiffusion: layout-to-image generation (registration only; no heavy imports)."""

from shared.registry import Demo, Paper, WeightSet

PAPER = Paper(
    title="GeoDiffusion: Text-Prompted Geometric Control for Object Detection Data Generation",
    authors="Kai Chen, Enze Xie, Zhe Chen, Yibo Wang, Lanqing Hong, Zhenguo Li, Dit-Yan Yeung",
    arxiv_id="2306.04607",
    code_url="https://github.com/KaiChen1998/GeoDiffusion",
    abstract=(
        "GeoDiffusion fine-tunes Stable Diffusion to read a layout from its text prompt: boxes become discrete "
        "location tokens, together with camera view, time and weather, so generated images follow the geometry "
        "and can serve as training data for object detectors."
    ),
)

_SD_FILES = ("model_index.json", "generation_config.json", "scheduler/*", "tokenizer/*", "text_encoder/*",
             "unet/*", "vae/*")

DEMO = Demo(
    id="geodiffusion",
    title="GeoDiffusion: layouts to images",
    tagline="Draw labelled boxes, pick camera, time and weather, and generate detection-ready images.",
    paper=PAPER,
    emoji="🚗",
    suggested_hardware="a10g-small",
    weight_sets=tuple(
        WeightSet(name, f"Official GeoDiffusion checkpoint {name}.", repo_id=f"KaiChen1998/geodiffusion-{name}",
                  allow_patterns=_SD_FILES, size_bytes=size, license="apache-2.0")
        for name, size in (
            ("nuimages-256x256", 5_000_000_000),
            ("nuimages-512x512", 5_500_000_000),
            ("nuimages-time-weather-512x512", 5_500_000_000),
            ("coco-stuff-256x256", 5_000_000_000),
            ("coco-stuff-512x512", 5_000_000_000),
        )
    ),
    pipeline="apps.geodiffusion.pipeline:GeoDiffusionPipeline",
    page="apps.geodiffusion.page",
    requirements=("diffusers>=0.30", "transformers>=4.50"),
)
