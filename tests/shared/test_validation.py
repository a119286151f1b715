import re

import pytest

from shared.errors import UserInputError
from shared.validation import check_choices, check_number, check_text, kind_of


def test_plain_text_passes_unchanged():
    assert check_text("a dog, red car 🚗 é", "Your tags", 100) == "a dog, red car 🚗 é"
    assert check_text("line 1\nline 2", "The question", 100, allow_newlines=True) == "line 1\nline 2"


@pytest.mark.parametrize(("value", "match"), [
    ("a\x00b", "U\\+0000"),
    ("\u202eevil", "U\\+202E"),
    ("zero\u200bwidth", "U\\+200B"),
    ("two\nlines", "U\\+000A"),
    ("x" * 11, "11 characters long; the limit is 10"),
    (42, "must be text, not a number"),
    (None, "must be text, not empty \\(null\\)"),
    ([1], "must be text, not a list"),
])
def test_refused_with_a_reason(value, match):
    with pytest.raises(UserInputError, match=match):
        check_text(value, "Your tags", 10)


def test_kinds_are_named_in_words_never_as_python_types():
    kinds = [kind_of(v) for v in (None, True, 3, 2.5, "a", [], (), {}, object())]
    assert kinds == ["empty (null)", "true/false", "a number", "a number", "text", "a list", "a list", "an object",
                     "a value of another kind"]


@pytest.mark.parametrize("value, whole, expected", [
    (5, True, 5), (5.0, True, 5), ("7", True, 7), (0.5, False, 0.5), ("0.25", False, 0.25), (10**30, False, 1e30),
])
def test_check_number_accepts_numbers_in_range(value, whole, expected):
    high = 10**31 if value == 10**30 else 10
    number = check_number(value, "The value", 0, high, whole=whole)
    assert number == expected and type(number) is (int if whole else float)


@pytest.mark.parametrize("value, whole, fragment", [
    (True, True, "must be a whole number between 0 and 10; got True."),
    (None, False, "must be a number between 0 and 10; got None."),
    ("many", True, "got 'many'."),
    (float("nan"), False, "got nan."),
    (float("inf"), False, "got inf."),
    (1.5, True, "must be a whole number between 0 and 10; got 1.5."),
    (-1, True, "got -1, below the minimum."),
    (10**4000, True, "above the maximum."),  # exact: an int of 4,001 digits has no float
    pytest.param(10**6000, True, "got a number of about 6,001 digits, above the maximum.", id="6001-digits"),
    ("9" * 400, True, "between 0 and 10; got '9999"),  # a float would be inf: quoted back, cut to 40 characters
])
def test_check_number_refuses_with_a_sentence_naming_the_argument(value, whole, fragment):
    with pytest.raises(UserInputError, match=re.escape(fragment)) as info:
        check_number(value, "The value", 0, 10, whole=whole, argument="value")
    assert info.value.argument == "value" and str(info.value).startswith("The value must be")


def test_check_number_without_an_upper_bound():
    assert check_number(10**12, "Beams", 1, whole=True) == 10**12
    with pytest.raises(UserInputError, match="Beams must be a whole number of at least 1; got 0, below the minimum."):
        check_number(0, "Beams", 1, whole=True)


CHOICES = ("GS", "MTGGenre", "EMO")


@pytest.mark.parametrize("value, names", [
    (["EMO", "GS"], ("EMO", "GS")), ("gs, mtggenre", ("GS", "MTGGenre")), ((" Emo ", "emo", "GS"), ("EMO", "GS")),
    ("GS,,", ("GS",)),
])
def test_check_choices_reads_a_list_or_text_in_any_case_each_name_once_as_declared(value, names):
    assert check_choices(value, CHOICES, "tasks") == names


@pytest.mark.parametrize("value, message", [
    ([], "Choose at least one of tasks."), (" , ", "Choose at least one of tasks."),
    ("GS, Tempo", "'Tempo' is not one of the tasks: choose from GS, MTGGenre, EMO."),
    ([3], "tasks must be a list of names, not a list."), ({"GS": 1}, "tasks must be a list of names, not an object."),
])
def test_check_choices_refuses_what_is_not_some_of_the_choices_and_names_the_argument(value, message):
    with pytest.raises(UserInputError, match=re.escape(message)) as refused:
        check_choices(value, CHOICES, "tasks", argument="tasks")
    assert refused.value.argument == "tasks"
