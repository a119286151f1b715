"""Tag2Text sizes and inference defaults: the official full-size config and its JSON round trip."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

ASSETS = Path(__file__).resolve().parent / "assets"
TAG_LIST_FILE = ASSETS / "tag2text_tag_list.txt"
VOCAB_FILE = ASSETS / "bert_base_uncased_vocab.txt"
CONFIG_NAME = "config.json"  # beside a checkpoint that is not the full-size official model

OFFICIAL_THRESHOLD = 0.68
OFFICIAL_CLASS_THRESHOLDS = {2701: 0.7, 2828: 0.7, 1167: 0.7}  # person, man, woman
OFFICIAL_DELETE_TAG_INDEX = (127, 2961, 3351, 3265, 3338, 3355, 3359)  # quarter, back, two .. five, one


def official_tag_list() -> tuple[str, ...]:
    # The file has no trailing newline and 114 duplicated names: the index is what matters, keep every line.
    return tuple(TAG_LIST_FILE.read_text(encoding="utf-8").split("\n"))


@dataclass(frozen=True)
class BertSize:
    """One BLIP-style BERT stack ("med_config" / "q2l_config")."""

    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    vocab_size: int = 30524
    max_position_embeddings: int = 512
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0


@dataclass(frozen=True)
class Tag2TextConfig:
    image_size: int = 384
    patch_size: int = 4
    embed_dim: int = 128
    depths: tuple[int, ...] = (2, 2, 18, 2)
    num_heads: tuple[int, ...] = (4, 8, 16, 32)
    window_size: int = 12
    mlp_ratio: float = 4.0
    text: BertSize = BertSize()
    tagging: BertSize = BertSize(num_hidden_layers=2, num_attention_heads=4)
    tags: tuple[str, ...] = field(default_factory=official_tag_list)
    threshold: float = OFFICIAL_THRESHOLD
    class_thresholds: dict[int, float] = field(default_factory=lambda: dict(OFFICIAL_CLASS_THRESHOLDS))
    delete_tag_index: tuple[int, ...] = OFFICIAL_DELETE_TAG_INDEX
    prompt: str = "a picture of "
    max_tag_tokens: int = 40
    num_beams: int = 3
    max_length: int = 50
    min_length: int = 10

    @property
    def vision_width(self) -> int:
        return self.embed_dim * 2 ** (len(self.depths) - 1)

    @property
    def num_tags(self) -> int:
        return len(self.tags)

    def to_json(self) -> str:
        data = asdict(self)
        data["class_thresholds"] = {str(k): v for k, v in self.class_thresholds.items()}
        return json.dumps(data, indent=1)

    @classmethod
    def from_json(cls, text: str) -> Tag2TextConfig:
        data = json.loads(text)
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"Unknown Tag2Text config fields: {', '.join(unknown)}")
        for key in ("text", "tagging"):
            if key in data:
                data[key] = BertSize(**data[key])
        for key in ("depths", "num_heads", "tags", "delete_tag_index"):
            if key in data:
                data[key] = tuple(data[key])
        if "class_thresholds" in data:
            data["class_thresholds"] = {int(k): float(v) for k, v in data["class_thresholds"].items()}
        return cls(**data)

    @classmethod
    def load(cls, folder: Path) -> Tag2TextConfig:
        """``config.json`` in ``folder`` if there is one, else the official full-size config."""
        path = Path(folder) / CONFIG_NAME
        return cls.from_json(path.read_text(encoding="utf-8")) if path.is_file() else cls()

    @classmethod
    def from_shapes(cls, shapes: Mapping[str, Sequence[int]]) -> Tag2TextConfig:
        """The sizes of the model whose state dict has these tensor ``shapes`` (our key names, buffers included).

        Widths, depths, Swin heads and window, vocabulary and tag count are read from the shapes; the image size from
        the first shifted-window mask (the official 384 when the file has none). BERT head counts are not in any
        shape: they follow the official head widths (64 for the text stacks, 192 for the tagging head; one head when
        a stack is narrower). The official checkpoint gives exactly ``Tag2TextConfig()`` (tested on its key list).
        """
        def shape(key: str) -> Sequence[int]:
            if key not in shapes:
                raise ValueError(f"the weights have no {key}; they are not a Tag2Text checkpoint")
            return shapes[key]

        def count(prefix: str) -> int:  # the number of ``prefix.<n>.`` sub-modules
            numbers = {int(k[len(prefix) + 1:].split(".", 1)[0]) for k in shapes if k.startswith(prefix + ".")}
            return max(numbers) + 1 if numbers else 0

        embed_dim, _, patch_size, _ = shape("visual_encoder.patch_embed.proj.weight")
        stages = count("visual_encoder.layers")
        depths = tuple(count(f"visual_encoder.layers.{i}.blocks") for i in range(stages))
        tables = [shape(f"visual_encoder.layers.{i}.blocks.0.attn.relative_position_bias_table") for i in range(stages)]
        window_size = (math.isqrt(tables[0][0]) + 1) // 2  # (2w - 1)^2 rows
        image_size = cls.image_size
        masks = [(i, shapes[k][0]) for i in range(stages) for j in range(depths[i])
                 if (k := f"visual_encoder.layers.{i}.blocks.{j}.attn_mask") in shapes]
        if masks:  # (windows, w^2, w^2) at stage i: resolution sqrt(windows) * w
            stage, windows = masks[0]
            image_size = math.isqrt(windows) * window_size * patch_size * 2 ** stage

        def bert(prefix: str, width: int, head_width: int, **sizes) -> BertSize:
            hidden_size = width
            intermediate_size = shape(f"{prefix}.encoder.layer.0.intermediate.dense.weight")[0]
            heads = max(1, hidden_size // head_width)
            if hidden_size % heads:
                raise ValueError(f"{prefix} is {hidden_size} wide, which {heads} heads do not divide; "
                                 f"put a {CONFIG_NAME} with its sizes beside the checkpoint")
            return BertSize(hidden_size=hidden_size, num_hidden_layers=count(f"{prefix}.encoder.layer"),
                            num_attention_heads=heads, intermediate_size=intermediate_size, **sizes)

        vocab_size, text_width = shape("text_decoder.bert.embeddings.word_embeddings.weight")
        text = bert("text_decoder.bert", text_width, 64, vocab_size=vocab_size,
                    max_position_embeddings=shape("text_decoder.bert.embeddings.position_embeddings.weight")[0])
        num_tags, tag_width = shape("label_embed.weight")
        tags = official_tag_list()
        if num_tags != len(tags):
            raise ValueError(f"the weights have {num_tags} tags, not the official {len(tags)}: put a {CONFIG_NAME} "
                             "naming them beside the checkpoint")
        return cls(image_size=image_size, patch_size=patch_size, embed_dim=embed_dim, depths=depths,
                   num_heads=tuple(table[1] for table in tables), window_size=window_size,
                   mlp_ratio=shape("visual_encoder.layers.0.blocks.0.mlp.fc1.weight")[0] / embed_dim,
                   text=text, tagging=bert("tagging_head", tag_width, 192), tags=tags)

