"""The PraX regex program space: grammar, seeded program sampler, Python-regex rendering, example sampler, matching.

The grammar is the one counted over the released program pools (fact sheet, "Grammar in use"): four character
classes and their negations, single-character literals (some escaped), the quantifiers ``{n}``, ``{n,}`` and
``{n,m}`` with small bounds, optional groups ``(...)?``, two-way alternation ``(a|b)`` and separated fields
``X;X;X`` / ``X(;X)*``. Matching is always a full match under a timeout, so no pattern can hang the server.
"""

from __future__ import annotations

import random
import re._parser as sre_parse  # the stdlib regex parser: our positive-string generator walks its tree
import string
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import regex

from shared.errors import UserInputError

# Example alphabet: letters + punctuation without backslash and quotes + digits (91 characters, no whitespace).
VALID = string.ascii_letters + "".join(c for c in string.punctuation if c not in "\\'\"") + string.digits
MIN_EXAMPLE_LEN, MAX_EXAMPLE_LEN = 1, 15
MATCH_TIMEOUT_S = 1.0

CLASSES = ("[0-9]", "[a-z]", "[A-Z]", "[A-Za-z]")
NEGATED_CLASSES = tuple("[^" + c[1:] for c in CLASSES)
PLAIN_LITERALS = string.ascii_letters + string.digits
SPECIAL_LITERALS = ",;!%:=@_"
ESCAPED_LITERALS = "-.&^#*$+"  # rendered with a backslash
SEPARATORS = (";", ",", "-", ".")
COMPONENT_COUNTS = (2, 3, 4, 5, 6)
COMPONENT_WEIGHTS = (1.75, 1.5, 1.25, 1.13, 1.12)


# ---------------------------------------------------------------- program AST


@dataclass(frozen=True)
class CharClass:
    text: str  # one of CLASSES or NEGATED_CLASSES

    def render(self) -> str:
        return self.text


@dataclass(frozen=True)
class Literal:
    char: str

    def render(self) -> str:
        return "\\" + self.char if self.char in ESCAPED_LITERALS else self.char


@dataclass(frozen=True)
class Quantified:
    """An atom with an optional quantifier: ``(n, n)`` -> ``{n}``, ``(n, None)`` -> ``{n,}``, ``(n, m)``."""

    atom: CharClass | Literal
    low: int = 1
    high: int | None = 1

    def render(self) -> str:
        body = self.atom.render()
        if (self.low, self.high) == (1, 1):
            return body
        if self.high is None:
            return f"{body}{{{self.low},}}"
        if self.low == self.high:
            return f"{body}{{{self.low}}}"
        return f"{body}{{{self.low},{self.high}}}"


@dataclass(frozen=True)
class Alternation:
    left: Quantified
    right: Quantified

    def render(self) -> str:
        return f"({self.left.render()}|{self.right.render()})"


@dataclass(frozen=True)
class OptionalGroup:
    parts: tuple[Quantified, ...]

    def render(self) -> str:
        return "(" + "".join(p.render() for p in self.parts) + ")?"


@dataclass(frozen=True)
class SeparatedField:
    """``X;X;X`` (``repeat`` copies) or ``X(;X)*`` (``repeat`` is None) with a delimiter from SEPARATORS."""

    field: Quantified
    separator: str
    repeat: int | None

    def render(self) -> str:
        sep = Literal(self.separator).render()
        x = self.field.render()
        if self.repeat is None:
            return f"{x}({sep}{x})*"
        return sep.join([x] * self.repeat)


Component = Quantified | Alternation | OptionalGroup | SeparatedField


@dataclass(frozen=True)
class Program:
    components: tuple[Component, ...]

    def render(self) -> str:
        return "".join(c.render() for c in self.components)

    def __str__(self) -> str:
        return self.render()


# ---------------------------------------------------------------- program sampler


