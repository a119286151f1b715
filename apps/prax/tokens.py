"""ByT5 token layout of the PraX listener: prompt serialisation and decoding (fact sheet, "Special tokens").

ByT5 ids: pad 0, ``</s>`` 1, unk 2, byte b -> b + 3, ``<extra_id_i>`` -> 259 + i (so ``<extra_id_124>`` is 383).
We encode ids ourselves rather than through the tokenizer's string parsing so that a user string which happens to
contain ``<extra_id_5>`` stays plain bytes; ``tests/prax`` checks that the installed ByT5Tokenizer agrees.
"""

from __future__ import annotations

from collections.abc import Sequence

from apps.prax.dsl import Example

PAD_ID, EOS_ID, UNK_ID = 0, 1, 2
BYTE_OFFSET = 3
EXTRA_ID_0 = 259
VOCAB_SIZE = 384
PROGRAM_TOKEN = 124  # <extra_id_124>: the listener's decoder start
UTTERANCES_TOKEN = 123  # <extra_id_123>: starts the examples in the encoder input


def extra_id(i: int) -> int:
    return EXTRA_ID_0 + i


PROGRAM_ID = extra_id(PROGRAM_TOKEN)
UTTERANCES_ID = extra_id(UTTERANCES_TOKEN)


def listener_prompt(examples: Sequence[Example]) -> str:
    """``<extra_id_123><extra_id_0>875dAiTH+<extra_id_1>096dAi-...`` (string then label: "suffix-idx")."""
    return f"<extra_id_{UTTERANCES_TOKEN}>" + "".join(
        f"<extra_id_{i}>{ex.string}{ex.label}" for i, ex in enumerate(examples))


def encode_listener_input(examples: Sequence[Example]) -> list[int]:
    """Token ids of ``listener_prompt(examples)`` followed by ``</s>``, as the ByT5 tokenizer produces them."""
    if len(examples) > UTTERANCES_TOKEN:
        raise ValueError(f"at most {UTTERANCES_TOKEN} examples fit the position tokens")
    ids = [UTTERANCES_ID]
    for i, ex in enumerate(examples):
        ids.append(extra_id(i))
        ids.extend(b + BYTE_OFFSET for b in (ex.string + ex.label).encode("utf-8"))
    ids.append(EOS_ID)
    return ids


def encode_program(program: str) -> list[int]:
    """Decoder target: the raw regex bytes and ``</s>`` (the decoder input starts with ``<extra_id_124>``)."""
    return [b + BYTE_OFFSET for b in program.encode("utf-8")] + [EOS_ID]


def decode_token(c: int) -> str:
    """Upstream ``decode``: c<3 special, c<258 ``chr(c-3)``, else ``<extra_id_{c-259}>``."""
    if c < BYTE_OFFSET:
        return ""
    if c < 258:
        return chr(c - BYTE_OFFSET)
    return f"<extra_id_{c - EXTRA_ID_0}>"


def decode_program(ids: Sequence[int]) -> str:
    """Program text from generated ids: stops at ``</s>``, drops pad/unk and strips position tokens."""
    out = []
    for c in ids:
        c = int(c)
        if c == EOS_ID:
            break
        if c < BYTE_OFFSET or c >= 258:  # specials and <extra_id_*> position tokens are stripped
            continue
        out.append(chr(c - BYTE_OFFSET))
    return "".join(out)
