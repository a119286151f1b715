"""Plain records describing papers, demos and their weight sets (no heavy imports, no apps/ imports)."""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.api import Endpoint, attribute


@dataclass(frozen=True)
class WeightSet:
    """One loadable set of weights: a Hub repo at a pinned revision, or a folder bundled in checkpoints/."""

    name: str
    description: str
    repo_id: str | None = None
    revision: str = "main"
    repo_type: str = "model"  # or "space": a Space's repository that carries the released files
    allow_patterns: tuple[str, ...] = ()
    size_bytes: int = 0
    license: str = ""  # shown by `demohub list`

    @property
    def bundled(self) -> bool:
        """Shipped in checkpoints/ (ours, not from the Hub)."""
        return self.repo_id is None

    @property
    def size_text(self) -> str:
        return human_bytes(self.size_bytes)


@dataclass(frozen=True)
class Paper:
    title: str
    authors: str
    arxiv_id: str
    abstract: str = ""
    code_url: str = ""
    venue: str = "ICLR 2024"

    @property
    def url(self) -> str:
        return f"https://arxiv.org/abs/{self.arxiv_id}"


SUMMARY_CHARS = 60  # the Hugging Face Hub's limit on a Space's short_description


@dataclass(frozen=True)
class Demo:
    """A registered demo. ``pipeline`` and ``page`` are import paths, imported only when used."""

    id: str
    title: str
    tagline: str
    summary: str  # a whole phrase of at most SUMMARY_CHARS: the demo's Space's short_description
    paper: Paper
    weight_sets: tuple[WeightSet, ...]
    pipeline: str  # "apps.<id>.pipeline:ClassName"
    page: str = ""  # "apps.<id>.page" (module with build(ctx) -> gr.Blocks); "": the page made from ``api``
    api: str = ""  # "apps.<id>.api" (module declaring ENDPOINTS, ``shared.api``): the demo's API functions
    emoji: str = "🧪"
    space_colours: tuple[str, str] = ("blue", "green")  # its Space card's colorFrom and colorTo
    suggested_hardware: str = "cpu-basic"
    requirements: tuple[str, ...] = field(default_factory=tuple)
    cpu_dtype: str | None = None  # e.g. "bfloat16" for models too large for fp32 in RAM
    gpu_dtype: str | None = None  # e.g. "float16" where the official weights were released for fp16 inference
    quantizes: bool = False  # its from_pretrained takes quantization="int8"|"int4" (DEMOHUB_QUANTIZE, on a CPU)
    works_without_weights: str = ""  # what the page does with no weights at all, a short phrase for the hub's card
    about: str = ""  # the README's paragraph on the demo (Markdown): what a visitor does there and gets
    weights_give: str = "the model's answers"  # what its official weights add, for the README's offline table
    preview: str = ""  # "module:function" -> HTML: the hub card's picture, made from the demo's own editor or examples;
    # "": the card draws the demo's title (apps/views.py)

    def __post_init__(self):
        if not 0 < len(self.summary) <= SUMMARY_CHARS:
            raise ValueError(f"{self.id}: summary must be 1 to {SUMMARY_CHARS} characters (a Space's "
                             f"short_description), not {len(self.summary)}")

    @property
    def name(self) -> str:
        """The paper's short name, the title before its colon ("PraX"): the hub's navigation shows it."""
        return self.title.partition(":")[0].strip()

    def weight_set(self, name: str | None = None) -> WeightSet:
        if name is None:
            return self.weight_sets[0]
        for ws in self.weight_sets:
            if ws.name == name:
                return ws
        names = ", ".join(ws.name for ws in self.weight_sets)
        from shared.errors import UserInputError

        raise UserInputError(f"Unknown weight set {name!r} for {self.id}; choose one of: {names}.", argument="weights")

    def pipeline_class(self):
        return attribute(self.pipeline)

    @property
    def page_module(self) -> str:
        """The module whose ``build(ctx)`` makes the demo's Gradio page: its own, else the form made from its
        declared API functions (``apps.forms``); "" when it has neither (the hub shows "coming soon")."""
        return self.page or ("apps.forms" if self.api else "")

    def endpoints(self) -> tuple[Endpoint, ...]:
        """The demo's declared API functions (importing its api module: its checks, no torch)."""
        return tuple(attribute(f"{self.api}:ENDPOINTS")) if self.api else ()

    def preview_html(self) -> str:
        """The card's picture ("" when the demo declares none)."""
        return attribute(self.preview)() if self.preview else ""


def human_bytes(n: int) -> str:
    if n <= 0:
        return "unknown size"
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}".replace(".00 ", " ")
        n /= 1000
    raise AssertionError("unreachable")
