"""The code a visitor searches, cut into snippets within budgets (torch-free): pasted code, files, zips."""

from __future__ import annotations

import io
import zipfile

import pytest

from apps.codesage import corpus
from apps.codesage.checks import check_inputs
from apps.codesage.corpus import PASTED, cut, read_corpus
from shared.errors import UserInputError

PYTHON = '''import os


def first(items):
    return items[0]


class Box:
    def __init__(self, value):
        self.value = value

    def get(self):
        return self.value
'''


def test_a_file_is_cut_at_its_top_level_blocks_with_their_lines():
    snippets = cut(PYTHON, "box.py")
    assert [(s.start, s.end) for s in snippets] == [(1, 1), (4, 5), (8, 13)]
    assert snippets[2].code.startswith("class Box:") and snippets[2].code.endswith("return self.value")
    assert all(s.path == "box.py" for s in snippets)


def test_braces_close_a_block_without_starting_one():
    js = "function a() {\n  return 1;\n\n}\n\nfunction b() {\n  return 2;\n}\n"
    assert [(s.start, s.end) for s in cut(js, "a.js")] == [(1, 4), (6, 8)]


MODULE = '''"""A module whose docstring has paragraphs.

Usage at the margin, after a blank line, is still the docstring.
"""

import os


def first(items):
    """The first item.

Continued at the margin (as some code writes it).
    """
    return items[0]
'''


def test_a_docstring_with_blank_lines_stays_whole_in_its_snippet():
    snippets = cut(MODULE, "module.py")
    assert [(s.start, s.end) for s in snippets] == [(1, 4), (6, 6), (9, 14)]
    assert snippets[0].code.endswith('"""') and "Usage at the margin" in snippets[0].code
    assert snippets[2].code.startswith("def first") and "Continued at the margin" in snippets[2].code
    assert [(s.start, s.end) for s in cut(MODULE, PASTED)] == [(1, 4), (6, 6), (9, 14)], "pasted code too"


def test_a_block_comment_with_blank_lines_stays_whole_and_python_globs_open_none():
    c = "/*\nCopyright.\n\nLicensed under the MIT license.\n*/\n\nint one(void) {\n  return 1;\n}\n"
    assert [(s.start, s.end) for s in cut(c, "one.c")] == [(1, 5), (7, 9)]
    py = 'FILES = "data/*.csv"\n\n\ndef two():\n    return 2\n\n\ndef three():\n    return 3\n'
    assert [(s.start, s.end) for s in cut(py, "glob.py")] == [(1, 1), (4, 5), (8, 9)], "'/*' opens no comment in Python"
    closed = 'x = """one line"""\n\ny = 1\n'
    assert [(s.start, s.end) for s in cut(closed, "closed.py")] == [(1, 1), (3, 3)], "a string closed on its line"


def test_a_long_block_is_cut_at_the_line_limit():
    text = "def long():\n" + "".join(f"    x{i} = {i}\n" for i in range(150))
    ends = [(s.start, s.end) for s in cut(text, "long.py")]
    assert ends == [(1, 60), (61, 120), (121, 151)]


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_a_zip_of_a_repository_reads_its_source_files_and_says_what_it_left_out(tmp_path):
    path = tmp_path / "repo.zip"
    path.write_bytes(_zip({"src/box.py": PYTHON.encode(), "README.md": b"# not code", ".git/config": b"x = 1",
                          "src/data.bin.py": b"\x00\x01binary", "src/latin.py": "caf\xe9 = 1".encode("latin-1"),
                          "src/big.py": b"x = 1\n" * (corpus.MAX_FILE_BYTES // 6 + 1)}))
    found = read_corpus("def pasted():\n    pass\n", [path])
    assert {s.path for s in found.snippets} == {PASTED, "repo.zip/src/box.py"}
    assert found.snippets[0].path == PASTED, "pasted code first"
    assert sorted(found.notes) == sorted(["repo.zip/src/data.bin.py left out: not a text file.",
                                          "repo.zip/src/latin.py left out: not UTF-8 text.",
                                          f"repo.zip/src/big.py left out: larger than {corpus.MAX_FILE_BYTES // 1024} "
                                          "KB."])


def test_a_zip_bomb_is_never_unpacked(tmp_path):
    """A member whose declared size is over the budget is left out from the zip's directory alone (64 MB of zeros in
    a 64 KB zip: nothing is unpacked)."""
    path = tmp_path / "bomb.zip"
    path.write_bytes(_zip({"a.py": b"0" * (64 * 1024 * 1024)}))
    with pytest.raises(UserInputError, match="No code to search .*larger than"):
        read_corpus(None, [path])


@pytest.mark.parametrize(("files", "snippets", "words"), [
    (corpus.MAX_FILES + 1, 1, f"At most {corpus.MAX_FILES} source files"),
    (2, corpus.MAX_SNIPPETS, f"At most {corpus.MAX_SNIPPETS:,} snippets"),
])
def test_budgets_of_files_and_snippets_are_refused_in_a_sentence(tmp_path, files, snippets, words):
    text = "\n\n".join(f"x{i} = {i}" for i in range(snippets))
    members = {f"f{i}.py": text.encode() for i in range(files)}
    path = tmp_path / "many.zip"
    path.write_bytes(_zip(members))
    with pytest.raises(UserInputError, match=words) as info:
        read_corpus(None, [path])
    assert info.value.argument == "files"


def test_the_total_text_budget(tmp_path, monkeypatch):
    monkeypatch.setattr(corpus, "MAX_TOTAL_BYTES", 1000)
    path = tmp_path / "two.zip"
    path.write_bytes(_zip({"a.py": b"a = 1\n" * 100, "b.py": b"b = 1\n" * 100}))
    with pytest.raises(UserInputError, match="At most 0 MB of source text per search; two.zip/b.py goes over"):
        read_corpus(None, [path])


def test_not_a_zip_and_a_broken_zip(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("plain words\n\nmore words\n")
    assert [s.code for s in read_corpus(None, [text]).snippets] == ["plain words", "more words"]
    broken = tmp_path / "broken.zip"
    broken.write_bytes(_zip({"a.py": b"a = 1\n"})[:-30])
    with pytest.raises(UserInputError, match="not a readable zip|No code to search"):
        read_corpus(None, [broken])


@pytest.mark.parametrize(("query", "code", "top_k", "argument", "words"), [
    ("", "x = 1", 5, "query", "No query"),
    ("sort", "", 5, "code", "No code to search"),
    ("sort", "x = 1", 0, "top_k", "top_k must be a whole number between 1 and 50"),
    ("sort\u0000", "x = 1", 5, "query", "invisible or control characters"),
    ("sort", "x" * 200_001, 5, "code", "The code is 200,001 characters long"),
])
def test_checks_name_the_argument_at_fault(query, code, top_k, argument, words):
    with pytest.raises(UserInputError, match=words) as info:
        check_inputs(query, code, [], top_k)
    assert info.value.argument == argument
