"""An exact, bounded symbolic search over the PraX program space: the regexes that read every positive example, best
first under a Bayesian score, kept where consistent with every example. The listeners rank them with their own
samples (``PraxPipeline``), so a listener is never empty-handed where the program space holds a consistent regex
this search reaches.

**How it reads the positives** (a version space, as in programming by example): a *node* is a position in every
positive string at once, starting at (0, ..., 0). From a node, each component of the program space (apps/prax/dsl.py)
that can read the next piece of every string is an *edge* to the node after those pieces:

- a quantified atom (a class, a negated class or a literal character, with ``{n}``, ``{n,m}`` or ``{n,}``): the
  piece is one character in every string, or the longest run of the atom's characters (or that run less its last
  character, so ``[a-z]{1,}s`` can read a plural);
- an optional group ``(X)?`` / ``(SX)?``: the strings whose next character fits X's atom (or is the literal S) read
  the group, the others skip it;
- an alternation ``(A|B)``: the strings whose next character fits A read A, the others B;
- a separated field ``X;X``, ``X;X;X``, ``X(;X)*`` (separators ``; , - .``): fields of X's atom joined by the
  separator.

A program is a path of 1-6 edges (``MAX_COMPONENTS``) from the start to the node at the end of every string. The
best paths come from dynamic programming over the nodes (the ``KEEP`` best completions of each node), so the search
is exact over the pieces this reading proposes and its work is bounded by the number of nodes, not of programs.

**The score** of a program h given the positives D+ is log P(h) + sum over D+ of log P(s | h):

- P(h), the prior: the program sampler's own probabilities (``dsl.sample_program``: how often it draws each number
  of components, each kind of component, atom and quantifier);
- P(s | h), a speaker who picks each piece's length uniformly among the lengths its quantifier allows (up to
  ``dsl.MAX_EXAMPLE_LEN``), then each character uniformly among its atom's characters, each optional part and each
  branch with probability 1/2: the size principle (the fewer strings a regex matches, the likelier it is the one
  the examples were chosen for), with lengths drawn first as a person picks how long a string is before typing it.

The negatives only filter (a regex is kept when it matches no negative); where they rule out every reading of the
beam, the search reads once more with a beam ``WIDER`` times wider. UI-free and torch-free.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from apps.prax import dsl

MAX_COMPONENTS = 6  # dsl.COMPONENT_COUNTS
KEEP = 32  # best completions kept per node and remaining length: the search's beam
WIDER = 8  # the wider beam, where every reading of the first matches a string that should not match
QUANTIFIERS_KEPT = 3  # the best quantifiers of one reading kept (the others differ from these only in their bounds)
# Nodes read at most, the best-scored pieces first. On the sampler's 200 held-out specs (2 cores): 100 / 200 / 400 /
# 800 nodes gave top-1 0.245 / 0.260 / 0.270 / 0.275 in 30 / 47 / 74 / 107 ms a spec (worst 91 / 164 / 307 / 649 ms).
MAX_NODES = 400
SECONDS = 1.0  # a safety net for a machine too busy for that: the nodes not read by then are not read
MAX_STRINGS = 12  # positives read (the first ones); the rest are checked like the negatives
MAX_CHARS = 20  # a positive longer than this is not read (the program space's strings are at most 15 characters)
MAX_QUANTIFIER = 4  # the largest bound in {n} and {n,m} (dsl._quantifier)
OPEN_LOWS = (1, 2, 3)  # the {n,} lower bounds
OPEN_LOW_SHARE = {1: 0.6, 2: 0.2, 3: 0.2}  # the sampler draws each {n,} low alike; people mostly mean {1,}
OPEN_CONTINUE = 0.5  # the speaker's chance to type one more character of an open-ended piece

ATOMS = (*dsl.CLASSES, *dsl.NEGATED_CLASSES)
ATOM_SIZE = {atom: sum(dsl.matches(atom, c) for c in dsl.VALID) for atom in ATOMS}
LITERALS = dsl.PLAIN_LITERALS + dsl.SPECIAL_LITERALS + dsl.ESCAPED_LITERALS

# ---------------------------------------------------------------- the prior: dsl.sample_program's probabilities

_COUNT_TOTAL = sum(dsl.COMPONENT_WEIGHTS)
LOG_COUNT = {n: math.log(w / _COUNT_TOTAL) for n, w in zip(dsl.COMPONENT_COUNTS, dsl.COMPONENT_WEIGHTS, strict=True)}
LOG_QUANTIFIED, LOG_ALTERNATION, LOG_OPTIONAL, LOG_SEPARATED = map(math.log, (0.62, 0.18, 0.13, 0.07))


def log_atom(atom: str) -> float:
    """log P(atom) under dsl._atom: a class 0.45, a negated class 0.10, a plain literal 0.30, a special one 0.15."""
    if atom in dsl.CLASSES:
        return math.log(0.45 / len(dsl.CLASSES))
    if atom in dsl.NEGATED_CLASSES:
        return math.log(0.10 / len(dsl.NEGATED_CLASSES))
    if atom in dsl.PLAIN_LITERALS:
        return math.log(0.30 / len(dsl.PLAIN_LITERALS))
    return math.log(0.15 / len(dsl.SPECIAL_LITERALS + dsl.ESCAPED_LITERALS))


def log_quantifier(low: int, high: int | None) -> float:
    """log P(quantifier) under dsl._quantifier: none 0.35, {n} 0.25 (n in 2-4), {n,} 0.20 (n in 1-3), {n,m} 0.20."""
    if (low, high) == (1, 1):
        return math.log(0.35)
    if high is None:
        return math.log(0.20 * OPEN_LOW_SHARE[low])
    if low == high:
        return math.log(0.25 / 3)
    return math.log(0.20 / 3 / (MAX_QUANTIFIER - low))  # low uniform in 1-3, then high uniform above it


@lru_cache(maxsize=8192)
def log_quantified_prior(atom: str, low: int, high: int | None) -> float:
    """A literal gets a quantifier 30% of the time (dsl._quantified); a class always draws one."""
    if atom in ATOMS:
        return log_atom(atom) + log_quantifier(low, high)
    if (low, high) == (1, 1):
        return log_atom(atom) + math.log(0.7 + 0.3 * 0.35)
    return log_atom(atom) + math.log(0.3) + log_quantifier(low, high)


# ---------------------------------------------------------------- pieces


@dataclass(frozen=True)
class Option:
    """One way to read the next piece of every string: its regex, where each string's piece ends, and its score
    (log prior of the component + log likelihood of the pieces)."""

    regex: str
    ends: tuple[int, ...]
    score: float
    atom: str = ""  # the atom a quantified atom or separated field repeats ("" for groups)


@lru_cache(maxsize=8192)
def render(atom: str, low: int, high: int | None) -> str:
    return dsl.Quantified(dsl.CharClass(atom) if atom in ATOMS else dsl.Literal(atom), low, high).render()


@lru_cache(maxsize=4096)
def fits(atom: str, char: str) -> bool:
    return dsl.matches(atom, char) if atom in ATOMS else char == atom


@lru_cache(maxsize=4096)
def quantifiers(lengths: frozenset[int]) -> tuple[tuple[int, int | None], ...]:
    """The quantifiers of the program space that allow every length in ``lengths``."""
    low, high = min(lengths), max(lengths)
    out: list[tuple[int, int | None]] = []
    if low == high and low <= MAX_QUANTIFIER:
        out.append((low, low))
    ranges = [(a, b) for a in range(1, low + 1) for b in range(max(a + 1, high), MAX_QUANTIFIER + 1)]
    out += sorted(ranges, key=lambda r: (r[1] - r[0], -r[0]))  # the tightest first: groups take only that one
    out += [(a, None) for a in OPEN_LOWS if a <= low]
    return tuple(out)


def log_length(low: int, high: int | None, length: int) -> float:
    """log P(a piece of ``length``): uniform over a bounded quantifier's lengths; for ``{n,}`` each character past
    ``n`` halves it (a person who means "one or more" types a few, not fifteen)."""
    if high is None:
        return math.log(1 - OPEN_CONTINUE) + (length - low) * math.log(OPEN_CONTINUE)
    return -math.log(high - low + 1)


def run_length(text: str, start: int, atom: str) -> int:
    n = 0
    while start + n < len(text) and fits(atom, text[start + n]):
        n += 1
    return n


def atom_reads(strings: Sequence[str], starts: Sequence[int], atom: str) -> list[tuple[int, ...]]:
    """Each way ``atom`` repeated reads a piece of every string from its start: one character, the longest run, or
    that run less its last character (``[a-z]{1,}s`` reads a plural). Returned as the pieces' lengths."""
    runs = [run_length(s, p, atom) for s, p in zip(strings, starts, strict=True)]
    if min(runs, default=0) == 0:
        return []
    reads = {tuple(1 for _ in runs), tuple(runs)}
    if min(runs) > 1:
        reads.add(tuple(r - 1 for r in runs))
    return sorted(reads)


