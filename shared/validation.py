"""Checks on free text that users send to any demo (API or page): type, length, invisible characters."""

from __future__ import annotations

import unicodedata

from shared.errors import UserInputError

# Control, format (zero-width, bidi overrides), surrogate, private-use and unassigned code points.
_INVISIBLE = {"Cc", "Cf", "Cs", "Co", "Cn"}


def kind_of(value) -> str:
    """What a value is, in a visitor's words (a JSON kind), never a Python type name."""
    if value is None:
        return "empty (null)"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return "a value of another kind"


def check_text(value, what: str, max_chars: int, allow_newlines: bool = False) -> str:
    """``value`` unchanged if it is text of at most ``max_chars`` characters with nothing invisible in it."""
    if not isinstance(value, str):
        raise UserInputError(f"{what} must be text, not {kind_of(value)}.")
    if len(value) > max_chars:
        raise UserInputError(f"{what} is {len(value):,} characters long; the limit is {max_chars:,} characters.")
    allowed = "\n\r\t" if allow_newlines else "\t"
    bad = sorted({c for c in value if unicodedata.category(c) in _INVISIBLE and c not in allowed})
    if bad:
        codes = ", ".join(f"U+{ord(c):04X}" for c in bad[:5])
        raise UserInputError(f"{what} contains invisible or control characters ({codes}); remove them and try again.")
    return value
