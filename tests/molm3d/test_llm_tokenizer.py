"""LoRA merged at load equals peft's LoRA; the tokenizer reproduces 3D-MoLM's slow-tokenizer ids."""

from __future__ import annotations

import pytest
import torch

from apps.molm3d.llm import LORA_ALPHA, LORA_TARGETS, lora_pairs, merge_lora, resize_for_molm
from apps.molm3d.tasks import build_prompt
from apps.molm3d.tokenizer import MoLMTokenizer

ZWITTERION = "CC(=O)OC(CC(=O)[O-])C[N+](C)(C)C"


def tiny_llama(seed: int = 0):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                      vocab_size=50, rms_norm_eps=1e-6)
    return LlamaForCausalLM(cfg).eval()


def test_merged_lora_matches_peft():
    from peft import LoraConfig, get_peft_model

    peft_model = get_peft_model(tiny_llama(), LoraConfig(r=8, lora_alpha=LORA_ALPHA, lora_dropout=0.1,
                                                         target_modules=list(LORA_TARGETS)))
    with torch.no_grad():
        for name, param in peft_model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.1)  # peft starts B at zero; a trained adapter does not
    peft_model.eval()
    lora = {k: v.clone() for k, v in peft_model.state_dict().items() if "lora_" in k}
    first = next(iter(lora))  # the checkpoint's naming, after blip2opt.llm_model.
    assert first.startswith("base_model.model.model.layers.0.") and first.endswith(".default.weight")
    ids = torch.tensor([[3, 7, 11, 19, 23]])
    with torch.no_grad():
        expected = peft_model(input_ids=ids).logits
        merged = tiny_llama()
        base = merged(input_ids=ids).logits
        assert merge_lora(merged, lora_pairs(lora)) == 2 * len(LORA_TARGETS)
        got = merged(input_ids=ids).logits
    assert not torch.allclose(base, expected, atol=1e-3)
    assert torch.allclose(got, expected, atol=1e-5)


def test_lora_pairs_rejects_unknown_keys():
    with pytest.raises(ValueError, match="unexpected"):
        lora_pairs({"base_model.model.lm_head.weight": torch.zeros(1)})


def test_new_embedding_rows_are_seeded_and_old_rows_kept():
    a, b = tiny_llama(), tiny_llama()
    old = a.get_input_embeddings().weight[:50].clone()
    resize_for_molm(a, 52, seed=5)
    resize_for_molm(b, 52, seed=5)
    assert a.get_input_embeddings().weight.shape == (52, 32) and a.get_output_embeddings().weight.shape == (52, 32)
    assert torch.equal(a.get_input_embeddings().weight[:50], old)
    assert torch.equal(a.get_input_embeddings().weight[50:], b.get_input_embeddings().weight[50:])
    assert 0.005 < a.get_input_embeddings().weight[50:].std() < 0.05


@pytest.fixture(scope="module")
def tok(tiny_snapshot):
    return MoLMTokenizer(tiny_snapshot / "llama-2-7b-hf" / "tokenizer.model")


def test_tokenizer_surgery(tok):
    assert tok.pad_token_id == tok.base_size and tok.mol_token_id == tok.base_size + 1 and len(tok) == tok.base_size + 2
    assert tok.bos_token_id == tok.eos_token_id == tok.unk_token_id == 2


def test_prompt_ids_follow_the_slow_tokenizer_rules(tok):
    prompt = build_prompt("What is the LogP of this molecule?", ZWITTERION)
    ids = tok.encode(prompt)
    assert ids[0] == 2 and ids.count(tok.mol_token_id) == 8
    first = ids.index(tok.mol_token_id)
    assert ids[first:first + 8] == [tok.mol_token_id] * 8
    assert tok.sp.id_to_piece(ids[first - 1]) == "▁"  # the space before <mol> is kept
    after = tok.sp.id_to_piece(ids[first + 8])
    assert after.startswith("▁")  # text after a special token gets sentencepiece's dummy prefix (legacy)
    assert ids[1:first] == tok.sp.encode(prompt.split("<mol>")[0])
    # the dummy prefix added after the dropped <mol> tokens decodes as a second space, as the legacy ids imply
    assert f"Input molecule: {ZWITTERION}  .\nResponse:" in tok.decode(ids)


def test_decode_skips_special_ids(tok):
    ids = tok.sp.encode("The LogP for the input molecule is 1.31.")
    assert tok.decode([tok.pad_token_id, *ids, tok.mol_token_id, tok.eos_token_id]) == \
        "The LogP for the input molecule is 1.31."
