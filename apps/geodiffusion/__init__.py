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
    summary="Draw labelled boxes and generate detection-ready images",
    paper=PAPER,
    emoji="🚗",
    space_colours=("green", "blue"),
    suggested_hardware="a10g-small",
    weight_sets=tuple(
        WeightSet(name, f"Official GeoDiffusion checkpoint {name}: {what}.", repo_id=f"KaiChen1998/geodiffusion-{name}",
                  allow_patterns=_SD_FILES, size_bytes=size, license="mit")
        # Sizes: UNet 3.44 GB + VAE 0.17 GB + text encoder 0.69 GB (256-grid) or 1.30 GB (512-grid), fp32 .bin.
        for name, size, what in (
            ("nuimages-256x256", 4_300_000_000, "nuImages driving scenes, 256x256, 256x256 location grid"),
            ("nuimages-512x512", 4_910_000_000, "nuImages driving scenes, 512x512, 512x512 location grid"),
            ("nuimages-time-weather-512x512", 4_910_000_000,
             "nuImages driving scenes with time of day and weather, 512x512"),
            ("coco-stuff-256x256", 4_300_000_000, "COCO-Stuff scenes, 256x256, 256x256 location grid"),
            ("coco-stuff-512x512", 4_300_000_000, "COCO-Stuff scenes, 512x512 images, 256x256 location grid"),
        )
    ),
    pipeline="apps.geodiffusion.pipeline:GeoDiffusionPipeline",
    page="apps.geodiffusion.page",
    api="apps.geodiffusion.api",
    works_without_weights="layouts and the prompt the model reads",
    preview="apps.geodiffusion.actions:preview",
    about="draw labelled boxes, pick camera, time and weather, read the exact prompt the model reads, and "
          "generate detection-ready images (optionally with Epsilon Scaling, or a 2.4-4.8× faster sampler); export "
          "them as a COCO dataset.",
    weights_give="the images",
    requirements=("diffusers>=0.30", "transformers>=4.50", "accelerate>=0.30"),
    gpu_dtype="float16",  # Stable Diffusion 1.5 fine-tunes, released and evaluated in fp16
)
