"""PraX: pragmatic regex synthesis from examples (registration only; no heavy imports)."""

from shared.registry import Demo, Paper, WeightSet

# Official repos hold a pickled pytorch_model.bin (read with weights_only=True, converted to safetensors once).
_BYT5_FILES = ("config.json", "pytorch_model.bin")

PAPER = Paper(
    title="Generating Pragmatic Examples to Train Neural Program Synthesizers",
    authors="Saujas Vaduguru, Daniel Fried, Yewen Pu",
    arxiv_id="2311.05740",
    code_url="https://github.com/saujasv/generating-pragmatic-examples",
    abstract=(
        "PraX amortizes pragmatic (RSA) inference for programming-by-example: listener and speaker models "
        "play a self-play game, pragmatic inference picks informative training examples, and the listener "
        "trained on them recovers the intended regular expression more often than one trained on random examples."
    ),
)

DEMO = Demo(
    id="prax",
    title="PraX: regexes from examples",
    tagline="Type strings that should and should not match; a search and two listeners, literal and pragmatic, guess "
            "your regex.",
    summary="Give example strings and get the regex you meant",
    paper=PAPER,
    emoji="🔤",
    space_colours=("yellow", "red"),
    weight_sets=(
        WeightSet("pragmatic-ft-listener", "Official PraX listener (ByT5-small, self-play pragmatic training).",
                  repo_id="pragmatic-programs/pragmatic-ft-listener", allow_patterns=_BYT5_FILES,
                  size_bytes=1_200_000_000, license="unknown (no license stated upstream)"),
        WeightSet("listener-suffix-idx-300k", "Official literal listener (ByT5-small, 300k random specs).",
                  repo_id="pragmatic-programs/listener-suffix-idx-300k", allow_patterns=_BYT5_FILES,
                  size_bytes=1_200_000_000, license="unknown (no license stated upstream)"),
        WeightSet("human-data-ft-listener", "Official listener fine-tuned on 400 human-written specs (HFT).",
                  repo_id="pragmatic-programs/human-data-ft-listener", allow_patterns=_BYT5_FILES,
                  size_bytes=1_200_000_000, license="unknown (no license stated upstream)"),
        WeightSet("tiny-pragmatic", "Our small listener trained with PraX self-play on CPU (bundled).",
                  license="Apache-2.0"),
        WeightSet("tiny-literal", "Our small literal listener trained on random examples (bundled).",
                  license="Apache-2.0"),
    ),
    pipeline="apps.prax.pipeline:PraxPipeline",
    page="apps.prax.page",
    api="apps.prax.api",
    preview="apps.prax.actions:preview",
    about="type strings that should and should not match; a search of the paper's program space answers at once, "
          "then a literal and a pragmatic listener rank its regexes with their own, re-guessing at every change. "
          "Suggest the most informative next example, or play the paper's game: teach the listeners a regex they "
          "cannot see.",
    weights_give="the paper's ByT5 listeners",
    requirements=("transformers>=4.50", "regex>=2024.0", "greenery>=4.2"),
)