def _atom(rng: random.Random) -> CharClass | Literal:
    roll = rng.random()
    if roll < 0.45:
        return CharClass(rng.choice(CLASSES))
    if roll < 0.55:
        return CharClass(rng.choice(NEGATED_CLASSES))
    if roll < 0.85:
        return Literal(rng.choice(PLAIN_LITERALS))
    return Literal(rng.choice(SPECIAL_LITERALS + ESCAPED_LITERALS))


def _quantifier(rng: random.Random) -> tuple[int, int | None]:
    kind = rng.random()
    if kind < 0.35:
        return 1, 1
    if kind < 0.6:
        n = rng.choice((2, 3, 4))
        return n, n
    if kind < 0.8:
        return rng.choice((1, 2, 3)), None
    low = rng.randint(1, 3)
    return low, rng.randint(low + 1, 4)


def _quantified(rng: random.Random) -> Quantified:
    atom = _atom(rng)
    low, high = _quantifier(rng) if isinstance(atom, CharClass) or rng.random() < 0.3 else (1, 1)
    return Quantified(atom, low, high)


def _component(rng: random.Random) -> Component:
    roll = rng.random()
    if roll < 0.62:
        return _quantified(rng)
    if roll < 0.8:
        return Alternation(_quantified(rng), _quantified(rng))
    if roll < 0.93:
        return OptionalGroup(tuple(_quantified(rng) for _ in range(rng.choice((1, 1, 2)))))
    return SeparatedField(_quantified(rng), rng.choice(SEPARATORS), rng.choice((2, 3, None)))


def sample_program(rng: random.Random, max_chars: int | None = None, max_tries: int = 100) -> Program:
    """A program of 2-6 components (weights 1.75/1.5/1.25/1.13/1.12) whose positives fit 1-15 characters."""
    for _ in range(max_tries):
        n = rng.choices(COMPONENT_COUNTS, weights=COMPONENT_WEIGHTS)[0]
        program = Program(tuple(_component(rng) for _ in range(n)))
        text = program.render()
        if max_chars is not None and len(text) > max_chars:
            continue
        if (_min_length(text) <= MAX_EXAMPLE_LEN and not compiled(text).fullmatch("")
                and sample_positives(text, random.Random(text), n=1)):  # a positive of 1-15 characters exists
            return program
    raise RuntimeError("could not sample a program within the limits; relax max_chars")


def program_split(program: str, heldout_every: int = 10) -> str:
    """'heldout' for a fixed 1/``heldout_every`` of all program strings (by CRC32), else 'train': disjoint pools."""
    return "heldout" if zlib.crc32(program.encode()) % heldout_every == 0 else "train"


def sample_programs(seed: int, n: int, split: str | None = None, max_chars: int | None = 30) -> list[str]:
    """``n`` distinct rendered programs from one seed, optionally only from one split."""
    rng = random.Random(seed)
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        text = sample_program(rng, max_chars=max_chars).render()
        if text in seen or (split is not None and program_split(text) != split):
            continue
        seen.add(text)
        out.append(text)
    return out


# ---------------------------------------------------------------- matching


@lru_cache(maxsize=65536)
def compiled(program: str) -> regex.Pattern:
    return regex.compile(program)


def try_compile(program: str) -> regex.Pattern | None:
    """The compiled pattern, or None for text that is not a valid regex (e.g. a malformed model sample)."""
    try:
        return compiled(program)
    except (regex.error, RecursionError, OverflowError, ValueError):
        return None


def matches(program: str | regex.Pattern, text: str, timeout: float = MATCH_TIMEOUT_S) -> bool:
    """Full match under a timeout; an invalid program or a timeout counts as no match."""
    pattern = try_compile(program) if isinstance(program, str) else program
    if pattern is None:
        return False
    try:
        return pattern.fullmatch(text, timeout=timeout) is not None
    except TimeoutError:
        return False


def consistent(program: str, examples: Iterable[Example], timeout: float = MATCH_TIMEOUT_S) -> bool:
    """True when the program full-matches every positive and no negative (upstream's ``consistent``)."""
    pattern = try_compile(program)
    if pattern is None:
        return False
    return all(matches(pattern, ex.string, timeout) == ex.positive for ex in examples)