def atoms_at(strings: Sequence[str], starts: Sequence[int]) -> list[str]:
    """The atoms that fit every string's next character: the literal (when it is the same everywhere) and classes."""
    if any(p >= len(s) for s, p in zip(strings, starts, strict=True)):
        return []
    chars = {s[p] for s, p in zip(strings, starts, strict=True)}
    out = [atom for atom in ATOMS if all(fits(atom, c) for c in chars)]
    if len(chars) == 1 and next(iter(chars)) in LITERALS:
        out.insert(0, next(iter(chars)))
    return out


def atom_options(strings: Sequence[str], starts: Sequence[int], atom: str, *, every_quantifier: bool = True,
                 with_prior: bool = True) -> list[Option]:
    """``atom`` with a quantifier, each way it reads a piece of every string (``every_quantifier=False``: only the
    tightest quantifier of each reading, as inside groups)."""
    out: list[Option] = []
    char_cost = 0.0 if atom not in ATOMS else -math.log(ATOM_SIZE[atom])
    for lengths in atom_reads(strings, starts, atom):
        options = quantifiers(frozenset(lengths))
        ends = tuple(p + n for p, n in zip(starts, lengths, strict=True))
        read = []
        for low, high in options if every_quantifier else options[:1]:
            score = sum(log_length(low, high, n) for n in lengths) + sum(lengths) * char_cost
            if with_prior:
                score += log_quantified_prior(atom, low, high)
            read.append(Option(render(atom, low, high), ends, score, atom))
        out += heapq.nlargest(QUANTIFIERS_KEPT, read, key=lambda o: o.score)
    return out


