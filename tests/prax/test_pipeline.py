"""The listener pipeline on a tiny checkpoint in the official layout, loaded through the real code paths."""

import json
import os
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from apps.prax import DEMO, dsl
from apps.prax.dsl import Example
from apps.prax.model import PICKLE_NAME, SAFETENSORS_NAME, load_listener
from apps.prax.pipeline import PraxPipeline
from apps.prax.tokens import PROGRAM_ID, encode_program
from shared import weights
from shared.checkpoints import converted_path
from shared.errors import UserInputError, WeightsUnavailable

SPEC = [{"string": "ab1", "label": "+"}, {"string": "zz", "label": "-"}]
FILES = ("config.json", "generation_config.json", PICKLE_NAME, "special_tokens_map.json", "tokenizer_config.json")


@pytest.fixture(scope="module")
def official_pipe(official_checkpoint):
    pipe = PraxPipeline.from_pretrained(official_checkpoint, device="cpu")
    pipe.max_new_tokens = 12  # a random model rarely emits </s>; short samples keep the tests fast
    return pipe


def test_official_layout_has_upstream_files_and_keys(official_checkpoint):
    assert sorted(FILES) == sorted(p.name for p in official_checkpoint.iterdir())
    state = torch.load(official_checkpoint / PICKLE_NAME, weights_only=True)
    assert {"shared.weight", "lm_head.weight", "encoder.embed_tokens.weight", "decoder.embed_tokens.weight",
            "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"} <= set(state)
    config = json.loads((official_checkpoint / "config.json").read_text())
    assert config["vocab_size"] == 384 and config["tie_word_embeddings"] is False


def test_pickle_is_loaded_safely_then_converted_once(tmp_path, monkeypatch, official_checkpoint):
    monkeypatch.setenv("DEMOHUB_CONVERTED_CACHE", str(tmp_path / "converted"))
    folder = shutil.copytree(official_checkpoint, tmp_path / "ckpt")
    state = torch.load(folder / PICKLE_NAME, weights_only=True)
    model = load_listener(folder)
    # ByT5's lm_head is its own matrix: it must not be tied to (or overwritten by) the embeddings
    torch.testing.assert_close(model.lm_head.weight, state["lm_head.weight"])
    torch.testing.assert_close(model.shared.weight, state["shared.weight"])
    assert not torch.equal(model.lm_head.weight, model.shared.weight)
    cached = converted_path(folder / PICKLE_NAME)
    assert cached.is_file() and not (folder / SAFETENSORS_NAME).exists()  # the snapshot folder is left as it was
    converted = load_file(cached)
    torch.testing.assert_close(converted["lm_head.weight"], state["lm_head.weight"])
    x = torch.tensor([[382, 259, 100, 46, 1]])
    d = torch.tensor([[PROGRAM_ID, 100]])
    torch.testing.assert_close(model(input_ids=x, decoder_input_ids=d).logits,
                               load_listener(folder)(input_ids=x, decoder_input_ids=d).logits)
    # the second start reads the conversion, not the pickle: a marked conversion shows through
    converted["lm_head.weight"] = torch.zeros_like(converted["lm_head.weight"])
    save_file(converted, str(cached))
    assert torch.count_nonzero(load_listener(folder).lm_head.weight) == 0


def test_samples_start_from_extra_id_124(official_pipe):
    pipe = official_pipe
    spec = [Example("ab1", "+")]
    torch.manual_seed(0)
    ids, mask = pipe._encode([spec])
    out = pipe.model.generate(input_ids=ids, attention_mask=mask, do_sample=True, top_p=0.9, max_new_tokens=6,
                              decoder_start_token_id=PROGRAM_ID, num_return_sequences=2)
    assert out[:, 0].tolist() == [PROGRAM_ID, PROGRAM_ID]
    samples = pipe.sample_programs([spec], 4, seed=1)[0]
    assert len(samples) == 4 and all(logprob < 0 for _, logprob in samples)


def test_sample_logprob_is_the_teacher_forced_logprob(bundled_literal):
    """Checked on the trained tiny listener: its samples are ASCII regexes that end with </s>, so each one can be
    re-encoded and scored (the random official-layout model's samples are cut-off byte soup that cannot)."""
    pipe = bundled_literal
    spec = [Example("ab1", "+")]
    ids, mask = pipe._encode([spec])
    samples = pipe.sample_programs([spec], 4, seed=1)[0]
    assert len(samples) == 4
    for program, logprob in samples:
        target = torch.tensor([encode_program(program)])
        assert program.isascii() and target.shape[1] <= pipe.max_new_tokens, f"not a finished sample: {program!r}"
        decoder = torch.cat([torch.tensor([[PROGRAM_ID]]), target[:, :-1]], dim=1)
        with torch.no_grad():
            logits = pipe.model(input_ids=ids, attention_mask=mask, decoder_input_ids=decoder).logits
        expected = torch.log_softmax(logits, -1).gather(-1, target.unsqueeze(-1)).sum().item()
        assert logprob == pytest.approx(expected, abs=1e-3), program


def test_rank_filters_dedupes_and_sorts_by_logprob():
    examples = [Example("ab", "+"), Example("a1", "-")]
    samples = [("[a-z]{2}", -3.0), ("ab", -1.0), ("[a-z]{2}", -2.5), ("a.", -0.5), ("([", -0.1), ("ab", -1.0)]
    result = PraxPipeline.rank(examples, samples, k=10)
    assert [c.program for c in result.candidates] == ["ab", "[a-z]{2}"]
    assert result.candidates[1].logprob == -2.5 and result.candidates[0].count == 2
    assert result.n_samples == 6 and result.n_consistent == 4 and result.n_unique == 2
    assert result.candidates[0].matches == (True, False)
    assert sum(c.probability for c in result.candidates) == pytest.approx(1.0)
    assert PraxPipeline.rank(examples, samples, k=1).candidates[0].program == "ab"