# ---------------------------------------------------------------- example strings


@dataclass(frozen=True)
class Example:
    string: str
    label: str  # "+" or "-"

    @property
    def positive(self) -> bool:
        return self.label == "+"

    def to_dict(self) -> dict[str, str]:
        return {"string": self.string, "label": self.label}


_MAX_REPEAT_EXTRA = 3  # how far past the lower bound an open-ended repeat ({n,} or *) goes when generating


def _min_length(program: str) -> int:
    low, _ = sre_parse.parse(program).getwidth()
    return low


def _class_chars(items: list, alphabet: str) -> list[str]:
    negate = False
    chars: set[str] = set()
    for op, arg in items:
        name = str(op)
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL":
            chars.add(chr(arg))
        elif name == "RANGE":
            chars.update(chr(c) for c in range(arg[0], arg[1] + 1))
        elif name == "CATEGORY":
            probe = {"CATEGORY_DIGIT": string.digits, "CATEGORY_WORD": string.ascii_letters + string.digits + "_"}
            chars.update(probe.get(str(arg), ""))
    if negate:
        return [c for c in alphabet if c not in chars]
    return sorted(chars)


def _generate(tree, rng: random.Random, alphabet: str, out: list[str]) -> None:
    for op, arg in tree:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(arg))
        elif name == "NOT_LITERAL":
            out.append(rng.choice([c for c in alphabet if c != chr(arg)]))
        elif name == "ANY":
            out.append(rng.choice(alphabet))
        elif name == "IN":
            choices = _class_chars(arg, alphabet)
            if not choices:
                raise ValueError("empty character class")
            out.append(rng.choice(choices))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, sub = arg
            high = low + _MAX_REPEAT_EXTRA if high == sre_parse.MAXREPEAT else high
            for _ in range(rng.randint(low, max(low, high))):
                _generate(sub, rng, alphabet, out)
        elif name == "SUBPATTERN":
            _generate(arg[-1], rng, alphabet, out)
        elif name == "BRANCH":
            _generate(rng.choice(arg[1]), rng, alphabet, out)
        elif name in ("AT",):
            continue
        else:
            raise ValueError(f"cannot generate strings for regex construct {name}")


@lru_cache(maxsize=4096)
def _parsed(program: str):
    return sre_parse.parse(program)


def generate_string(program: str, rng: random.Random, alphabet: str = VALID) -> str:
    """One random string that ``program`` full-matches (our own generator over the stdlib parse tree)."""
    out: list[str] = []
    _generate(_parsed(program), rng, alphabet, out)
    return "".join(out)


def sample_positives(program: str, rng: random.Random, n: int = 10, max_tries: int | None = None) -> list[str]:
    """Up to ``n`` distinct matching strings of length 1-15, within ``5n`` tries (upstream's limits)."""
    found: list[str] = []
    for _ in range(max_tries or 5 * n):
        if len(found) >= n:
            break
        try:
            text = generate_string(program, rng)
        except (ValueError, RecursionError, sre_parse.error):
            return found
        if MIN_EXAMPLE_LEN <= len(text) <= MAX_EXAMPLE_LEN and text not in found and matches(program, text):
            found.append(text)
    return found


def random_string(rng: random.Random, alphabet: str = VALID) -> str:
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(MIN_EXAMPLE_LEN, MAX_EXAMPLE_LEN)))


def sample_negatives(program: str, rng: random.Random, n: int = 10, max_tries: int = 1000) -> list[str]:
    """Up to ``n`` distinct random strings over VALID (length 1-15) that ``program`` does not full-match."""
    found: list[str] = []
    pattern = try_compile(program)
    for _ in range(max_tries):
        if len(found) >= n:
            break
        text = random_string(rng)
        if text not in found and (pattern is None or not matches(pattern, text)):
            found.append(text)
    return found