def quantified(strings: Sequence[str], starts: Sequence[int]) -> list[Option]:
    """Every quantified atom that reads a piece of every string."""
    return [option for atom in atoms_at(strings, starts) for option in atom_options(strings, starts, atom)]


def tightest(strings: Sequence[str], starts: Sequence[int]) -> str | None:
    """The atom with the fewest characters that fits every string's next character (a literal where it is one
    character); None where a string has ended or no atom fits."""
    atoms = atoms_at(strings, starts)
    if not atoms:
        return None
    return atoms[0] if atoms[0] not in ATOMS else min(atoms, key=lambda a: (ATOM_SIZE[a], a))


def _subset(values: Sequence, members: Sequence[int]) -> list:
    return [values[i] for i in members]


def _splits(chars: set[str]) -> list[str]:
    """The atoms that split strings by their next character: each literal there and each class (not negated)."""
    return sorted(c for c in chars if c in LITERALS) + [a for a in dsl.CLASSES if any(fits(a, c) for c in chars)]


def _moved(starts: Sequence[int], members: Sequence[int], ends: Sequence[int]) -> tuple[int, ...]:
    out = list(starts)
    for i, end in zip(members, ends, strict=True):
        out[i] = end
    return tuple(out)


def optional_groups(strings: Sequence[str], starts: Sequence[int]) -> list[Option]:
    """``(X)?`` and ``(SX)?``: the strings whose next character fits X's atom (or is the literal S) read the group,
    the others skip it; each part its tightest reading."""
    out: list[Option] = []
    live = [i for i, (s, p) in enumerate(zip(strings, starts, strict=True)) if p < len(s)]
    for atom in _splits({strings[i][starts[i]] for i in live}):
        takers = [i for i in live if fits(atom, strings[i][starts[i]])]
        if not takers or len(takers) == len(strings):
            continue
        sub, sub_starts = _subset(strings, takers), _subset(starts, takers)
        taken_or_not = len(strings) * math.log(0.5)  # each string takes the group or skips it with 1/2
        for first in atom_options(sub, sub_starts, atom, every_quantifier=False):
            inners = [(first.regex, first.ends, first.score + math.log(2 / 3))]
            second = tightest(sub, first.ends) if atom not in ATOMS else None  # a literal, then a field
            if second is not None and second != atom:
                inners += [(first.regex + o.regex, o.ends, first.score + o.score + math.log(1 / 3))
                           for o in atom_options(sub, first.ends, second, every_quantifier=False)]
            for regex, sub_ends, score in inners:
                out.append(Option(f"({regex})?", _moved(starts, takers, sub_ends), LOG_OPTIONAL + score + taken_or_not))
    return out


