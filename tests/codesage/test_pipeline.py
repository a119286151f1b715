"""CodeSagePipeline on a tiny checkpoint in the official layout: the contract, the ranking by cosine similarity, the
embedding kept between searches, the released key layouts and refusals of a checkpoint that does not match."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file, save_file

from apps.codesage import pipeline as pipeline_module
from apps.codesage.model import load_encoder
from apps.codesage.pipeline import CodeSageOutput, CodeSagePipeline, _key
from shared.errors import CheckpointError, UserInputError
from tests.fixtures.tiny_codesage import write_checkpoint

CODE = ("def add(a, b):\n    return a + b\n\n\ndef read(path):\n    return open(path).read()\n\n\n"
        "class Stack:\n    pass\n")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return write_checkpoint(tmp_path_factory.mktemp("codesage-small"))


@pytest.fixture
def pipe(folder):
    return CodeSagePipeline.from_pretrained(folder)


def test_a_search_ranks_every_snippet_by_cosine_similarity_to_the_query(pipe):
    steps = []
    out = pipe("def add(a, b):\n    return a + b", CODE, [], 3, callback=lambda s, t: steps.append((s, t)))
    assert isinstance(out, CodeSageOutput) and out.searched == 3
    assert out.embedded == 3, "the query and the snippet it equals share one embedding"
    assert [m.start for m in out.matches][0] == 1 and out.matches[0].score == pytest.approx(1.0, abs=1e-4), \
        "the snippet equal to the query is first, at similarity 1"
    scores = [m.score for m in out.matches]
    assert scores == sorted(scores, reverse=True) and all(-1 <= s <= 1.0001 for s in scores)
    vectors = {code: pipe.embed(code).embedding for code in [m.code for m in out.matches]}
    query = torch.tensor(pipe.embed("def add(a, b):\n    return a + b").embedding)
    for match in out.matches:  # each score is the dot product of the two unit embeddings
        assert match.score == pytest.approx(float(query @ torch.tensor(vectors[match.code])), abs=1e-4)
    assert steps and steps[-1][0] == steps[-1][1]
    assert json.loads(json.dumps(out.to_dict()))["matches"][0]["file"] == "pasted code"


def test_a_second_question_about_the_same_code_embeds_only_the_question(pipe):
    first = pipe("add two numbers", CODE, [], 2)
    again = pipe("read a file", CODE, [], 2)
    assert (first.embedded, again.embedded) == (4, 1)


def test_the_cache_is_bounded(pipe, monkeypatch):
    monkeypatch.setattr(pipeline_module, "CACHE_SNIPPETS", 2)
    pipe("add two numbers", CODE, [], 2)
    assert len(pipe._cache) == 2


def test_an_embedding_is_unit_length_and_says_when_the_text_was_cut(pipe):
    short = pipe.embed("x = 1")
    assert short.dimensions == 32 and abs(sum(v * v for v in short.embedding) - 1) < 1e-5 and not short.truncated
    long = pipe.embed("x = 1\n" * 400)
    assert long.truncated and long.tokens == pipe.max_tokens == 128
    out = pipe("x", "x = 1; " * 400, [], 1)
    assert out.notes == ("1 snippet is longer than 128 tokens; the first 128 of each were read.",)


def test_batched_embeddings_equal_one_at_a_time(pipe):
    texts = ["a", "def f(x):\n    return x * 2", "sort the list of numbers " * 10]
    sequences = [pipe.tokenizer.encode(t, 128).ids for t in texts]
    together = pipe._embed(sequences, [_key(s) for s in sequences])[0]
    pipe._cache.clear()
    alone = torch.cat([pipe._embed([s], [_key(s)])[0] for s in sequences])
    assert torch.allclose(together, alone, atol=1e-6)


def test_bad_input_is_a_sentence(pipe):
    with pytest.raises(UserInputError, match="No query") as info:
        pipe("  ", CODE, [], 3)
    assert info.value.argument == "query"


def test_a_masked_lm_checkpoint_loads_its_encoder_keys(folder, tmp_path):
    """Saved from CodeSageForMaskedLM: keys under ``transformer.`` and an ``lm_head.weight``, as transformers reads
    them for ``base_model_prefix = "transformer"``; the same encoder."""
    state = load_file(folder / "model.safetensors")
    other = tmp_path / "mlm"
    other.mkdir()
    for name in ("config.json", "vocab.json", "merges.txt", "tokenizer_config.json", "special_tokens_map.json"):
        (other / name).write_bytes((folder / name).read_bytes())
    save_file({**{f"transformer.{k}": v for k, v in state.items()}, "lm_head.weight": state["wte.weight"].clone()},
              str(other / "model.safetensors"))
    ids = torch.tensor([[5, 6, 7, 0]])
    mask = torch.ones_like(ids)
    assert torch.equal(load_encoder(other).embed(ids, mask), load_encoder(folder).embed(ids, mask))


@pytest.mark.parametrize(("change", "words"), [
    ("drop", "missing key h.1.mlp.c_proj.bias"),
    ("extra", "unknown key h.9.attn.c_attn.weight"),
    ("shape", "h.0.attn.c_attn.weight has shape"),
])
def test_weights_that_do_not_match_the_config_are_refused_by_name(folder, tmp_path, change, words):
    state = load_file(folder / "model.safetensors")
    if change == "drop":
        del state["h.1.mlp.c_proj.bias"]
    elif change == "extra":
        state["h.9.attn.c_attn.weight"] = state["h.0.attn.c_attn.weight"].clone()
    else:
        state["h.0.attn.c_attn.weight"] = state["h.0.attn.c_attn.weight"].T.contiguous()
    other = tmp_path / "bad"
    other.mkdir()
    (other / "config.json").write_bytes((folder / "config.json").read_bytes())
    save_file({k: v.contiguous() for k, v in state.items()}, str(other / "model.safetensors"))
    with pytest.raises(CheckpointError, match=words):
        load_encoder(other)


def test_a_folder_without_weights_says_what_is_missing(folder, tmp_path):
    (tmp_path / "config.json").write_bytes((folder / "config.json").read_bytes())
    with pytest.raises(CheckpointError, match="Neither model.safetensors nor pytorch_model.bin"):
        load_encoder(tmp_path)


def test_a_search_over_its_token_budget_searches_what_fits_and_the_next_question_the_rest(pipe):
    lengths = [len(e.ids) for e in pipe.tokenizer.encode_batch([s.code for s in pipe.check_inputs(
        "q", CODE, [], 3).corpus.snippets], pipe.max_tokens)]
    pipe.token_budget = lengths[0] + lengths[1]  # the first two snippets fit, the third waits
    first = pipe("add two numbers", CODE, [], 5)
    assert first.searched == 2 and {m.start for m in first.matches} == {1, 5}
    assert first.notes == ("Searched 2 of the 3 snippets: this server embeds at most "
                           f"{pipe.token_budget:,} new tokens per search. Ask again to search the rest (those "
                           "embedded now are kept).",)
    second = pipe("read a file", CODE, [], 5)
    assert second.searched == 3 and second.notes == () and second.embedded == 2  # the question and the third
