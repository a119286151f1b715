"""The ICLR 2024 paper catalog shown on the landing page (data in catalog.json, shipped with the package)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from shared.errors import UserInputError
from shared.validation import kind_of

CATALOG_PATH = Path(__file__).with_name("catalog.json")
MAX_QUERY_CHARS = 200
MAX_QUERY_WORDS = 20


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


def check_query(query: str | None = "", only_demos: bool = False) -> list[str]:
    """The query's words, lowercased; ``UserInputError`` for a query that is not text, too long or too many words,
    or an ``only_demos`` that is not true/false."""
    query = "" if query is None else query
    if not isinstance(query, str):
        raise UserInputError(f"The search must be text, not {kind_of(query)}.", argument="query")
    if len(query) > MAX_QUERY_CHARS:
        raise UserInputError(f"The search is {len(query):,} characters long; the limit is {MAX_QUERY_CHARS}.",
                             argument="query")
    words = query.lower().split()
    if len(words) > MAX_QUERY_WORDS:
        raise UserInputError(f"The search has {len(words)} words; use at most {MAX_QUERY_WORDS}.", argument="query")
    if not isinstance(only_demos, bool):
        raise UserInputError(f"only_demos must be true or false, not {kind_of(only_demos)}.", argument="only_demos")
    return words


def search(query: str = "", only_demos: bool = False) -> list[CatalogEntry]:
    """Entries whose title or abstract contains every word of ``query`` (case-insensitive); checked first."""
    words = check_query(query, only_demos)
    return [
        e for e in load_catalog()
        if (not only_demos or e.demo) and all(w in f"{e.title} {e.abstract}".lower() for w in words)
    ]
