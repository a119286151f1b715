"""MERT: music understanding on the official MERT-v1-95M encoder and the Music-Descriptor probing heads
(registration only; no heavy imports). Its page and API come from its declaration (api.py)."""

from shared.registry import Demo, Paper, WeightSet

# The ten heads of the Space m-a-p/Music-Descriptor (its MERT_BEST_LAYER_IDX, in its output order): the layer each
# reads, index L of the 12 transformer layers (hidden_states[L + 1]), or "all" (a learned softmax weighting). Here,
# beside the weight set whose files they name (a Space built for another demo imports this file alone).
BEST_LAYER: dict[str, int | str] = {"GS": 8, "MTGInstrument": "all", "MTGGenre": 7, "MTGTop50": 6, "MTGMood": 6,
                                    "NSynthI": 6, "NSynthP": 1, "VocalSetS": 2, "VocalSetT": 9, "EMO": 5}
HEADS_FOLDER = "Prediction_Head/best-layer-MERT-v1-95M"  # in the Space's repository

DEMO = Demo(
    id="mert",
    title="MERT: describe music",
    tagline="Upload music; MERT's probing heads name its key, genre, mood, instruments and more, over time too.",
    summary="Key, genre, mood and instruments of your music",
    paper=Paper(
        title="MERT: Acoustic Music Understanding Model with Large-Scale Self-supervised Training",
        authors="Yizhi Li, Ruibin Yuan, Ge Zhang, Yinghao Ma, Xingran Chen, Hanzhi Yin, Chenghao Xiao, Chenghua Lin, "
                "Anton Ragni, Emmanouil Benetos, Norbert Gyenge, Roger Dannenberg, Ruibo Liu, Wenhu Chen, Gus Xia, "
                "Yemin Shi, Wenhao Huang, Zili Wang, Yike Guo, Jie Fu",
        arxiv_id="2306.00107",
        code_url="https://github.com/yizhilll/MERT",
        abstract="MERT is a self-supervised acoustic music model trained with an acoustic (RVQ-VAE) and a musical "
                 "(CQT) teacher; probing heads on its layers recognise key, genre, mood, instruments, pitch, singers, "
                 "vocal techniques and emotion.",
    ),
    emoji="🎵",
    space_colours=("purple", "pink"),
    weight_sets=(
        # The Space m-a-p/Music-Descriptor carries both the encoder (its copy of m-a-p/MERT-v1-95M: the same
        # pytorch_model.bin and config.json; its preprocessor does not normalise, as pretraining did not) and the heads.
        WeightSet("music-descriptor", "Official MERT-v1-95M encoder and the Music-Descriptor probing heads.",
                  repo_id="m-a-p/Music-Descriptor", repo_type="space",
                  revision="3462d760643cbc4b9c7a11f5eaec4915aa468470",
                  allow_patterns=("MERT-v1-95M/config.json", "MERT-v1-95M/preprocessor_config.json",
                                  "MERT-v1-95M/pytorch_model.bin",
                                  *(f"{HEADS_FOLDER}/{task}{suffix}" for task in BEST_LAYER
                                    for suffix in (".ckpt", ".id2class.json"))),
                  size_bytes=394_249_017, license="CC-BY-NC-4.0"),
    ),
    pipeline="apps.mert.pipeline:MERTPipeline",
    preview="apps.mert.examples:preview",
    about="upload or record music, or click an example; the official encoder and probing heads name its key, "
          "genre, mood, instruments and more, with score bars, emotion on arousal and valence axes, and a timeline "
          "window by window. Its page is the form made from its declaration ([adding a demo](docs/adding-a-demo.md)).",
    weights_give="the descriptions (encoder and heads)",
    api="apps.mert.api",
    requirements=("transformers>=4.50", "soundfile>=0.12", "soxr>=0.3"),
)
