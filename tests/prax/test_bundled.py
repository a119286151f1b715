"""Our trained tiny listeners, bundled in checkpoints/prax/, loaded through shared.weights like any weight set."""

import json

import pytest
import torch

from apps.prax import DEMO, dsl
from apps.prax.dsl import Example
from apps.prax.tokens import PROGRAM_ID, encode_program
from shared import weights

SETS = ("tiny-literal", "tiny-pragmatic")


@pytest.mark.parametrize("name", SETS)
def test_bundled_sets_resolve_offline_in_hf_layout(name, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    ws = DEMO.weight_set(name)
    assert weights.state("prax", ws) == weights.WeightState.BUNDLED
    folder = weights.resolve("prax", ws, allow_download=False)
    assert (folder / "model.safetensors").is_file()
    config = json.loads((folder / "config.json").read_text())
    assert config["model_type"] == "t5" and config["vocab_size"] == 384
    log = [json.loads(line) for line in (folder / "train_log.jsonl").read_text().splitlines()]
    assert log[0]["event"] == "config" and log[-1]["event"] == "done"


def test_bundled_weights_stay_small():
    total = sum(p.stat().st_size for name in SETS
                for p in (weights.BUNDLED_ROOT / "prax" / name).glob("*.safetensors"))
    assert 0 < total < 50_000_000


def test_pipeline_logprob_is_the_teacher_forced_logprob(bundled_literal):
    spec = [Example("ab12", "+"), Example("x", "-")]
    samples = bundled_literal.sample_programs([spec], 12, seed=0)[0]
    ids, mask = bundled_literal._encode([spec])
    checked = 0
    for program, logprob in samples:
        if not program.isascii():
            continue
        target = torch.tensor([encode_program(program)])
        if target.shape[1] > bundled_literal.max_new_tokens:
            continue
        decoder = torch.cat([torch.tensor([[PROGRAM_ID]]), target[:, :-1]], dim=1)
        with torch.no_grad():
            logits = bundled_literal.model(input_ids=ids, attention_mask=mask, decoder_input_ids=decoder).logits
        expected = torch.log_softmax(logits, -1).gather(-1, target.unsqueeze(-1)).sum().item()
        assert logprob == pytest.approx(expected, abs=1e-3)
        checked += 1
    assert checked >= 6


def test_trained_listener_finds_consistent_regexes(bundled_literal):
    result = bundled_literal([("123", "+"), ("45", "+"), ("ab", "-")], k=5, num_samples=40, seed=0)
    assert result.candidates, "a trained listener should find some consistent regex for digits"
    for c in result.candidates:
        assert dsl.consistent(c.program, result.examples)


def test_suggest_example_singles_out_the_top_guess(bundled_literal):
    spec = [("123", "+"), ("ab", "-")]
    s = bundled_literal.suggest_example(spec, num_samples=40, seed=0)
    assert s.example.string not in {"123", "ab"}
    assert dsl.matches(s.assumed_program, s.example.string) == s.example.positive
    assert 1 <= s.remaining <= s.n_programs
    assert 0 < s.speaker_probability <= 1
    assert "speaker" in s.note.lower()
