import random
import re

import pytest

from apps.prax import dsl
from apps.prax.dsl import Example
from shared.errors import UserInputError

ATOM = r"(\[\^?(0-9|a-z|A-Z|A-Za-z)\]|[A-Za-z0-9,;!%:=@_]|\\[-.&^#*$+])"
QUANT = r"(\{[234]\}|\{[123],\}|\{[1-3],[2-4]\})?"
UNIT = ATOM + QUANT
COMPONENT = (rf"({UNIT}|\({UNIT}\|{UNIT}\)|\(({UNIT}){{1,2}}\)\?"
             rf"|(?P<f>{UNIT})(?P<s>[;,]|\\[-.])(?P=f)((?P=s)(?P=f))?|(?P<g>{UNIT})\((?P<t>[;,]|\\[-.])(?P=g)\)\*)")


def test_alphabet_is_91_printable_characters_without_quotes_backslash_or_space():
    assert len(dsl.VALID) == 91 == len(set(dsl.VALID))
    assert not set("\\'\" \t\n") & set(dsl.VALID)


def test_sampler_is_seeded_and_draws_2_to_6_components():
    a = [dsl.sample_program(random.Random(7)).render() for _ in range(3)]
    b = [dsl.sample_program(random.Random(7)).render() for _ in range(3)]
    assert a == b
    rng = random.Random(1)
    counts = [len(dsl.sample_program(rng).components) for _ in range(400)]
    assert min(counts) == 2 and max(counts) == 6
    assert counts.count(2) > counts.count(6)


def test_rendered_programs_stay_in_the_grammar_and_compile():
    rng = random.Random(2)
    for _ in range(300):
        program = dsl.sample_program(rng)
        text = program.render()
        for component in program.components:
            assert re.fullmatch(COMPONENT, component.render()), component.render()
        re.compile(text)
        assert "." not in text.replace("\\.", "") and "+" not in text.replace("\\+", "")
        assert "*" not in text.replace("\\*", "").replace(")*", "")


def test_max_chars_limits_program_length():
    rng = random.Random(3)
    assert all(len(dsl.sample_program(rng, max_chars=20).render()) <= 20 for _ in range(100))


def test_positives_match_and_negatives_do_not():
    rng = random.Random(4)
    for _ in range(100):
        program = dsl.sample_program(rng).render()
        positives = dsl.sample_positives(program, rng)
        negatives = dsl.sample_negatives(program, rng)
        assert positives and negatives
        assert all(1 <= len(s) <= 15 and re.fullmatch(program, s) for s in positives)
        assert all(1 <= len(s) <= 15 and not re.fullmatch(program, s) and set(s) <= set(dsl.VALID)
                   for s in negatives)
        assert len(set(positives)) == len(positives)


def test_generator_covers_negated_classes_and_alternation():
    rng = random.Random(5)
    strings = {dsl.generate_string("[^0-9](a|bc)", rng) for _ in range(200)}
    assert all(re.fullmatch("[^0-9](a|bc)", s) for s in strings)
    assert {s[1:] for s in strings} == {"a", "bc"}
    assert not any(s[0].isdigit() for s in strings)


def test_spec_sizes_and_labels():
    rng = random.Random(6)
    spec = dsl.sample_spec("[a-z]{2}[0-9]", rng, size=6)
    assert len(spec) == 6
    assert all(dsl.matches("[a-z]{2}[0-9]", e.string) == e.positive for e in spec)


def test_full_match_not_search():
    assert dsl.matches("abc", "abc")
    assert not dsl.matches("abc", "xabcx")
    assert not dsl.consistent("abc", [Example("b", "+")])


BACKTRACKING = "(a|a)+b"  # 2**n ways to split n a's; the regex module does not optimise this one away


def test_catastrophic_backtracking_times_out_instead_of_hanging():
    """How long the guarded call takes is measured by benchmarks/prax_dsl.py; here: it really hits the timeout,
    and a timeout counts as no match."""
    text = "a" * 40 + "!"
    with pytest.raises(TimeoutError):  # the input really needs the guard: unguarded it would run for days
        dsl.try_compile(BACKTRACKING).fullmatch(text, timeout=0.05)
    assert dsl.matches(BACKTRACKING, text, timeout=0.05) is False
    assert dsl.matches(BACKTRACKING, "aaab", timeout=0.05) is True  # a valid program, so False came from the timeout
    assert not dsl.consistent(BACKTRACKING, [Example(text, "+")], timeout=0.05)


def test_invalid_regex_matches_nothing():
    assert dsl.matches("([a-z", "a") is False
    assert dsl.consistent("([a-z", [Example("a", "+")]) is False


def test_program_split_is_deterministic_and_disjoint():
    held = dsl.sample_programs(0, 30, split="heldout")
    train = dsl.sample_programs(0, 30, split="train")
    assert all(dsl.program_split(p) == "heldout" for p in held)
    assert not set(held) & set(train)


@pytest.mark.parametrize("examples, fragment", [
    ([], "no examples"),
    ([{"string": "ab", "label": "+"}, {"string": "ab", "label": "-"}], "both as a match (+) and as a non-match"),
    ([{"string": "x" * 101, "label": "+"}], "the limit is 100"),
    ([{"string": f"s{i}", "label": "+"} for i in range(31)], "the limit is 30"),
    ([{"string": "a\x00b", "label": "+"}], "not printable"),
    ([{"string": "tab\there", "label": "-"}], "not printable"),
    ([{"string": "", "label": "+"}], "empty"),
    ([{"string": "ab", "label": "?"}], "not understood"),
    ([{"label": "+"}], "needs a \"string\""),
])
def test_bad_input_is_a_user_input_error(examples, fragment):
    with pytest.raises(UserInputError, match=re.escape(fragment)):
        dsl.validate_examples(examples)


def test_validate_accepts_pairs_dicts_and_drops_exact_repeats():
    out = dsl.validate_examples([("ab", "+"), {"string": "ab", "label": "+"}, {"string": "c d", "label": "−"}])
    assert out == [Example("ab", "+"), Example("c d", "-")]
    assert dsl.validate_examples([{"string": "x" * 100, "label": "+"}] * 1)[0].string == "x" * 100