def candidate_examples(program: str, rng: random.Random, n_pos: int = 10, n_neg: int = 10) -> list[Example]:
    """Positives and negatives of ``program``, labelled, positives first."""
    return ([Example(s, "+") for s in sample_positives(program, rng, n_pos)]
            + [Example(s, "-") for s in sample_negatives(program, rng, n_neg)])


def sample_spec(program: str, rng: random.Random, size: int | None = None, max_size: int = 10) -> list[Example]:
    """A random spec: a ``random.sample`` of the candidate examples, size uniform in 1..``max_size``."""
    pool = candidate_examples(program, rng)
    size = rng.randint(1, max_size) if size is None else size
    return rng.sample(pool, min(size, len(pool)))


# ---------------------------------------------------------------- user input

MAX_EXAMPLES = 30
MAX_STRING_CHARS = 100
_MINUS_SIGNS = {"-", "−", "–", "neg", "negative", "false"}
_PLUS_SIGNS = {"+", "pos", "positive", "true"}


def _input_error(message: str) -> UserInputError:
    """Every check here is about the pipeline's ``examples`` argument (``PraxPipeline.check_inputs``)."""
    return UserInputError(message, argument="examples")


def _label(value) -> str:
    if isinstance(value, bool):
        return "+" if value else "-"
    text = str(value).strip().lower()
    if text in _PLUS_SIGNS:
        return "+"
    if text in _MINUS_SIGNS:
        return "-"
    raise _input_error(f"The label {value!r} is not understood; use '+' for strings that should match "
                       "and '-' for strings that should not.")


def validate_examples(examples: Sequence, allow_empty: bool = False) -> list[Example]:
    """Check user examples ({"string","label"} dicts, (string, label) pairs or Example) and return Examples.

    Raises UserInputError for: no examples, over MAX_EXAMPLES, strings that are empty, too long or hold
    non-printable or non-ASCII characters, and a string given both as + and as -. Exact repeats are dropped.
    """
    if examples is None:
        examples = []
    if not isinstance(examples, (list, tuple)):
        raise _input_error("Examples must be a list of {\"string\": ..., \"label\": \"+\" or \"-\"} items.")
    if not examples and not allow_empty:
        raise _input_error("There are no examples yet, so there is nothing to guess from: "
                           "add a string that should match (+) or should not match (-).")
    if len(examples) > MAX_EXAMPLES:
        raise _input_error(f"That is {len(examples)} examples; the limit is {MAX_EXAMPLES}. "
                           "Remove some (the most informative few are usually enough).")
    out: list[Example] = []
    labels: dict[str, str] = {}
    for item in examples:
        if isinstance(item, Example):
            text, label = item.string, item.label
        elif isinstance(item, dict):
            if "string" not in item or "label" not in item:
                raise _input_error("Each example needs a \"string\" and a \"label\" (\"+\" or \"-\").")
            text, label = item["string"], _label(item["label"])
        elif isinstance(item, (list, tuple)) and len(item) == 2:
            text, label = item[0], _label(item[1])
        else:
            raise _input_error("Each example must be {\"string\": ..., \"label\": \"+\" or \"-\"}.")
        if not isinstance(text, str):
            raise _input_error(f"The example {text!r} is not text; type the string itself.")
        check_string(text)
        if text in labels:
            if labels[text] != label:
                raise _input_error(f"The string {text!r} is given both as a match (+) and as a non-match (-); "
                                   "remove one of the two.")
            continue
        labels[text] = label
        out.append(Example(text, label))
    return out


def check_string(text: str) -> None:
    """One example string: 1 to MAX_STRING_CHARS printable ASCII characters."""
    if not text:
        raise _input_error("An example string is empty; type at least one character.")
    if len(text) > MAX_STRING_CHARS:
        raise _input_error(f"The example {text[:20]!r}... is {len(text)} characters long; "
                           f"the limit is {MAX_STRING_CHARS}.")
    bad = [c for c in text if not (c.isascii() and c.isprintable())]
    if bad:
        raise _input_error(f"The example {text!r} contains the character {bad[0]!r}, which is not printable ASCII; "
                           "use letters, digits, punctuation or spaces only.")
