"""The code a visitor searches, cut into snippets: pasted code, source files, zips of a repository (torch-free).

A file is cut where a line starts at the margin after a blank line (a new top-level function, class or statement
group: the unit the paper embeds is a function), never inside a triple-quoted string (a docstring's paragraphs) or,
in the languages that have them, a ``/* */`` comment (a license header's), and a piece longer than
``MAX_SNIPPET_LINES`` is cut again at that many lines (which also bounds what a stray quote can hold together). Each
snippet keeps its file and first and last line numbers.

Everything is read within budgets, from the zip's directory first (``shared.uploads.open_zip``): at most
``MAX_FILES`` source files, ``MAX_FILE_BYTES`` each and ``MAX_TOTAL_BYTES`` together, and ``MAX_SNIPPETS`` snippets
in all; a file that is not UTF-8 text, a binary, an encrypted or oversized member is left out and named in a note.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from shared.errors import UserInputError
from shared.uploads import open_zip

MAX_FILES = 300  # source files in one request (uploads and zip members together)
MAX_FILE_BYTES = 512 * 1024  # one source file (a zip member by its declared size)
MAX_TOTAL_BYTES = 4 * 1024 * 1024  # all source text of one request
MAX_SNIPPETS = 1000  # snippets in one search (on a CPU, pipeline.TOKEN_BUDGET bounds those embedded at once)
MAX_SNIPPET_LINES = 60
MAX_ZIP_DIRECTORY_BYTES = 1024 * 1024  # a zip's list of members (~10,000 entries), read before any member
PASTED = "pasted code"
NO_CODE = "No code to search{}: paste some code or upload source files or a zip of them."
SOURCE_SUFFIXES = frozenset(  # what a zip's members are read for; an uploaded file of another name is read too
    ".py .pyi .js .jsx .mjs .ts .tsx .java .kt .scala .go .rb .php .c .h .cc .cpp .hpp .cs .rs .swift .m .sh .lua "
    ".r .jl .sql .pl .hs .ml .ex .exs .erl .clj .dart .vue .svelte".split())

QUOTES = ('"""', "'''")  # a triple-quoted string (Python's docstrings; Julia, Kotlin, Scala, Swift, Dart alike)
CLOSERS = {'"""': '"""', "'''": "'''", "/*": "*/"}
BLOCK_COMMENT_SUFFIXES = frozenset(  # where "/*" opens a comment (in Python it is a glob's "data/*.csv")
    ".js .jsx .mjs .ts .tsx .java .kt .scala .go .php .c .h .cc .cpp .hpp .cs .rs .swift .m .sql .dart .vue .svelte"
    .split())


@dataclass(frozen=True)
class Snippet:
    path: str  # the file's name as uploaded, a zip member as "archive.zip/dir/file.py", or PASTED
    start: int  # first line, from 1
    end: int  # last line
    code: str


@dataclass(frozen=True)
class Corpus:
    snippets: tuple[Snippet, ...]
    notes: tuple[str, ...]  # what was left out, and why


