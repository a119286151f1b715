"""CodeSage's input checks, torch-free (``CodeSagePipeline.check_inputs`` is ``check_inputs``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from apps.codesage.corpus import NO_CODE, Corpus, read_corpus
from shared.errors import UserInputError, named_argument
from shared.validation import check_number, check_text

MAX_QUERY_CHARS = 4000
MAX_CODE_CHARS = 200_000  # pasted code
MAX_TOP_K = 50


@dataclass(frozen=True)
class CodeSageInputs:
    query: str
    corpus: Corpus | None  # None where only the fields were checked (``read=False``)
    top_k: int


def check_query(query, what: str = "query") -> str:
    if query is None or (isinstance(query, str) and not query.strip()):
        raise UserInputError(f"No {what}: write what the code should do, or paste a piece of code.", argument=what)
    with named_argument(what):
        return check_text(query, f"The {what}", MAX_QUERY_CHARS, allow_newlines=True)


def check_inputs(query, code: str | None = None, files: list[Path] | None = None, top_k=5, *,
                 read: bool = True) -> CodeSageInputs:
    """Every check of a search, without weights; ``read=False``: the fields only, the files are read later."""
    checked = check_query(query)
    if code is not None:
        with named_argument("code"):
            code = check_text(code, "The code", MAX_CODE_CHARS, allow_newlines=True)
    k = int(check_number(top_k, "top_k", 1, MAX_TOP_K, whole=True, argument="top_k"))
    files = [f for f in (files or []) if f is not None]
    if not files and not (code and code.strip()):
        raise UserInputError(NO_CODE.format(""), argument="code")
    return CodeSageInputs(checked, read_corpus(code, files) if read else None, k)
