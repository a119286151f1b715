"""The hand-written PraX evaluation set (tests/fixtures/prax_people/specs.json): example sets typed as a person would.

Each set is a regex from the PraX program space and the strings a person teaching it might type. These tests check
the file itself: it loads, every program is in the program space (by a recogniser written here from the grammar, not
by the sampler), every set is consistent with its program, and the set has the variety its README promises.
"""

from __future__ import annotations

import json
import random
import statistics
from functools import lru_cache
from pathlib import Path

import pytest

from apps.prax import dsl

SPECS_PATH = Path(__file__).resolve().parents[1] / "fixtures" / "prax_people" / "specs.json"

# ---------------------------------------------------------------- a recogniser for the PraX program space

_CLASSES = ("[0-9]", "[a-z]", "[A-Z]", "[A-Za-z]", "[^0-9]", "[^a-z]", "[^A-Z]", "[^A-Za-z]")
_PLAIN = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789" + ",;!%:=@_"
_ESCAPED = "-.&^#*$+"
_QUANTIFIERS = ("{2}", "{3}", "{4}", "{1,}", "{2,}", "{3,}",
                "{1,2}", "{1,3}", "{1,4}", "{2,3}", "{2,4}", "{3,4}")
_SEPARATORS = (";", ",", "\\-", "\\.")


def _atom_end(s: str, i: int) -> int | None:
    for cls in _CLASSES:
        if s.startswith(cls, i):
            return i + len(cls)
    if i + 1 < len(s) and s[i] == "\\" and s[i + 1] in _ESCAPED:
        return i + 2
    if i < len(s) and s[i] in _PLAIN:
        return i + 1
    return None


def _unit_ends(s: str, i: int) -> list[int]:
    """Ends of every quantified atom that starts at ``i``: the bare atom, or the atom and one quantifier."""
    end = _atom_end(s, i)
    if end is None:
        return []
    return [end] + [end + len(q) for q in _QUANTIFIERS if s.startswith(q, end)]


def _component_ends(s: str, i: int) -> list[tuple[int, str]]:
    """(end, kind) for every component that starts at ``i``."""
    out = [(e, "atom") for e in _unit_ends(s, i)]
    if s.startswith("(", i):
        for e1 in _unit_ends(s, i + 1):
            if s.startswith("|", e1):
                out += [(e2 + 1, "alternation") for e2 in _unit_ends(s, e1 + 1) if s.startswith(")", e2)]
            if s.startswith(")?", e1):
                out.append((e1 + 2, "optional"))
            out += [(e2 + 2, "optional") for e2 in _unit_ends(s, e1) if s.startswith(")?", e2)]
    for e1 in _unit_ends(s, i):
        field = s[i:e1]
        for sep in _SEPARATORS:
            if s.startswith(sep + field, e1):
                e2 = e1 + len(sep + field)
                out.append((e2, "separated2"))
                if s.startswith(sep + field, e2):
                    out.append((e2 + len(sep + field), "separated3"))
            if s.startswith("(" + sep + field + ")*", e1):
                out.append((e1 + len(sep + field) + 3, "separated*"))
    return out


@lru_cache(maxsize=1024)
def parses(program: str) -> frozenset[tuple[str, ...]]:
    """Every reading of ``program`` as 2-6 components of the PraX grammar, as tuples of component kinds."""
    states: dict[int, set[tuple[str, ...]]] = {0: {()}}
    for i in range(len(program)):
        for kinds in states.get(i, set()):
            if len(kinds) >= 6:
                continue
            for end, kind in _component_ends(program, i):
                states.setdefault(end, set()).add(kinds + (kind,))
    return frozenset(k for k in states.get(len(program), set()) if 2 <= len(k) <= 6)


def in_program_space(program: str) -> bool:
    return bool(parses(program))


def has_feature(program: str, *kinds: str) -> bool:
    return any(set(kinds) & set(reading) for reading in parses(program))


# ---------------------------------------------------------------- the recogniser itself


@pytest.mark.parametrize("program", [
    r"[0-9]{4}\-[0-9]{2}\-[0-9]{2}", r"[A-Z]{2}[0-9]{3,}", r"(x|[0-9]{2})a", r"(\-)?[0-9]{1,}",
    r"x[0-9]{1,}(,[0-9]{1,})*", r"[a-z]{2};[a-z]{2}", r"[A-Z]{3}(\-[A-Z]{3})*!", r"a{2}0{1,}",
    r"[^A-Za-z](\.[0-9]{2})?", r"abcdef", r"[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}",
])
def test_recogniser_accepts_programs_of_the_space(program):
    assert in_program_space(program)


@pytest.mark.parametrize("program", [
    "[0-9]+", "[0-9]+x", "(ab|cd)", "(ab|cd)x", "a*", "a*b", "[0-9]{5}", "[0-9]{5}x", "(a|b|c)", "(a|b|c)d",
    "[0-9]", "abcdefg", "a.b", "a-b", "[a-f]x", r"\d{2}x", "(a|b)?c", "([a-z]{2}x{2}y)?z", "a{1}b", "a{4,5}b",
    "a{0,2}b", "a{2,2}b", "a{4,}b", "a(_a)*", "a(,b)*", "a b", "(a)(b)*", "a?b", "x[0-9]{1,}(,[0-9]{2})*",
    "[0-9]{1,}(,[0-9]{1,})*", "[A-Z]{3}(\\-[A-Z]{3})*",  # a separated field alone is one component, not 2-6
])
def test_recogniser_rejects_what_is_outside_the_space(program):
    assert not in_program_space(program)


