"""CodeSage: search code by meaning with the official encoders (registration only; its pages come from api.py)."""

from shared.registry import Demo, Paper, WeightSet

# The released repositories: config.json, model.safetensors and the tokenizer's JSON files and merges.txt (their
# remote code, *.py, is never downloaded). Sizes from the released configs (fp32), not measured. "main" is pinned to
# the commit the first download resolves (shared/weights.py's lock file).
FILES = ("*.json", "merges.txt", "model.safetensors")

DEMO = Demo(
    id="codesage",
    title="CodeSage: search code by meaning",
    tagline="Ask in words or paste code; CodeSage's embeddings find the snippets of your code that do that.",
    summary="Search your code by what it does",
    paper=Paper(
        title="Code Representation Learning at Scale",
        authors="Dejiao Zhang, Wasi Uddin Ahmad, Ming Tan, Hantian Ding, Ramesh Nallapati, Dan Roth, Xiaofei Ma, "
                "Bing Xiang",
        arxiv_id="2402.01935",
        code_url="https://github.com/amazon-science/CodeSage",
        abstract="CodeSage encoders are pretrained on code with identifier deobfuscation and masked language "
                 "modelling, then with bimodal contrastive learning on text-code pairs using hard negatives and hard "
                 "positives; their embeddings search code from a question or from other code.",
    ),
    emoji="🔎",
    weight_sets=(
        WeightSet("codesage-small", "Official CodeSage-small (130M parameters).", repo_id="codesage/codesage-small",
                  allow_patterns=FILES, size_bytes=509_000_000, license="Apache-2.0"),
        WeightSet("codesage-base", "Official CodeSage-base (356M parameters).", repo_id="codesage/codesage-base",
                  allow_patterns=FILES, size_bytes=1_415_000_000, license="Apache-2.0"),
        WeightSet("codesage-large", "Official CodeSage-large (1.3B parameters).", repo_id="codesage/codesage-large",
                  allow_patterns=FILES, size_bytes=5_245_000_000, license="Apache-2.0"),
    ),
    pipeline="apps.codesage.pipeline:CodeSagePipeline",
    api="apps.codesage.api",
    about="ask in words what the code should do, or paste a piece of code, and give it code to search (pasted, "
          "source files or a zip of a repository); the snippets are ranked by the cosine similarity of the official "
          "embeddings, each with its file and lines and its score as a bar. Agents call `search_code` and "
          "`embed_code`.",
    weights_give="the search (the encoder)",
    requirements=("tokenizers>=0.15",),
)
