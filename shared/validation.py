"""Checks on free text that users send to any demo (API or page): type, length, invisible characters."""

from __future__ import annotations

import unicodedata

from shared.errors import UserInputError

# Control, format (zero-width, bidi overrides), surrogate, private-use and unassigned code points.
_INVISIBLE = {"Cc", "Cf", "Cs", "Co", "Cn"}


def check_text(value, what: str, max_chars: int, allow_newlines: bool = False) -> str:
    """``value`` unchanged if it is text of at most ``max_chars`` characters with nothing invisible in it."""
    if not isinstance(value, str):
        raise UserInputError(f"{what} must be text, not {type(value).__name__}.")
    if len(value) > max_chars:
        raise UserInputError(f"{what} is {len(value):,} characters long; the limit is {max_chars:,} characters.")
    allowed = "\n\r\t" if allow_newlines else "\t"
    bad = sorted({c for c in value if unicodedata.category(c) in _INVISIBLE and c not in allowed})
    if bad:
        codes = ", ".join(f"U+{ord(c):04X}" for c in bad[:5])
        raise UserInputError(f"{what} contains invisible or control characters ({codes}); remove them and try again.")
    return value
