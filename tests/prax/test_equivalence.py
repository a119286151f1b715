import random

import pytest

from apps.prax import dsl
from apps.prax.equivalence import equivalent, to_fsm, to_greenery_syntax


def test_fact_sheet_metric_examples():
    assert equivalent("[0-9]{2}", "[0-9][0-9]")
    assert not equivalent(r"a\.b", "a.b")  # upstream's backslash stripping would call these equal
    assert not dsl.consistent("abc", [dsl.Example("b", "+")])


@pytest.mark.parametrize("a, b", [
    (r"\-", "-"), (r"\&\#", "&#"), (r"\^x", r"[\^]x"), (r"\$\+\*", r"[$][+][*]"), ("(a|b)", "[ab]"),
    ("[A-Za-z]{2,}", "[A-Za-z][A-Za-z]+"), ("x(;x)*", "x(;x){0,}"), ("[^0-9]", "[^0-9]"),
    ("a{1,3}", "(a|aa|aaa)"),
])
def test_equivalent_pairs(a, b):
    assert equivalent(a, b)


@pytest.mark.parametrize("a, b", [
    ("[^0-9]", "[a-z]"), ("[0-9]{2,}", "[0-9]{2,4}"), (r"a\.", "a."), ("(ab)?", "ab"), ("[A-Z]", "[A-Za-z]"),
    ("abc", "([a-z"),
])
def test_different_pairs(a, b):
    assert not equivalent(a, b)


def test_escapes_are_rewritten_not_stripped():
    assert to_greenery_syntax(r"a\.b\-") == "a[.]b[\\-]"
    assert to_greenery_syntax(r"[^0-9]\&") == "[^0-9][&]"


def test_every_sampled_program_has_an_automaton_and_equals_itself():
    rng = random.Random(0)
    for _ in range(60):
        program = dsl.sample_program(rng, max_chars=30).render()
        assert to_fsm(program) is not None, program
        assert equivalent(program, "(" + program + ")")
