import pytest

from shared.errors import UserInputError
from shared.validation import check_text


def test_plain_text_passes_unchanged():
    assert check_text("a dog, red car 🚗 é", "Your tags", 100) == "a dog, red car 🚗 é"
    assert check_text("line 1\nline 2", "The question", 100, allow_newlines=True) == "line 1\nline 2"


@pytest.mark.parametrize(("value", "match"), [
    ("a\x00b", "U\\+0000"),
    ("\u202eevil", "U\\+202E"),
    ("zero\u200bwidth", "U\\+200B"),
    ("two\nlines", "U\\+000A"),
    ("x" * 11, "11 characters long; the limit is 10"),
    (42, "must be text, not int"),
])
def test_refused_with_a_reason(value, match):
    with pytest.raises(UserInputError, match=match):
        check_text(value, "Your tags", 10)
