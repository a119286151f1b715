"""Tag2Text sizes and inference defaults: the official full-size config and its JSON round trip."""

from __future__ import annotations

import json
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