def cut(text: str, path: str) -> list[Snippet]:
    """``text``'s snippets: a new one where a line outside a multi-line string or comment starts at the margin after
    a blank line; none of only blanks."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    openers = (*QUOTES, "/*") if PurePosixPath(path).suffix.lower() in BLOCK_COMMENT_SUFFIXES else QUOTES
    pieces: list[tuple[int, int]] = []  # [start, end) line indexes
    start, closing = 0, None
    for i in range(1, len(lines)):
        closing = _still_open(lines[i - 1], closing, openers)
        starts_block = (closing is None and lines[i][:1] not in ("", " ", "\t", "}", ")", "]")
                        and not lines[i - 1].strip())
        if starts_block or i - start >= MAX_SNIPPET_LINES:
            pieces.append((start, i))
            start = i
    pieces.append((start, len(lines)))
    snippets = []
    for begin, stop in pieces:
        while begin < stop and not lines[begin].strip():
            begin += 1
        while stop > begin and not lines[stop - 1].strip():
            stop -= 1
        if begin < stop:
            snippets.append(Snippet(path, begin + 1, stop, "\n".join(lines[begin:stop])))
    return snippets


def _still_open(line: str, closing: str | None, openers: tuple[str, ...]) -> str | None:
    """What closes the string or comment still open after ``line`` (None: none is), given what closed the one open
    before it."""
    at = 0
    while True:
        if closing is None:
            found = [(i, opener) for opener in openers if (i := line.find(opener, at)) >= 0]
            if not found:
                return None
            at, opener = min(found)
            closing, at = CLOSERS[opener], at + len(opener)
        else:
            end = line.find(closing, at)
            if end < 0:
                return closing
            closing, at = None, end + len(closing)


class _Reader:
    """Reads sources into snippets, keeping count of files, bytes and snippets against the budgets."""

    def __init__(self):
        self.snippets: list[Snippet] = []
        self.notes: list[str] = []
        self.files = self.bytes = 0

    def add(self, name: str, data: bytes) -> None:
        if self.files >= MAX_FILES:
            raise UserInputError(f"At most {MAX_FILES} source files per search; {name} is one more. Upload fewer "
                                 "files or zip only the folder you want to search.", argument="files")
        if self.bytes + len(data) > MAX_TOTAL_BYTES:
            raise UserInputError(f"At most {MAX_TOTAL_BYTES // 2**20} MB of source text per search; {name} goes "
                                 "over it. Search fewer files.", argument="files")
        if b"\0" in data[:8192]:
            self.notes.append(f"{name} left out: not a text file.")
            return
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            self.notes.append(f"{name} left out: not UTF-8 text.")
            return
        self.files += 1
        self.bytes += len(data)
        self.snippets.extend(cut(text, name))
        if len(self.snippets) > MAX_SNIPPETS:
            raise UserInputError(f"At most {MAX_SNIPPETS:,} snippets per search, and these files hold more "
                                 f"({len(self.snippets):,} so far, at {name}). Search fewer files.", argument="files")

    def add_file(self, path: Path) -> None:
        name = path.name
        if zipfile.is_zipfile(path):
            self.add_zip(path)
            return
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            self.notes.append(f"{name} left out: larger than {MAX_FILE_BYTES // 1024} KB.")
            return
        self.add(name, path.read_bytes())

    def add_zip(self, path: Path) -> None:
        with open_zip(path, MAX_ZIP_DIRECTORY_BYTES, f"zip only the source files, at most {MAX_FILES}") as archive:
            for info in archive.infolist():
                member = PurePosixPath(info.filename)
                name = f"{path.name}/{info.filename}"
                if info.is_dir() or any(part.startswith(".") or part == "__MACOSX" for part in member.parts):
                    continue
                if member.suffix.lower() not in SOURCE_SUFFIXES:
                    continue
                if info.flag_bits & 0x1:
                    self.notes.append(f"{name} left out: encrypted.")
                elif info.file_size > MAX_FILE_BYTES:
                    self.notes.append(f"{name} left out: larger than {MAX_FILE_BYTES // 1024} KB.")
                else:
                    try:  # reads at most the declared size, checked above
                        data = archive.read(info)
                    except (zipfile.BadZipFile, NotImplementedError, OSError, EOFError, RuntimeError, ValueError):
                        self.notes.append(f"{name} left out: it could not be unpacked.")
                        continue
                    self.add(name, data)


def read_corpus(code: str | None, files: list[Path]) -> Corpus:
    """The snippets of pasted ``code`` and of uploaded ``files`` (source files and zips of them), in that order."""
    reader = _Reader()
    if code and code.strip():
        reader.snippets.extend(cut(code, PASTED))
    for path in files:
        reader.add_file(path)
    if not reader.snippets:
        left_out = f" ({' '.join(reader.notes)})" if reader.notes else ""
        raise UserInputError(NO_CODE.format(left_out), argument="code")
    return Corpus(tuple(reader.snippets), tuple(reader.notes))