def alternations(strings: Sequence[str], starts: Sequence[int]) -> list[Option]:
    """``(A|B)``: the strings whose next character fits A's atom read A, the others B's tightest atom (each the
    tightest quantifier of its reading)."""
    if any(p >= len(s) for s, p in zip(strings, starts, strict=True)):
        return []
    chars = {s[p] for s, p in zip(strings, starts, strict=True)}
    if len(chars) < 2:
        return []
    out: list[Option] = []
    seen: set[str] = set()
    for atom in _splits(chars):
        left = [i for i in range(len(strings)) if fits(atom, strings[i][starts[i]])]
        right = [i for i in range(len(strings)) if i not in left]
        other = tightest(_subset(strings, right), _subset(starts, right)) if left and right else None
        if other is None:
            continue
        for a in atom_options(_subset(strings, left), _subset(starts, left), atom, every_quantifier=False):
            for b in atom_options(_subset(strings, right), _subset(starts, right), other, every_quantifier=False):
                regex = f"({min(a.regex, b.regex)}|{max(a.regex, b.regex)})"
                if regex in seen:
                    continue
                seen.add(regex)
                ends = _moved(_moved(starts, left, a.ends), right, b.ends)
                out.append(Option(regex, ends, LOG_ALTERNATION + a.score + b.score + len(strings) * math.log(0.5)))
    return out


def _fields(text: str, start: int, atom: str, separator: str) -> list[int] | None:
    """The lengths of the fields of ``atom`` characters joined by ``separator`` from ``start`` (None: no field)."""
    lengths = []
    position = start
    while True:
        n = run_length(text, position, atom)
        if n == 0:
            return lengths or None
        lengths.append(n)
        position += n
        if position + 1 < len(text) and text[position] == separator and fits(atom, text[position + 1]):
            position += 1
        else:
            return lengths


def separated(strings: Sequence[str], starts: Sequence[int]) -> list[Option]:
    """``X;X``, ``X;X;X`` and ``X(;X)*``: fields of one atom (the tightest quantifier over every field's length)."""
    if any(p >= len(s) for s, p in zip(strings, starts, strict=True)):
        return []
    out: list[Option] = []
    for separator in dsl.SEPARATORS:
        if not any(separator in s[p:] for s, p in zip(strings, starts, strict=True)):
            continue
        sep = dsl.Literal(separator).render()
        for atom in atoms_at(strings, starts):
            if atom not in ATOMS or fits(atom, separator):
                continue
            fields = [_fields(s, p, atom, separator) for s, p in zip(strings, starts, strict=True)]
            if any(f is None for f in fields):
                continue
            low, high = quantifiers(frozenset(n for f in fields for n in f))[0]  # the tightest
            x = render(atom, low, high)
            counts = {len(f) for f in fields}
            chars = sum(sum(f) for f in fields)
            base = (LOG_SEPARATED + log_quantified_prior(atom, low, high) - math.log(len(dsl.SEPARATORS))
                    + sum(log_length(low, high, n) for f in fields for n in f) - chars * math.log(ATOM_SIZE[atom]))
            ends = tuple(p + sum(f) + len(f) - 1 for p, f in zip(starts, fields, strict=True))
            if len(counts) == 1 and next(iter(counts)) in (2, 3):
                n = next(iter(counts))
                out.append(Option(sep.join([x] * n), ends, base + math.log(1 / 3), atom))
            if max(counts) > 1:  # each further field with the speaker's chance to type one more
                more = sum(math.log(1 - OPEN_CONTINUE) + (len(f) - 1) * math.log(OPEN_CONTINUE) for f in fields)
                out.append(Option(f"{x}({sep}{x})*", ends, base + math.log(1 / 3) + more, atom))
    return out


# ---------------------------------------------------------------- the search


