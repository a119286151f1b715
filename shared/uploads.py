"""A named endpoint's file arguments, read only where Gradio checked them (every demo that takes files uses these).

A file reference marked ``gradio.FileData`` (what gradio_client's ``handle_file``, @gradio/client and MCP send) names
a file Gradio confirmed is an upload before the endpoint runs. A plain string, or a reference without that mark, would
name a path on the server (any file there could be read, any file's existence probed): refused with a sentence.
"""

from __future__ import annotations

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
