"""The ICLR 2024 paper catalog shown on the landing page (data in catalog.json, shipped with the package)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

CATALOG_PATH = Path(__file__).with_name("catalog.json")


@dataclass(frozen=True)
class CatalogEntry:
    id: str
    title: str
    abstract: str
    arxiv_id: str = ""
    code_url: str = ""
    demo: str | None = None

    @property
    def url(self) -> str:
        return f"https://arxiv.org/abs/{self.arxiv_id}" if self.arxiv_id else ""

    def as_dict(self) -> dict:
        return {"id": self.id, "title": self.title, "abstract": self.abstract, "arxiv_id": self.arxiv_id,
                "url": self.url, "code_url": self.code_url, "demo": self.demo}


@lru_cache(maxsize=1)
def load_catalog() -> tuple[CatalogEntry, ...]:
    rows = json.loads(CATALOG_PATH.read_text(encoding="utf-8"))
    fields = CatalogEntry.__dataclass_fields__
    return tuple(CatalogEntry(**{k: v for k, v in row.items() if k in fields}) for row in rows)


def search(query: str = "", only_demos: bool = False) -> list[CatalogEntry]:
    """Entries whose title or abstract contains every word of ``query`` (case-insensitive)."""
    words = query.lower().split()
    return [
        e for e in load_catalog()
        if (not only_demos or e.demo) and all(w in f"{e.title} {e.abstract}".lower() for w in words)
    ]
