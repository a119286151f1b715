"""A bounded symbolic search over the PraX program space: regexes proposed from the shape of the positive examples,
kept where consistent with every example. The listeners rank them (``PraxPipeline``): a listener whose samples hold no
consistent regex still answers whenever the examples share a shape this search reads.

What it reads (each positive string as runs of one kind of character: digits, lower-case letters, upper-case
letters, or one repeated punctuation character):

- **One shape**: every positive has the same runs in the same order (letters of either case read as one kind when
  that is what makes the shapes agree). Each run becomes a quantified atom of the program space: its class (or the
  letters themselves when every positive has the same ones), with ``{n}`` for one length, ``{n,m}`` for a few
  lengths, ``{n,}`` open-ended.
- **Separated fields**: the positives are fields of one shape joined by one separator of the program space
  (``;`` ``,`` ``-`` ``.``): ``X;X`` or ``X(;X)*``, X the field's shape.
- **One length**: positives of one length whose runs disagree, read character by character: at each position the
  character itself or the smallest class (negated ones too) that holds every positive's character there.

Candidates are ordered by the size principle (the fewer strings a regex matches, the likelier it is the one the
examples were chosen for: what RSA's literal listener does over a uniform prior), then by fewer parts. Bounded: at
most ``MAX_RUNS`` runs per shape and ``MAX_CANDIDATES`` regexes, each checked against the examples under the match
timeout. UI-free and torch-free.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from apps.prax import dsl

MAX_RUNS = 8  # runs of one shape: a longer shape is not read (a person's example is at most 15 characters)
MAX_CANDIDATES = 512  # regexes built per source before the consistency check (as many answered at 4,096)
MAX_QUANTIFIER = 4  # the program space's largest bound in {n} and {n,m} (dsl._quantifier)
OPEN_LOWS = (1, 2, 3)  # the program space's {n,} lower bounds
CLASS_SIZE = {"[0-9]": 10, "[a-z]": 26, "[A-Z]": 26, "[A-Za-z]": 52}
KIND_CLASSES = {"digit": ("[0-9]",), "lower": ("[a-z]", "[A-Za-z]"), "upper": ("[A-Z]", "[A-Za-z]"),
                "letter": ("[A-Za-z]",)}


@dataclass(frozen=True)
class Run:
    kind: str  # "digit", "lower", "upper", "letter" (either case), or "punct"
    text: str


@dataclass(frozen=True)
class Part:
    """One piece of a regex with the log of how many strings it matches (up to ``dsl.MAX_EXAMPLE_LEN`` long)."""

    regex: str
    log_size: float
    pieces: int = 1


def kind_of(char: str, merge_letters: bool) -> str:
    if char.isdigit():
        return "digit"
    if char.isalpha():
        return "letter" if merge_letters else "lower" if char.islower() else "upper"
    return "punct"


def runs(text: str, merge_letters: bool = False) -> tuple[Run, ...]:
    """``text`` as runs of one kind ("2023-01" -> digit "2023", punct "-", digit "01"); a punctuation run is one
    repeated character."""
    out: list[Run] = []
    for char in text:
        kind = kind_of(char, merge_letters)
        last = out[-1] if out else None
        if last is not None and last.kind == kind and (kind != "punct" or last.text[0] == char):
            out[-1] = Run(kind, last.text + char)
        else:
            out.append(Run(kind, char))
    return tuple(out)


def shape(rs: Sequence[Run]) -> tuple:
    return tuple((r.kind, r.text[0] if r.kind == "punct" else "") for r in rs)


def _log_sum_powers(base: int, low: int, high: int) -> float:
    """log(sum_{n=low}^{high} base^n), computed stably."""
    top = high * math.log(base)
    return top + math.log(sum(math.exp((n - high) * math.log(base)) for n in range(low, high + 1)))


def quantifiers(lengths: set[int]) -> list[tuple[int, int | None]]:
    """The program space's quantifiers that allow every length in ``lengths``: exact, bounded, open-ended."""
    low, high = min(lengths), max(lengths)
    out: list[tuple[int, int | None]] = []
    if low == high and (low == 1 or low <= MAX_QUANTIFIER):
        out.append((low, low))
    if low < high <= MAX_QUANTIFIER:
        out.append((low, high))
    out += [(n, None) for n in OPEN_LOWS if n <= low]
    return out


def _quantified(atom: str, size: int, low: int, high: int | None) -> Part:
    """``atom`` (a class when ``size`` > 1, else one character) with a quantifier."""
    body = dsl.Quantified(dsl.CharClass(atom) if size > 1 else dsl.Literal(atom), low, high).render()
    top = dsl.MAX_EXAMPLE_LEN if high is None else high
    return Part(body, _log_sum_powers(size, low, top) if size > 1 else math.log(top - low + 1))


def run_parts(column: Sequence[Run]) -> list[Part]:
    """Every part of the program space that matches each of the runs in ``column`` (one run per positive, all of
    one kind): the same letters or digits as a literal; a class with a quantifier; punctuation as its character."""
    kind = column[0].kind
    lengths = {len(r.text) for r in column}
    if kind == "punct":
        char = column[0].text[0]
        return [_quantified(char, 1, low, high) for low, high in quantifiers(lengths)]
    out: list[Part] = []
    texts = {r.text for r in column}
    if len(texts) == 1 and len(column[0].text) <= MAX_QUANTIFIER:  # the same characters in every positive
        text = column[0].text
        out.append(Part("".join(dsl.Literal(c).render() for c in text), 0.0, pieces=len(text)))
    for atom in KIND_CLASSES[kind]:
        out += [_quantified(atom, CLASS_SIZE[atom], low, high) for low, high in quantifiers(lengths)]
    return out


