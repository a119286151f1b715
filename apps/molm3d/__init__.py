"""3D-MoLM: question answering about 3D molecules (registration only; no heavy imports)."""

from shared.registry import Demo, Paper, WeightSet

PAPER = Paper(
    title="Towards 3D Molecule-Text Interpretation in Language Models",
    authors="Sihang Li, Zhiyuan Liu, Yanchen Luo, Xiang Wang, Xiangnan He, Kenji Kawaguchi, Tat-Seng Chua, Qi Tian",
    arxiv_id="2401.13923",
    code_url="https://github.com/lsh0520/3D-MoLM",
    abstract=(
        "3D-MoLM lets a language model read 3D molecular structure: a Uni-Mol encoder embeds a conformer, a "
        "Q-Former turns it into a few query tokens projected into Llama-2, and instruction tuning teaches the "
        "model to describe molecules and answer property questions."
    ),
)

# The files the loader reads (listed, not globbed, so a Space's preload_from_hub fetches just these).
_LLAMA_FILES = tuple(f"llama-2-7b-hf/{name}" for name in (
    "config.json", "tokenizer.model", "pytorch_model.bin.index.json",
    "pytorch_model-00001-of-00002.bin", "pytorch_model-00002-of-00002.bin",
))

DEMO = Demo(
    id="molm3d",
    title="3D-MoLM: ask about a molecule",
    tagline="Give a SMILES or SDF, see its 3D conformer, and ask questions answered beside RDKit reference values.",
    summary="Ask questions about a molecule and its 3D conformer",
    paper=PAPER,
    emoji="🧬",
    space_colours=("purple", "pink"),
    suggested_hardware="a10g-large",
    weight_sets=(
        WeightSet("generalist", "Official 3D-MoLM generalist checkpoint with Uni-Mol and Llama-2-7B.",
                  repo_id="Sihangli/3D-MoLM",
                  allow_patterns=("generalist/generalist.ckpt", "uni-mol/mol_pre_no_h_220816.pt", *_LLAMA_FILES),
                  size_bytes=14_000_000_000, license="apache-2.0"),
    ),
    pipeline="apps.molm3d.pipeline:MoLM3DPipeline",
    page="apps.molm3d.page",
    api="apps.molm3d.api",
    works_without_weights="the conformer, its 2D and 3D views and the RDKit table",
    preview="apps.molm3d.actions:preview",
    about="give a SMILES or an SDF; see the RDKit conformer in 2D and 3D and RDKit's reference values, and ask the "
          "model for a description, a property or anything else; numeric answers come beside RDKit's value.",
    weights_give="the answers (Llama-2-7B, Uni-Mol, Q-Former + LoRA)",
    requirements=("transformers>=4.50", "rdkit>=2024.3", "sentencepiece>=0.2"),
    quantizes=True,  # DEMOHUB_QUANTIZE=int8|int4: the language model's weights on a CPU (shared/quantize.py)
    cpu_dtype="bfloat16",  # a 7B model in fp32 needs ~28 GB of RAM; bf16 halves it
)
