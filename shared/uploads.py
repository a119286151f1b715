"""A named endpoint's file arguments, read only where Gradio checked them (every demo that takes files uses these).

A file reference marked ``gradio.FileData`` (what gradio_client's ``handle_file``, @gradio/client and MCP send) names
a file Gradio confirmed is an upload before the endpoint runs. A plain string, or a reference without that mark, would
name a path on the server (any file there could be read, any file's existence probed): refused with a sentence.
"""

from __future__ import annotations

import io
import struct
import zipfile
from pathlib import Path
from typing import Any

from shared.errors import UserInputError

GRADIO_FILE = "gradio.FileData"  # the mark of a file reference that Gradio checks before an endpoint runs
NOT_AN_UPLOAD = ("{argument} must be an uploaded file: send it with gradio_client's handle_file, @gradio/client's "
                 "handle_file, or over MCP as a data URI; a path or a bare file name is not read.")


def each(values: Any) -> list[Any]:
    """A multi-file input's value (None, one file, or a list of them) as a list."""
    if values is None:
        return []
    return list(values) if isinstance(values, (list, tuple)) else [values]


def api_file(value: Any, argument: str) -> Path | None:
    """An endpoint's file argument as a ``Path``, only where Gradio checked it (above); None stays None."""
    if value is None:
        return None
    meta = value.get("meta") if isinstance(value, dict) else getattr(value, "meta", None)
    mark = meta.get("_type") if isinstance(meta, dict) else None
    path = value.get("path") if isinstance(value, dict) else getattr(value, "path", None)
    if mark != GRADIO_FILE or not isinstance(path, str):
        raise UserInputError(NOT_AN_UPLOAD.format(argument=argument), argument=argument)
    return Path(path)


def api_files(values: Any, argument: str) -> list[Path | None]:
    """``api_file`` for each of a multi-file argument (one reference, or a list of them)."""
    return [api_file(v, argument) for v in each(values)]


def open_zip(path: Path, max_directory_bytes: int, advice: str) -> zipfile.ZipFile:
    """``ZipFile(path)``, once its central directory is known to be at most ``max_directory_bytes``: ``ZipFile``
    parses all of it into objects (~11 bytes of memory per byte of directory), before anyone can count the entries.
    ``advice`` ends the sentence of a refusal ("zip only the images, at most 64")."""
    if central_directory_bytes(path) > max_directory_bytes:
        raise UserInputError(f"{path.name} lists too many files (its directory is over "
                             f"{max_directory_bytes // 2**20} MB); {advice}.")
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        raise UserInputError(f"{path.name} is not a readable zip archive; zip the files again and retry.") from None


def central_directory_bytes(path: Path) -> int:
    """The central directory's size from the end-of-central-directory record (0 if there is none: ``ZipFile`` will
    then refuse the file). Zip64 archives keep 0xFFFFFFFF there only for directories over 4 GB."""
    try:
        with open(path, "rb") as fp:
            fp.seek(0, io.SEEK_END)
            fp.seek(max(0, fp.tell() - (22 + 65535)))  # the record (22 bytes) and at most a 64 KB comment
            tail = fp.read()
    except OSError:
        return 0
    records = []  # (comment length matches the rest of the file, directory size), last record first
    at = tail.rfind(b"PK\x05\x06", 0, len(tail) - 18)  # a record needs 22 bytes
    while at >= 0:
        directory, comment = struct.unpack("<LxxxxH", tail[at + 12 : at + 22])
        records.append((at + 22 + comment == len(tail), directory))
        at = tail.rfind(b"PK\x05\x06", 0, at)
    return max(records, key=lambda record: record[0])[1] if records else 0  # an exact one, else the last
