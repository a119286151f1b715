"""The search over the PraX program space (apps/prax/search.py): the regex a person means comes first for example sets
written here by hand (not the evaluation set under tests/fixtures/prax_people, which these tests never read), every
regex it returns is consistent and of the program space, its score is the one its docstring writes, it is bounded,
and the ranking (apps/prax/ranking.py) puts the listener's samples and the search's regexes on one scale."""

from __future__ import annotations

import math
import random

import pytest

from apps.prax import dsl, ranking, search
from apps.prax.actions import PRESETS


def spec(*pairs: tuple[str, str]) -> list[dsl.Example]:
    return [dsl.Example(s, label) for s, label in pairs]


@pytest.mark.parametrize("pairs, first", [
    (PRESETS["digits then letters"], "[0-9]{2}[a-z]{2,3}"),
    (PRESETS["capitalised word"], "[A-Z][a-z]{4}"),
    (PRESETS["semicolon-separated numbers"], "[0-9]{1,3}(;[0-9]{1,3})*"),
    ([("A-12", "+"), ("B-7", "+"), ("A12", "-")], r"[A-Z]\-[0-9]{1,}"),
    ([("ab;cd", "+"), ("ef;gh", "+")], "[a-z]{2};[a-z]{2}"),  # a separated field, two copies
    ([("color", "+"), ("colour", "+")], "colo(u)?r"),  # an optional part
    ([("john_doe", "+"), ("mary-ann", "+"), ("bob", "-")], "[a-z]{4}[^A-Za-z][a-z]{3}"),
    ([("v1.2", "+"), ("v10.0", "+"), ("v3.14", "+"), ("1.2", "-")], r"v[0-9]{1,2}\.[0-9]{1,2}"),
    ([("50%", "+"), ("7%", "+"), ("100%", "+"), ("50", "-")], "[0-9]{1,}%"),  # lengths vary: open-ended
    ([("9:30", "+"), ("12:05", "+"), ("930", "-")], "[0-9]{1,}:[0-9]{2}"),
    ([("a.txt", "+"), ("notes.txt", "+"), ("x.md", "-")], r"[a-z]{1,}\.txt"),
])
def test_the_regex_a_person_means_comes_first(pairs, first):
    found = search.search(spec(*pairs))
    assert found[0] == first, found[:5]
    assert all(dsl.consistent(regex, spec(*pairs)) for regex in found)


def test_more_examples_make_the_more_specific_regex_likelier(monkeypatch):
    """The size principle: with two dates, one separated field of 2-4 digits (one component: the sampler's prior
    favours short programs) comes first and the five-part date second; with four dates the five-part one scores
    above the separated field by more (the gap grows with every date)."""
    dates = [("2023-01-05", "+"), ("1999-12-31", "+"), ("2024-07-04", "+"), ("1985-10-26", "+")]
    meant, loose = r"[0-9]{4}\-[0-9]{2}\-[0-9]{2}", r"[0-9]{2,4}\-[0-9]{2,4}\-[0-9]{2,4}"
    two = search.search(spec(*dates[:2]))
    assert two[:2] == [loose, meant], two[:5]
    gaps = []
    monkeypatch.setattr(search, "SECONDS", 60.0)  # read whole on a busy machine (its 1 s net cut it in CI)
    search._scored.cache_clear()
    for n in (2, 3, 4):
        scores = dict(search.scored(spec(*dates[:n]), keep=256))
        gaps.append(scores[meant] - scores[loose])
    assert gaps[0] < 0 < gaps[2] and gaps == sorted(gaps), gaps


def test_alternation_reads_two_kinds_of_piece():
    found = search.search(spec(("a-1", "+"), ("a_2", "+"), ("a.3", "-")))
    assert r"a(\-|_)[0-9]" in found[:3], found[:5]


def test_every_shipped_example_set_gets_a_regex():
    for name, pairs in PRESETS.items():
        assert search.search(spec(*pairs)), name


@pytest.mark.parametrize("pairs", [
    [("ab", "+"), ("ab", "-")],  # a string both in and out
    [("x", "-")],  # no positive: nothing to read
    [("1", "+"), ("a", "+"), ("%", "+"), ("Q", "+"), ("1", "-")],  # the negative is one of the positives
])
def test_nothing_where_no_positive_is_given_or_a_negative_rules_every_reading_out(pairs):
    assert search.search(spec(*pairs)) == []


def test_one_piece_is_never_split_into_two_of_the_same_atom():
    """``[0-9]{2}[0-9]{2}`` is ``[0-9]{4}`` written twice: the search reads a run of one atom as one piece."""
    for regex in search.search(spec(("2023-01-05", "+"), ("1999-12-31", "+"))):
        assert "[0-9]{2}[0-9]{2}" not in regex and "[0-9][0-9]" not in regex, regex


