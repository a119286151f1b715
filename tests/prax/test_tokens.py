import pytest
from transformers import ByT5Tokenizer

from apps.prax import tokens
from apps.prax.dsl import Example


@pytest.fixture(scope="module")
def tokenizer():
    return ByT5Tokenizer()


def test_installed_tokenizer_has_the_offsets_upstream_hard_codes(tokenizer):
    assert tokenizer.convert_tokens_to_ids("<extra_id_0>") == 259 == tokens.extra_id(0)
    assert tokenizer.convert_tokens_to_ids("<extra_id_124>") == 383 == tokens.PROGRAM_ID
    assert tokenizer.convert_tokens_to_ids("<extra_id_123>") == 382 == tokens.UTTERANCES_ID
    assert len(tokenizer) == tokens.VOCAB_SIZE == 384
    assert (tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.unk_token_id) == (0, 1, 2)


def test_prompt_serialises_as_the_fact_sheet_shows(tokenizer):
    spec = [Example("875dAiTH", "+"), Example("096dAi", "-")]
    prompt = tokens.listener_prompt(spec)
    assert prompt == "<extra_id_123><extra_id_0>875dAiTH+<extra_id_1>096dAi-"
    assert tokens.encode_listener_input(spec) == tokenizer(prompt).input_ids
    assert tokens.encode_listener_input(spec)[:2] == [382, 259]


def test_user_text_that_looks_like_a_special_token_stays_bytes():
    ids = tokens.encode_listener_input([Example("<extra_id_5>", "+")])
    assert 264 not in ids and ids[2] == ord("<") + 3


def test_byte_decode_is_chr_c_minus_3_and_position_tokens_are_stripped(tokenizer):
    assert tokens.decode_token(3 + ord("a")) == "a"
    assert tokens.decode_token(259) == "<extra_id_0>"
    assert tokens.decode_token(1) == ""
    program = "[0-9]{2}\\-"
    ids = tokens.encode_program(program)
    assert ids == tokenizer(program).input_ids and ids[-1] == 1
    assert tokens.decode_program([0, 261] + ids + [5, 6]) == program
    assert tokens.decode_program([tokens.extra_id(3), 3 + ord("x"), tokens.extra_id(124)]) == "x"