def test_batched_call_returns_only_consistent_candidates(bundled_literal):
    """The trained tiny listener finds candidates for both specs, so the per-candidate checks really run."""
    results = bundled_literal.synthesize_batch([SPEC, SPEC[:1]], k=3, num_samples=8, seed=0)
    assert len(results) == 2
    for result, spec in zip(results, [SPEC, SPEC[:1]], strict=True):
        assert result.n_samples == 8 and 1 <= len(result.candidates) <= 3, result.to_dict()
        assert sum(c.count for c in result.candidates) <= result.n_consistent <= result.n_samples
        assert len(result.candidates) <= result.n_unique  # the samples' programs and the search's, distinct
        examples = [Example(e["string"], e["label"]) for e in spec]
        for c in result.candidates:
            assert c.matches == tuple(e["label"] == "+" for e in spec)
            assert dsl.consistent(c.program, examples), c.program


@pytest.mark.parametrize("kwargs, fragment", [({"k": 0}, "between 1 and 50"), ({"num_samples": 5000}, "between 1")])
def test_bad_settings_are_user_errors(official_pipe, kwargs, fragment):
    pipe = official_pipe
    with pytest.raises(UserInputError, match=fragment):
        pipe(SPEC, **kwargs)
    with pytest.raises(UserInputError, match="no examples"):
        pipe([])


def test_hf_cache_layout_resolves_offline(tmp_path, monkeypatch, official_checkpoint):
    ws = DEMO.weight_set("listener-suffix-idx-300k")
    sha = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "models--pragmatic-programs--listener-suffix-idx-300k"
    snapshot = repo / "snapshots" / sha
    (repo / "blobs").mkdir(parents=True)
    snapshot.mkdir(parents=True)
    for name in FILES:  # the cache stores blobs and links them from the snapshot, as huggingface_hub does
        blob = repo / "blobs" / f"blob-{name}"
        shutil.copy(official_checkpoint / name, blob)
        os.symlink(os.path.relpath(blob, snapshot), snapshot / name)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(sha)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("DEMOHUB_CHECKPOINTS", str(tmp_path / "no-bundles"))
    assert weights.state("prax", ws) == weights.WeightState.CACHED
    folder = weights.resolve("prax", ws)
    assert folder == snapshot
    pipe = PraxPipeline.from_pretrained(folder, device="cpu")
    pipe.max_new_tokens = 12
    out = pipe(SPEC, k=2, num_samples=4, seed=0)
    assert out.n_samples == 4
    assert out.weights == pipe.name == "listener-suffix-idx-300k"  # the repo's name, not the snapshot's sha
    with pytest.raises(WeightsUnavailable, match="demohub download prax --weights pragmatic-ft-listener"):
        weights.resolve("prax", DEMO.weight_set("pragmatic-ft-listener"))


def test_the_listener_scores_a_program_as_it_scores_its_own_sample(bundled_literal):
    """``score_programs``: one teacher-forced pass gives each program the summed log-probability a sample of it
    carries (so the search's regexes and the samples rank on one scale)."""
    pipe = bundled_literal
    spec = [Example("ab1", "+"), Example("x", "-")]
    samples = [(p, lp) for p, lp in pipe.sample_programs([spec], 6, seed=2)[0] if p.isascii()]
    scored = pipe.score_programs(spec, [p for p, _ in samples])
    assert scored == pytest.approx([lp for _, lp in samples], abs=1e-3)


def test_a_listener_ranks_its_samples_with_the_searchs_regexes(bundled_literal):
    """The shipped "semicolon-separated numbers" set: the page gets the search's regexes ranked with the listener's
    samples on one scale (search score + weight x listener log-probability, apps/prax/ranking.py), the listener's
    scores the ones a sample of each would carry, every guess consistent; the intended regex first."""
    from apps.prax import ranking, search
    from apps.prax.actions import PRESETS

    examples = [{"string": s, "label": label} for s, label in PRESETS["semicolon-separated numbers"]]
    result = bundled_literal(examples, k=5, num_samples=100, seed=0)
    assert result.candidates[0].program == "[0-9]{1,3}(;[0-9]{1,3})*"
    assert [c.score for c in result.candidates] == sorted((c.score for c in result.candidates), reverse=True)
    searched = dict(search.scored(dsl.validate_examples(examples)))
    for c in result.candidates:
        if c.search_score is not None:
            assert c.search_score == searched[c.program]
            assert c.score == pytest.approx(c.search_score + ranking.LISTENER_WEIGHT * c.logprob)
    assert all(all(c.matches[i] == (e["label"] == "+") for i, e in enumerate(examples)) for c in result.candidates)



def test_our_listeners_sample_as_long_as_their_longest_program_and_upstreams_as_upstream(bundled_literal,
                                                                                         official_checkpoint):
    """Our bundled listeners were trained on programs of at most 30 characters (their config.json says so): they
    sample up to 40 tokens, as our trainer samples them; a listener in the official layout, which says nothing, up to
    upstream's 128."""
    from apps.prax.pipeline import MAX_NEW_TOKENS

    assert bundled_literal.model.config.prax_max_program_chars == 30 and bundled_literal.max_new_tokens == 40
    assert PraxPipeline.from_pretrained(official_checkpoint).max_new_tokens == MAX_NEW_TOKENS == 128