def test_the_score_is_the_prior_plus_the_likelihood_its_docstring_writes():
    """``[A-Z]\\-[0-9]{1,}`` for "A-12" and "B-7", computed by hand from the sampler's probabilities: three
    components, a class with no quantifier, an escaped literal, a class with {1,}; each positive's pieces."""
    prior = (math.log(1.5 / sum(dsl.COMPONENT_WEIGHTS))  # three components
             + math.log(0.62) + math.log(0.45 / 4) + math.log(0.35)  # [A-Z]
             + math.log(0.62) + math.log(0.15 / 16) + math.log(0.7 + 0.3 * 0.35)  # \-
             + math.log(0.62) + math.log(0.45 / 4) + math.log(0.20 * 0.6))  # [0-9]{1,}
    likelihood = (2 * -math.log(26)  # one capital in each
                  + math.log(0.5) + math.log(0.5) + 2 * -math.log(10)  # "12": the second digit typed with p 0.5
                  + math.log(0.5) + -math.log(10))  # "7"
    scores = dict(search.scored(spec(("A-12", "+"), ("B-7", "+"))))
    assert scores[r"[A-Z]\-[0-9]{1,}"] == pytest.approx(prior + likelihood)


def test_whatever_it_returns_is_consistent_and_of_the_program_space_and_it_answers_most_synthetic_specs():
    """Soundness on 100 specs sampled from held-out programs (their own examples): every returned regex fits every
    example and parses as a program of the space; the share of specs it answers is measured (printed; asserted
    above a floor under it)."""
    from tests.prax.test_people_specs import in_program_space

    rng = random.Random(7)
    answered = with_positive = 0
    for program in dsl.sample_programs(seed=3, n=100, split="heldout"):
        examples = dsl.sample_spec(program, rng)
        found = search.search(examples)
        assert all(dsl.consistent(regex, examples) for regex in found), (program, found[:3])
        assert all(in_program_space(regex) or search_single_component(regex) for regex in found[:5]), found[:5]
        answered += bool(found)
        with_positive += any(ex.positive for ex in examples)
    print(f"the search answered {answered} of 100 synthetic specs ({with_positive} with a positive)")
    assert answered >= 0.9 * with_positive


def search_single_component(regex: str) -> bool:
    """A one-component regex (``[a-z]{1,}``): the search reads it too, scored as the smallest programs' share."""
    from tests.prax.test_people_specs import in_program_space

    return in_program_space(regex + "a") and not in_program_space(regex)


def test_it_is_bounded_by_its_node_budget():
    """Twelve long positives of mixed characters: many ways to read them; the search stops at ``MAX_NODES``."""
    rng = random.Random(1)
    strings = ["".join(rng.choice(dsl.VALID) for _ in range(15)) for _ in range(12)]
    read = search._Search(strings, search.KEEP, max_nodes=200, seconds=60)
    read.completions(tuple(0 for _ in strings), search.MAX_COMPONENTS)
    assert len(read.edges) <= 200


def test_rank_puts_samples_and_the_searchs_regexes_on_one_scale():
    """A regex's ranking score is the search's score plus the listener's log-probability times its weight; a sample
    the search did not propose gets the search's lowest score; a regex only the search proposed has count 0."""
    w = ranking.LISTENER_WEIGHT
    examples = spec(("ab", "+"), ("a1", "-"))
    result = ranking.rank(examples, [("ab", -1.0), ("x", -0.2), ("[a-z]{1,}", -0.5)], k=5,
                          proposed=[("[a-z]{2}", -2.0, -10.0), ("ab", -1.0, -20.0)])
    by_program = {c.program: c for c in result.candidates}
    assert [c.program for c in result.candidates] == ["[a-z]{2}", "[a-z]{1,}", "ab"]
    assert by_program["[a-z]{2}"].score == -10.0 - 2.0 * w and by_program["[a-z]{2}"].count == 0
    assert by_program["ab"].score == -20.0 - 1.0 * w and by_program["ab"].count == 1
    assert by_program["[a-z]{1,}"].score == -20.0 - 0.5 * w and by_program["[a-z]{1,}"].search_score is None
    assert result.n_samples == 3 and result.n_consistent == 2 and result.n_unique == 3
    assert sum(c.probability for c in result.candidates) == pytest.approx(1.0)


def test_without_a_search_the_ranking_is_the_listeners_own():
    result = ranking.rank(spec(("ab", "+")), [("ab", -3.0), ("[a-z]{2}", -1.0)], k=5)
    assert [c.program for c in result.candidates] == ["[a-z]{2}", "ab"]


def test_the_search_alone_ranks_by_its_score():
    examples = spec(("2023-01-05", "+"), ("1999-12-31", "+"))
    result = ranking.search_only(examples, k=3)
    assert result.weights == ranking.SEARCH_ONLY and result.n_samples == 0
    assert [c.program for c in result.candidates] == search.search(examples, keep=3)


def test_a_wider_beam_where_the_negatives_rule_out_every_reading_of_the_first():
    """"N40X74" should not match: every one of the 32 best readings of the positives reads its X with a class, so
    all of them match it; the search then reads once more with a beam 8 times wider and finds the alternation."""
    examples = spec(("N40W74", "+"), ("S33E151", "+"), ("40N74W", "-"), ("N40X74", "-"))
    read = search._Search(["N40W74", "S33E151"], search.KEEP)
    first = [regex for _, regex, _, _ in read.completions((0, 0), search.MAX_COMPONENTS)]
    assert first and not any(dsl.consistent(regex, examples) for regex in first)
    found = search.search(examples)
    assert found and all("(E|W)" in regex for regex in found[:3]), found[:3]
    assert len(found) <= search.KEEP
