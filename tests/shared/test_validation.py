import pytest

from shared.errors import UserInputError
from shared.validation import check_text, kind_of


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