def shape_parts(strings: Sequence[str]) -> list[list[Part]] | None:
    """Per run position, the parts that fit every string; None when the strings do not share a shape (with letters
    of either case read as one kind, when that makes them agree) or it has more than ``MAX_RUNS`` runs."""
    for merge in (False, True):
        split = [runs(s, merge) for s in strings]
        if len({shape(rs) for rs in split}) == 1 and len(split[0]) <= MAX_RUNS:
            return [run_parts(column) for column in zip(*split, strict=True)]
    return None


# Every class of the program space, with the characters of the example alphabet it holds.
CLASS_CHARS = {text: frozenset(c for c in dsl.VALID if dsl.matches(text, c)) for text in (*dsl.CLASSES,
                                                                                           *dsl.NEGATED_CLASSES)}


def column_parts(strings: Sequence[str]) -> list[list[Part]] | None:
    """For positives of one length (where their runs disagree): per character position the most specific atom
    holding every positive's character there (the character itself, else the smallest class, negated ones too), the
    positions with the same atom joined into one quantified part. None for positives of different lengths."""
    if len({len(s) for s in strings}) != 1:
        return None
    atoms: list[tuple[str, int, int]] = []  # (atom, its size: 1 for a character, run length)
    for chars in zip(*strings, strict=True):
        if len(set(chars)) == 1:
            atom, size = chars[0], 1
        else:
            holding = [(len(held), text) for text, held in CLASS_CHARS.items() if set(chars) <= held]
            if not holding:
                return None
            size, atom = min(holding)
        if atoms and atoms[-1][:2] == (atom, size) and size > 1:
            atoms[-1] = (atom, size, atoms[-1][2] + 1)
        else:
            atoms.append((atom, size, 1))
    parts = []
    for atom, size, count in atoms:
        if size == 1 and atom not in dsl.PLAIN_LITERALS + dsl.SPECIAL_LITERALS + dsl.ESCAPED_LITERALS:
            return None  # a character the program space has no literal for
        if count > MAX_QUANTIFIER:  # {n} is bounded in the program space: the run is open-ended instead
            parts.append([_quantified(atom, size, low, None) for low in OPEN_LOWS])
        else:
            parts.append([_quantified(atom, size, count, count)])
    return parts if len(parts) <= 2 * MAX_RUNS else None


def _programs(parts: list[list[Part]], limit: int) -> Iterable[Part]:
    """Whole regexes from one option per position, at most ``limit``, the most specific options first."""
    ordered = [sorted(options, key=lambda p: p.log_size) for options in parts]
    for combo in itertools.islice(itertools.product(*ordered), limit):
        yield Part("".join(p.regex for p in combo), sum(p.log_size for p in combo), sum(p.pieces for p in combo))


def proposals(strings: Sequence[str], limit: int = MAX_CANDIDATES) -> list[Part]:
    """Regexes that full-match every one of ``strings`` (the positive examples), built from their shared shape or as
    separated fields of one shape; not yet checked against the negatives."""
    if not strings:
        return []
    out: list[Part] = []
    parts = shape_parts(strings)
    if parts is not None:
        out += _programs(parts, limit)
    columns = column_parts(strings) if parts is None else None  # only where the runs disagree: a shared shape
    if columns is not None:  # reads better than a letter two words share by chance ("Hello", "World": the "l")
        out += _programs(columns, limit)
    for separator in dsl.SEPARATORS:
        if not any(separator in s for s in strings):
            continue
        fields = [s.split(separator) for s in strings]
        field_parts = shape_parts([f for row in fields for f in row])
        if field_parts is None or any(not f for row in fields for f in row):
            continue
        sep = dsl.Literal(separator).render()
        counts = {len(row) for row in fields}
        for field in _programs(field_parts, max(1, limit // 8)):
            if len(counts) == 1 and next(iter(counts)) in (2, 3):
                n = next(iter(counts))
                out.append(Part(sep.join([field.regex] * n), n * field.log_size, n * field.pieces + n - 1))
            group = f"({sep}{field.regex})*"  # a field, then any number of separated fields
            out.append(Part(field.regex + group, 2 * field.log_size + 1.0, 2 * field.pieces + 1))
    return out


def search(examples: Sequence[dsl.Example], limit: int = MAX_CANDIDATES, keep: int | None = None) -> list[str]:
    """Regexes of the program space consistent with every example, most specific first (size principle: the log of
    the strings each matches, times the positives; fewer parts break ties), at most ``keep``; [] when the positives
    share no shape this search reads, or no negative leaves one standing."""
    positives = [ex.string for ex in examples if ex.positive]
    scored = sorted(proposals(positives, limit), key=lambda p: (len(positives) * p.log_size, p.pieces, p.regex))
    found: dict[str, None] = {}
    for part in scored:
        if keep is not None and len(found) >= keep:
            break
        if part.regex not in found and dsl.consistent(part.regex, examples):
            found[part.regex] = None
    return list(found)
