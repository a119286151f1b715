"""Exact regex equivalence through automata (greenery FSMs), used for top-1 / top-10 scoring.

Upstream strips every backslash before comparing, which turns ``\\.`` into a wildcard (so ``a\\.b`` would equal
``a.b``). We keep the escapes: greenery 4 rejects a few escaped punctuation marks (``\\-``, ``\\&``, ``\\#``,
``\\^``) outside brackets, so each escaped character is rewritten to a one-character class with the same meaning
(``\\-`` -> ``[\\-]``, ``\\&`` -> ``[&]``) before parsing. Two regexes are equivalent when their minimal DFAs
accept the same language. A cheap sampled counter-example check runs first; it can only ever say "different"
with a concrete string in hand, so the answer stays exact.
"""

from __future__ import annotations

import random
from functools import lru_cache

from apps.prax import dsl

MAX_REGEX_CHARS = 200
_KEEP_ESCAPED_IN_CLASS = set("\\]-^[")
_SHORTHANDS = set("dDwWsS")


def to_greenery_syntax(pattern: str) -> str:
    """Rewrite escapes that greenery cannot read into equivalent character classes; everything else unchanged."""
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt in _SHORTHANDS or nxt.isalnum():
                out.append(c + nxt)  # \d, \w, \n ...: greenery knows the shorthands; letters are not ours to touch
            elif in_class:
                out.append("\\" + nxt if nxt in _KEEP_ESCAPED_IN_CLASS else nxt)
            else:
                out.append("[" + ("\\" + nxt if nxt in _KEEP_ESCAPED_IN_CLASS else nxt) + "]")
            i += 2
            continue
        if in_class and c == "]" and not out[-1].endswith("["):
            in_class = False
        elif not in_class and c == "[":
            in_class = True
            out.append(c)
            if pattern[i + 1:i + 2] == "^":
                out.append("^")
                i += 1
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


@lru_cache(maxsize=8192)
def to_fsm(pattern: str):
    """The greenery FSM of ``pattern``, or None if greenery cannot parse it."""
    from greenery import parse

    if len(pattern) > MAX_REGEX_CHARS:
        return None
    try:
        return parse(to_greenery_syntax(pattern)).to_fsm()
    except Exception:  # greenery raises its own parse errors (NoMatch and friends)
        return None


def _counter_example(a: str, b: str, tries: int = 8) -> bool:
    """True when a string generated from one regex is matched by exactly one of the two (so they differ)."""
    rng = random.Random(0)
    for source in (a, b):
        for _ in range(tries):
            try:
                text = dsl.generate_string(source, rng)
            except Exception:
                break
            if dsl.matches(a, text) != dsl.matches(b, text):
                return True
    return False


@lru_cache(maxsize=65536)
def equivalent(a: str, b: str) -> bool:
    """True when regexes ``a`` and ``b`` full-match exactly the same strings (a malformed regex equals nothing)."""
    if a == b:
        return dsl.try_compile(a) is not None
    if dsl.try_compile(a) is None or dsl.try_compile(b) is None:
        return False
    if _counter_example(a, b):
        return False
    fa, fb = to_fsm(a), to_fsm(b)
    if fa is None or fb is None:
        return False
    return fa.equivalent(fb)