def test_recogniser_accepts_every_program_the_dsl_sampler_draws():
    programs = dsl.sample_programs(seed=11, n=300) + [dsl.sample_program(random.Random(s)).render() for s in range(50)]
    assert [p for p in programs if not in_program_space(p)] == []


def test_recogniser_kinds():
    assert has_feature(r"x[0-9]{1,}(,[0-9]{1,})*", "separated*")
    assert has_feature(r"x[0-9]{2}\.[0-9]{2}\.[0-9]{2}", "separated3")
    assert in_program_space(r"[0-9]{2}\.[0-9]{2}\.[0-9]{2}")  # alone it reads only as five components
    assert not has_feature(r"[0-9]{2}\.[0-9]{2}\.[0-9]{2}", "separated3")
    assert not has_feature(r"[0-9]{2}:[0-9]{2}:[0-9]{2}", "separated2", "separated3", "separated*")
    assert has_feature(r"(a|[0-9]{2})b", "alternation") and not has_feature(r"(a|[0-9]{2})b", "optional")
    assert has_feature(r"a([0-9]{2}b)?", "optional") and not has_feature(r"a([0-9]{2}b)?", "alternation")


# ---------------------------------------------------------------- the evaluation set


@pytest.fixture(scope="module")
def specs() -> list[dict]:
    return json.loads(SPECS_PATH.read_text(encoding="utf-8"))


def test_file_loads_as_a_list_of_sets_with_the_four_fields(specs):
    assert isinstance(specs, list)
    for spec in specs:
        assert set(spec) == {"id", "program", "examples", "topic"}, spec
        assert isinstance(spec["program"], str) and isinstance(spec["topic"], str) and spec["topic"].strip()
        for example in spec["examples"]:
            assert set(example) == {"string", "label"} and example["label"] in ("+", "-"), (spec["id"], example)


def test_at_least_120_sets_with_unique_ids_and_programs(specs):
    assert len(specs) >= 120
    ids = [s["id"] for s in specs]
    assert len(set(ids)) == len(ids)
    assert all(i.startswith("p") and i[1:].isdigit() for i in ids)
    programs = [s["program"] for s in specs]
    assert len(set(programs)) == len(programs)


def test_every_program_is_in_the_prax_program_space(specs):
    outside = [s["program"] for s in specs if not in_program_space(s["program"])]
    assert outside == []
    for spec in specs:
        assert dsl.try_compile(spec["program"]) is not None, spec["id"]
        assert not dsl.matches(spec["program"], ""), spec["id"]


def test_every_string_is_1_to_15_characters_of_the_example_alphabet(specs):
    valid = set(dsl.VALID)
    for spec in specs:
        for example in spec["examples"]:
            text = example["string"]
            assert dsl.MIN_EXAMPLE_LEN <= len(text) <= dsl.MAX_EXAMPLE_LEN, (spec["id"], text)
            assert set(text) <= valid, (spec["id"], text)
            assert not set(text) & set(" \\'\""), (spec["id"], text)


def test_every_set_is_consistent_with_its_program(specs):
    for spec in specs:
        examples = [dsl.Example(e["string"], e["label"]) for e in spec["examples"]]
        wrong = [e for e in examples if dsl.matches(spec["program"], e.string) != e.positive]
        assert wrong == [], (spec["id"], spec["program"], wrong)
        assert dsl.consistent(spec["program"], examples), spec["id"]


def test_every_set_has_two_examples_a_positive_and_no_repeated_string(specs):
    for spec in specs:
        strings = [e["string"] for e in spec["examples"]]
        assert len(strings) >= 2, spec["id"]
        assert any(e["label"] == "+" for e in spec["examples"]), spec["id"]
        assert len(set(strings)) == len(strings), spec["id"]
        assert dsl.validate_examples(spec["examples"]) == [dsl.Example(e["string"], e["label"])
                                                           for e in spec["examples"]]


def test_variety_of_topics_negatives_and_program_features(specs):
    assert len({s["topic"] for s in specs}) >= 8
    with_negative = [s for s in specs if any(e["label"] == "-" for e in s["examples"])]
    assert len(with_negative) >= 0.3 * len(specs)
    programs = [s["program"] for s in specs]
    assert sum(has_feature(p, "alternation") for p in programs) >= 10
    assert sum(has_feature(p, "optional") for p in programs) >= 10
    # counted strictly: a list form X(SX)* or three copies X S X S X, not just X S X (which also reads as 3 atoms)
    assert sum(has_feature(p, "separated*", "separated3") for p in programs) >= 8
    assert sum(any(c in p for c in ("[^0-9]", "[^a-z]", "[^A-Z]", "[^A-Za-z]")) for p in programs) >= 3


def test_set_sizes_vary_like_people_do(specs):
    sizes = [len(s["examples"]) for s in specs]
    assert min(sizes) == 2 and max(sizes) >= 9
    assert 3 <= statistics.median(sizes) <= 8
    assert any(all(e["label"] == "+" for e in s["examples"]) for s in specs)  # some people give only positives