class _Search:
    def __init__(self, strings: Sequence[str], keep: int, max_nodes: int | None = None, seconds: float | None = None):
        self.strings = tuple(strings)
        self.max_nodes = MAX_NODES if max_nodes is None else max_nodes
        self.deadline = time.monotonic() + (SECONDS if seconds is None else seconds)
        self.goal = tuple(len(s) for s in strings)
        self.keep = keep
        self.edges: dict[tuple[int, ...], list[Option]] = {}
        self.best: dict[tuple[tuple[int, ...], int], list[tuple[float, str, int, str]]] = {}

    def options(self, node: tuple[int, ...]) -> list[Option]:
        if node not in self.edges:
            if len(self.edges) >= self.max_nodes or time.monotonic() > self.deadline:
                return []  # bounded: a node past the budget is not read (the best-scored pieces were read first)
            found = [Option(o.regex, o.ends, o.score + LOG_QUANTIFIED, o.atom)
                     for o in quantified(self.strings, node)]
            found += (optional_groups(self.strings, node) + alternations(self.strings, node)
                      + separated(self.strings, node))
            self.edges[node] = [o for o in found if o.ends != node]
        return self.edges[node]

    def completions(self, node: tuple[int, ...], budget: int) -> list[tuple[float, str, int, str]]:
        """The ``keep`` best (score, regex, components, first atom) paths from ``node`` to the goal in at most
        ``budget`` components. A piece of one atom is never followed by another of the same atom: ``[0-9]{2}[0-9]{2}``
        is ``[0-9]{4}``, which the search reads as one piece."""
        if node == self.goal:
            return [(0.0, "", 0, "")]
        if budget == 0:
            return []
        key = (node, budget)
        if key not in self.best:
            by_end: dict[tuple[int, ...], list[Option]] = {}
            for option in self.options(node):
                by_end.setdefault(option.ends, []).append(option)
            found: list[tuple[float, str, int, str]] = []
            groups = sorted(by_end.items(), key=lambda kv: -max(o.score for o in kv[1]))
            for end, options in groups:
                rests = self.completions(end, budget - 1)
                options = heapq.nlargest(self.keep, options, key=lambda o: o.score)
                # both lists best first: the pairs (i, j) with (i + 1)(j + 1) <= keep hold the keep best sums
                for i, option in enumerate(options):
                    for score, rest, count, first in rests[:self.keep // (i + 1)]:
                        if option.atom and option.atom == first:
                            continue
                        found.append((option.score + score, option.regex + rest, count + 1, option.atom))
            self.best[key] = heapq.nlargest(self.keep, found)
        return self.best[key]


def scored(examples: Sequence[dsl.Example], keep: int = KEEP) -> list[tuple[str, float]]:
    """Regexes of the program space consistent with every example, with their log scores (prior + likelihood of
    the positives), best first; [] when no path reads the positives or every regex read matches a negative.
    The last answers are kept: the page shows the search's guesses first, then the listeners rank them again."""
    return list(_scored(tuple(examples), keep))


@lru_cache(maxsize=64)
def _scored(examples: tuple[dsl.Example, ...], keep: int) -> tuple[tuple[str, float], ...]:
    positives = list(dict.fromkeys(ex.string for ex in examples if ex.positive))
    if not positives or any(len(s) > MAX_CHARS for s in positives):
        return ()
    for beam in (keep, WIDER * keep):  # the negatives may rule out every reading of the beam: then a wider one
        read = _Search(positives[:MAX_STRINGS], beam)
        best: dict[str, float] = {}
        for score, regex, count, _ in read.completions(tuple(0 for _ in read.strings), MAX_COMPONENTS):
            score += LOG_COUNT[max(count, min(dsl.COMPONENT_COUNTS))]  # one component: the smallest programs' share
            best[regex] = float(np.logaddexp(score, best.get(regex, -math.inf)))  # one program read two ways
        ranked = sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))
        found = tuple((regex, score) for regex, score in ranked if dsl.consistent(regex, examples))
        if found or all(ex.positive for ex in examples):
            return found[:keep]
    return ()


def search(examples: Sequence[dsl.Example], keep: int | None = None) -> list[str]:
    """The consistent regexes ``scored`` finds, best first, at most ``keep``."""
    found = [regex for regex, _ in scored(examples)]
    return found if keep is None else found[:keep]
