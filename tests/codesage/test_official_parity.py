"""Our CodeSage against the official code: the paper's evaluation path (the remote ``modeling_codesage.py`` on
transformers 4.46.3, ``GPT2Tokenizer``, ``tokenize(text)[: length - 1] + [eos]`` padded to the length, the mask
``ids != pad_token_id``, ``pooler_output`` L2-normalised, dot products) recorded on the tiny checkpoint
(tests/codesage/official_outputs.json, made by tests/codesage/record_official.py; tests/codesage/README.md says how).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from apps.codesage.model import embed_sequences, load_encoder
from apps.codesage.tokenizer import CodeSageTokenizer
from tests.codesage.record_official import FIXTURE, weights_digest
from tests.fixtures.tiny_codesage import write_checkpoint

OFFICIAL = json.loads(FIXTURE.read_text(encoding="utf-8"))
NAMES = list(OFFICIAL["texts"])
LENGTH = OFFICIAL["length"]
ATOL = 1e-5

# The text holding "<pad>": the official tokenizer makes it the pad token, and the evaluation's mask
# (ids != pad_token_id) then leaves it out of attention and of the mean, so embed_sequences must mask by id, not by
# length only (it did not at first: 0.03 off on this text's unit vector).
PAD_IN_TEXT = "special_tokens"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    folder = write_checkpoint(tmp_path_factory.mktemp("codesage-small"))
    assert weights_digest(folder) == OFFICIAL["weights_sha256"], (
        "tests/fixtures/tiny_codesage.py no longer builds the checkpoint the official outputs were recorded on: "
        "record them again (tests/codesage/README.md)")
    return folder


@pytest.fixture(scope="module")
def tokenizer(folder):
    return CodeSageTokenizer(folder)


@pytest.fixture(scope="module")
def encoder(folder):
    return load_encoder(folder)


@pytest.fixture(scope="module")
def sequences(tokenizer):
    return [tokenizer.encode(OFFICIAL["texts"][name]["text"], LENGTH).ids for name in NAMES]


@pytest.fixture(scope="module")
def padded_as_official(encoder, tokenizer, sequences):
    """Every text padded to the recorded length in one batch, masked as the evaluation does (``ids !=
    pad_token_id``): (pooled, L2-normalised)."""
    ids = torch.full((len(sequences), LENGTH), tokenizer.pad_id, dtype=torch.long)
    for row, sequence in enumerate(sequences):
        ids[row, : len(sequence)] = torch.tensor(sequence)
    with torch.inference_mode():
        pooled = encoder.embed(ids, ids.ne(tokenizer.pad_id))
    return pooled.numpy(), torch.nn.functional.normalize(pooled, p=2, dim=1).numpy()


@pytest.fixture(scope="module", params=[None, 2 * LENGTH], ids=["one batch", "several batches"])
def ours_batched(request, encoder, tokenizer, sequences):
    """embed_sequences (length-sorted batches): the default budget (all texts in one batch, padded to the longest) and
    a budget of two sequences of the recorded length (batches of different lengths)."""
    kwargs = {} if request.param is None else {"batch_tokens": request.param}
    return embed_sequences(encoder, sequences, tokenizer.pad_id, **kwargs).numpy()


def official(name: str, field: str) -> np.ndarray:
    return np.asarray(OFFICIAL["texts"][name][field])


def test_the_official_code_loaded_our_tiny_checkpoint_key_for_key():
    assert OFFICIAL["loading_info"] == {"missing_keys": [], "unexpected_keys": [], "mismatched_keys": [],
                                        "error_msgs": []}
    assert OFFICIAL["made_with"]["transformers"] == "4.46.3"
    assert OFFICIAL["rounding_error"] < ATOL / 10  # the recorded floats' rounding leaves room for the tolerance


def test_the_special_tokens_are_the_official_ones(tokenizer):
    assert (tokenizer.pad_id, tokenizer.eos_id) == (OFFICIAL["pad_token_id"], OFFICIAL["eos_token_id"])


@pytest.mark.parametrize("name", NAMES)
def test_token_ids_match_the_official_tokenizer(tokenizer, name):
    recorded = OFFICIAL["texts"][name]
    encoded = tokenizer.encode(recorded["text"], LENGTH)
    assert list(encoded.ids) == recorded["ids"], name
    assert encoded.truncated == (recorded["token_count"] > LENGTH - 1)
    assert [list(e.ids) for e in tokenizer.encode_batch([recorded["text"]], LENGTH)] == [recorded["ids"]]


def test_the_recorded_texts_cover_the_edge_cases():
    texts = OFFICIAL["texts"]
    assert sum(t["token_count"] > LENGTH - 1 for t in texts.values()) >= 2  # truncated
    assert min(len(t["ids"]) for t in texts.values()) == 1  # the empty text: the end-of-sequence token alone
    assert OFFICIAL["eos_token_id"] in texts[PAD_IN_TEXT]["ids"][:-1]  # "<|endoftext|>" in the text, kept as eos
    assert OFFICIAL["pad_token_id"] in texts[PAD_IN_TEXT]["ids"]  # "<pad>" in the text, the pad token


@pytest.mark.parametrize("name", NAMES)
def test_pooled_output_matches_the_official_code(padded_as_official, name):
    pooled, normalised = padded_as_official
    row = NAMES.index(name)
    np.testing.assert_allclose(pooled[row], official(name, "pooler_output"), atol=ATOL, rtol=0, err_msg=name)
    np.testing.assert_allclose(normalised[row], official(name, "normalised"), atol=ATOL, rtol=0, err_msg=name)


@pytest.mark.parametrize("name", NAMES)
def test_embed_sequences_matches_the_official_embeddings(ours_batched, name):
    np.testing.assert_allclose(ours_batched[NAMES.index(name)], official(name, "normalised"), atol=ATOL, rtol=0,
                               err_msg=name)


def test_the_score_matrix_matches_the_official_one(ours_batched):
    np.testing.assert_allclose(ours_batched @ ours_batched.T, OFFICIAL["scores"], atol=ATOL, rtol=0)
