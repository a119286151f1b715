"""CodeSage's API functions, declared once (``shared.api``); its pages are the forms made from this declaration."""

from __future__ import annotations

from pathlib import Path

from apps.codesage import checks, corpus
from shared.api import Endpoint, Example, Input
from shared.context import DemoContext
from shared.uploads import api_files

EXAMPLES = ["apps/codesage/examples/search.py", "apps/codesage/examples/files.py", "apps/codesage/examples/web.js"]
WEIGHTS = Input("weights", "weights", "the CodeSage weight set (those downloaded here)", default=None,
                example="codesage-small")
PASTED = (Path(__file__).parent / "examples" / "strings.py").read_text(encoding="utf-8")  # a paste example

ENDPOINTS = (
    Endpoint(
        name="search_code",
        summary="Search code by meaning with CodeSage: the snippets of the given code (pasted, source files or zips of "
                "them) ranked by the cosine similarity of their embeddings to a question in words or a piece of code.",
        inputs=(
            Input("query", "text", "what the code should do, in words, or a piece of code to find others like it",
                  max_length=checks.MAX_QUERY_CHARS, example="find an item in a sorted list", multiline=True,
                  label="What the code should do, or a piece of code",
                  help="A question in words (\"read a CSV file\") or code to find code like it."),
            Input("code", "text", "code to search, pasted (cut into snippets at top-level blocks); \"\" for none",
                  default="", max_length=checks.MAX_CODE_CHARS, example=PASTED, multiline=True,
                  label="Code to search", help="Paste code here, or upload files below, or both."),
            Input("files", "files", f"source files and/or zip archives of a repository (at most {corpus.MAX_FILES} "
                  f"source files, {corpus.MAX_FILE_BYTES // 1024} KB each, {corpus.MAX_SNIPPETS:,} snippets); over "
                  "MCP send each as a data URI; null for none", default=None, example=EXAMPLES,
                  label="Source files or a zip of a repository",
                  help=f"Source files or zips of them: at most {corpus.MAX_FILES} files and "
                       f"{corpus.MAX_SNIPPETS:,} snippets."),
            Input("top_k", "integer", "how many snippets to return, best first", default=5, minimum=1,
                  maximum=checks.MAX_TOP_K, example=3, label="Snippets to show",
                  help=f"How many of the best matches to show (1 to {checks.MAX_TOP_K})."),
            WEIGHTS,
        ),
        returns='{"matches": [{"file", "start", "end", "score", "code"}] best first (score: cosine similarity), '
                '"searched", "embedded" (the others kept from an earlier search), "notes"}',
        run="apps.codesage.api:search_code",
        check="apps.codesage.api:check_search_code",
        view="apps.codesage.api:as_report",
        examples=(
            Example("Find a search in a sorted list", {"query": "find an item in a sorted list", "files": EXAMPLES}),
            Example("Code like this piece of code", {"files": EXAMPLES, "query": "for (const item of list) { if "
                                                                                  "(item.id === id) return item; }"}),
            Example("Pasted code, asked in words", {"query": "check whether a word reads the same backwards",
                                                    "code": PASTED}),
        ),
    ),
    Endpoint(
        name="embed_code",
        summary="The CodeSage embedding of a piece of code or a question (unit length; cosine similarity is the dot "
                "product), for agents that keep their own index.",
        inputs=(
            Input("code", "text", "the code or the words to embed", max_length=checks.MAX_QUERY_CHARS,
                  example="def add(a, b):\n    return a + b", multiline=True, label="Code or words to embed"),
            WEIGHTS,
        ),
        returns='{"embedding": [float], "dimensions", "tokens", "truncated"}',
        run="apps.codesage.api:embed_code",
        check="apps.codesage.api:check_embed_code",
    ),
)


def check_search_code(ctx: DemoContext, query, code, files, top_k, weights) -> checks.CodeSageInputs:
    return checks.check_inputs(query, code, api_files(files, "files"), top_k, read=False)  # files read in the call


def check_embed_code(ctx: DemoContext, code, weights) -> str:
    return checks.check_query(code, "code")


def search_code(ctx: DemoContext, query, code, files, top_k, weights) -> dict:
    with ctx.compute(weights) as pipe:
        return pipe(query, code, api_files(files, "files"), top_k).to_dict()


def embed_code(ctx: DemoContext, code, weights) -> dict:
    with ctx.compute(weights) as pipe:
        return pipe.embed(code).to_dict()


def as_report(answer: dict) -> str:
    """Each match's score as a bar, then its file, lines and code."""
    from apps import views

    matches = [(f"{m['file']}, " + (f"line {m['start']}" if m["start"] == m["end"] else
                                     f"lines {m['start']}–{m['end']}"), m) for m in answer["matches"]]
    scores = views.bars("Most similar snippets (cosine similarity)", [(p, m["score"]) for p, m in matches], False)
    code = "".join(f"<details open><summary>{views.text(p)}</summary><pre style='white-space:pre-wrap'>"
                   f"{views.text(m['code'])}</pre></details>" for p, m in matches)
    searched = f"{answer['searched']:,} snippets searched ({answer['embedded']:,} embedded now, the rest kept)."
    return scores + code + views.notes([searched, *answer["notes"]])
