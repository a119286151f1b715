"""Checks on what users send to any demo (API or page): free text (type, length, invisible characters), numbers
and names chosen from a list."""

from __future__ import annotations

import json
import math
import re
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


def check_choices(value, choices: tuple[str, ...], what: str, *, argument: str | None = None) -> tuple[str, ...]:
    """Some of ``choices``: a list of their names, or text with the names between commas, in any case; each name
    once, as ``choices`` spells it, in the order given. Else a ``UserInputError`` naming ``argument``."""
    names = [name for name in value.split(",") if name.strip()] if isinstance(value, str) else value
    if not isinstance(names, list | tuple) or not all(isinstance(name, str) for name in names):
        raise UserInputError(f"{what} must be a list of names, not {kind_of(value)}.", argument=argument)
    if not names:
        raise UserInputError(f"Choose at least one of {what}.", argument=argument)
    known = {choice.lower(): choice for choice in choices}
    keys = [name.strip().lower() for name in names]
    unknown = [name.strip() for name, key in zip(names, keys, strict=True) if key not in known]
    if unknown:
        raise UserInputError(f"{unknown[0]!r:.40} is not one of the {what}: choose from {', '.join(choices)}.",
                             argument=argument)
    return tuple(dict.fromkeys(known[key] for key in keys))


def check_number(value, what: str, low: float, high: float | None = None, *, whole: bool = False,
                 argument: str | None = None, hint: str = "") -> int | float:
    """``value`` as an int (``whole``) or a float from ``low`` to ``high`` (no upper bound when None), else a
    ``UserInputError`` naming ``argument``: "The seed must be a whole number between 0 and 4,294,967,295; got -1,
    below the minimum." The one number check of every demo: true/false, null, text that is no number, NaN and the
    infinities are refused; an int is compared exactly (one of thousands of digits has no float)."""
    if isinstance(value, bool) or value is None:
        number: float | int = math.nan
    elif isinstance(value, int):
        number = value
    else:
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):
            number = math.nan
    kind = "a whole number" if whole else "a number"
    span = (f"between {_limit(low)} and {_limit(high)}" if high is not None else f"of at least {_limit(low)}") + hint
    if isinstance(number, float) and (not math.isfinite(number) or (whole and not number.is_integer())):
        raise UserInputError(f"{what} must be {kind} {span}; got {value!r:.40}.", argument=argument)
    if number < low or (high is not None and number > high):
        side = "below the minimum" if number < low else "above the maximum"
        raise UserInputError(f"{what} must be {kind} {span}; got {_shown(number)}, {side}.", argument=argument)
    return int(number) if whole else float(number)


def _limit(limit: float) -> str:
    return f"{limit:g}" if isinstance(limit, float) else f"{limit:,}"


def _shown(number: float | int) -> str:
    """A number for a sentence; an int too long for Python to print (over 4,300 digits) by its length."""
    if isinstance(number, int) and number.bit_length() > 14_000:
        return f"a number of about {int(number.bit_length() * math.log10(2)) + 1:,} digits"
    return str(number)


def json_problem(error: json.JSONDecodeError, subject: str, example_field: str = "name") -> str:
    """Why and where text is not JSON, in words a person acts on, as one sentence about ``subject`` ("The layout",
    an input's name): the JSON reader's own message names what its parser expected next ("Expecting ',' delimiter").
    The one place for this: GeoDiffusion's layout and every declared JSON input (``shared.api.Input.from_text``)."""
    text, pos = error.doc, error.pos
    after, before = text[pos:], text[:pos].rstrip()
    wants_value = error.msg.startswith(("Expecting value", "Expecting property name"))
    if error.msg.startswith("Unterminated string"):
        why = "a text in double quotes is not closed"
    elif not after.strip():
        why = "it ends before its closing brackets"
    elif error.msg.startswith("Extra data"):
        why = "more text follows its closing bracket"
    elif after.startswith("'"):
        why = 'names and labels take double quotes ("car"), not single ones'
    elif after[:1] in ("]", "}") and before.endswith(","):
        why = "a comma comes right before a closing bracket"
    elif wants_value and re.match(r"(True|False|None)\b", after):
        why = "JSON writes true, false and null in lower case"
    elif wants_value and (word := re.match(r"[^\W\d]\w{0,39}", after)):
        why = f'a text needs double quotes ("{word[0]}", not {word[0]})'
    elif wants_value and re.match(r"\.\d", after):
        why = "a number starts with a digit (0.5, not .5)"
    elif error.msg.startswith("Expecting ',' "):
        why = "a comma is missing between two items"
    elif error.msg.startswith("Expecting ':' "):
        why = "a colon is missing after a field name"
    elif error.msg.startswith("Expecting property name"):
        why = f'a field name in double quotes, such as "{example_field}", is missing'
    elif error.msg.startswith("Invalid control character"):
        why = "a text in double quotes runs over a line break or a tab"
    elif "escape" in error.msg:
        why = "a backslash in a text starts no JSON escape"
    else:  # "Expecting value"
        why = "a value is missing (a number, a text in double quotes, a list or an object)"
    return f"{subject} is not valid JSON: {why} (line {error.lineno}, character {error.colno})."
