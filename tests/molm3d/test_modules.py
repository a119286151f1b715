"""Our Uni-Mol, Q-Former and bridge against the official key/shape lists (full size on the meta device)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from apps.molm3d.conformer import featurize
from apps.molm3d.llm import LORA_TARGETS, lora_pairs
from apps.molm3d.qformer import MolQFormer, QFormer, QFormerConfig
from apps.molm3d.unimol import GaussianLayer, UniMolConfig, UniMolEncoder, collate
from tests.fixtures.tiny_molm3d import TINY_QFORMER, TINY_UNIMOL

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "molm3d"


def load(name: str) -> dict[str, list[int]]:
    return json.loads((FIXTURES / name).read_text())


def shapes(module: torch.nn.Module) -> dict[str, list[int]]:
    return {k: list(v.shape) for k, v in module.state_dict().items()}


def test_unimol_keys_and_shapes_match_official():
    with torch.device("meta"):
        model = UniMolEncoder()
    official = load("unimol_official_keys.json")
    assert shapes(model) == official
    assert len(official) == 193 and sum(p.numel() for p in model.parameters()) == 47_330_626


def test_qformer_keys_and_shapes_match_official():
    with torch.device("meta"):
        model = QFormer()
    official = load("qformer_official_keys.json")
    assert shapes(model) == official and len(official) == 255
    assert sum(p.numel() for p in model.parameters()) == 96_880_128
    cross = {int(k.split(".")[3]) for k in official if "crossattention" in k}
    assert cross == {0, 2, 4, 6, 8, 10} == {i for i, layer in enumerate(model.bert.encoder.layer)
                                             if layer.has_cross_attention}


def test_generalist_checkpoint_keys_load_into_our_modules():
    with torch.device("meta"):
        bridge = MolQFormer()
    ours = shapes(bridge)
    extra = load("blip2_extra_shapes.json")
    assert all(ours[k] == v for k, v in extra.items())
    expected = {k.split("blip2opt.", 1)[1]: v for k, v in load("generalist_ckpt_expected_keys.json").items()}
    assert len(expected) == 707
    non_llm = {k: v for k, v in expected.items() if not k.startswith("llm_model.")}
    assert {k: ours[k] for k in non_llm} == non_llm
    # every key we have and the checkpoint lacks is the frozen encoder or the position_ids buffer
    assert {k for k in ours if k not in non_llm} == {k for k in ours if k.startswith("graph_encoder.")} | {
        "Qformer.bert.embeddings.position_ids"}
    cfg = QFormerConfig.from_state_dict({k: torch.empty(v, device="meta") for k, v in non_llm.items()})
    assert cfg == QFormerConfig() and cfg.num_heads == 12


def test_lora_keys_fit_llama_2_7b_linears():
    from transformers import LlamaConfig, LlamaForCausalLM

    expected = {k.split("blip2opt.llm_model.", 1)[1]: v
                for k, v in load("generalist_ckpt_expected_keys.json").items() if "llm_model." in k}
    pairs = lora_pairs({k: torch.empty(v, device="meta") for k, v in expected.items()})
    assert len(pairs) == 32 * len(LORA_TARGETS) == 224
    cfg = LlamaConfig(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32, num_attention_heads=32,
                      vocab_size=32000)
    with torch.device("meta"):
        llm = LlamaForCausalLM(cfg)
    modules = dict(llm.named_modules())
    for name, (a, b) in pairs.items():
        weight = modules[name].weight
        assert a.shape == (8, weight.shape[1]) and b.shape == (weight.shape[0], 8), name


def test_unimol_config_from_official_shapes():
    official = {k: torch.empty(v, device="meta") for k, v in load("unimol_official_keys.json").items()}
    assert UniMolConfig.from_state_dict(official) == UniMolConfig()


def test_gaussian_kernel_formula():
    layer = GaussianLayer(4, 9)
    torch.nn.init.uniform_(layer.means.weight, 0, 3)
    torch.nn.init.uniform_(layer.stds.weight, 0.5, 2)
    torch.nn.init.uniform_(layer.mul.weight, 0.5, 1.5)
    torch.nn.init.uniform_(layer.bias.weight, -0.1, 0.1)
    dist, edge = torch.tensor([[[1.7]]]), torch.tensor([[[5]]])
    x = layer.mul.weight[5, 0] * 1.7 + layer.bias.weight[5, 0]
    mean, std = layer.means.weight[0], layer.stds.weight[0].abs() + 1e-5
    manual = torch.exp(-0.5 * ((x - mean) / std) ** 2) / (math.sqrt(2 * 3.14159) * std)
    assert torch.allclose(layer(dist, edge)[0, 0, 0], manual, atol=1e-6)


@pytest.fixture(scope="module")
def tiny_bridge():
    torch.manual_seed(0)
    model = MolQFormer(TINY_UNIMOL, TINY_QFORMER).eval()
    with torch.no_grad():
        model.graph_encoder.gbf.means.weight.uniform_(0, 3)
        model.graph_encoder.gbf.stds.weight.uniform_(0, 3)
        model.query_tokens.normal_(0, 0.02)
    return model


def test_padding_does_not_change_a_molecule(tiny_bridge):
    small, big = featurize("CCO"), featurize("CC(=O)Oc1ccccc1C(=O)O")
    with torch.no_grad():
        alone = tiny_bridge(**collate([small]))
        reps_alone, _ = tiny_bridge.graph_encoder(**collate([small]))
        batch = collate([small, big])
        together = tiny_bridge(**batch)
        reps_batch, pad = tiny_bridge.graph_encoder(**batch)
    assert pad[0].sum() == len(big.atoms) - len(small.atoms) and not pad[1].any()
    n = len(small.atoms)
    assert torch.allclose(reps_alone[0], reps_batch[0, :n], atol=1e-5)
    assert torch.all(reps_batch[0, n:] == 0)
    assert torch.allclose(alone[0], together[0], atol=1e-5)


def test_pair_representation_is_carried_between_layers(tiny_bridge):
    """Layer 1's attention bias is layer 0's logits: changing layer 0's key weights changes layer 1's input bias."""
    enc = tiny_bridge.graph_encoder
    inputs = collate([featurize("CCO")])
    seen = []
    hook = enc.encoder.layers[1].self_attn.register_forward_pre_hook(lambda m, args: seen.append(args[1].clone()))
    with torch.no_grad():
        enc(**inputs)
        saved = enc.encoder.layers[0].self_attn.in_proj.weight.clone()
        enc.encoder.layers[0].self_attn.in_proj.weight.mul_(1.5)
        enc(**inputs)
        enc.encoder.layers[0].self_attn.in_proj.weight.copy_(saved)
    hook.remove()
    assert not torch.allclose(seen[0], seen[1])


def test_qformer_layer_matches_transformers_bert_blocks():
    """A cross-attention layer of ours equals transformers' BERT attention / FFN blocks composed in LAVIS' query
    order (self-attention, cross-attention, query FFN), with the same weights."""
    from transformers import BertConfig
    from transformers.models.bert import modeling_bert as hf

    torch.manual_seed(0)
    ours = QFormer(QFormerConfig(hidden_size=128, num_layers=1, intermediate_size=256, encoder_width=128))
    layer = ours.bert.encoder.layer[0].eval()
    cfg = BertConfig(hidden_size=128, num_attention_heads=2, intermediate_size=256, layer_norm_eps=1e-12,
                     hidden_act="gelu", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    cfg._attn_implementation = "eager"
    self_attn = hf.BertAttention(cfg, is_causal=False).eval()
    cross = hf.BertAttention(cfg, is_causal=False, is_cross_attention=True).eval()
    intermediate, output = hf.BertIntermediate(cfg).eval(), hf.BertOutput(cfg).eval()
    sd = layer.state_dict()
    for module, prefix in ((self_attn, "attention."), (cross, "crossattention."),
                           (intermediate, "intermediate_query."), (output, "output_query.")):
        module.load_state_dict({k[len(prefix):]: v for k, v in sd.items() if k.startswith(prefix)})
    queries, graph = torch.randn(2, 8, 128), torch.randn(2, 11, 128)
    with torch.no_grad():
        attended = cross(self_attn(queries)[0], encoder_hidden_states=graph)[0]
        expected = output(intermediate(attended), attended)
        assert torch.allclose(layer(queries, graph, None), expected, atol=1e-5)
        assert torch.allclose(ours(queries, graph, None), layer(ours.bert.embeddings.LayerNorm(queries), graph, None))


def test_full_official_model_keys_match_ours_and_llama_after_resize():
    """blip2llama_full_state_dict_keys.json: non-LLM keys are our MolQFormer's; the LLM's base keys are a
    Llama-2-7B resized to 32002 tokens (what ``load_llama`` builds before merging the LoRA)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    full = load("blip2llama_full_state_dict_keys.json")
    assert len(full) == 1192
    with torch.device("meta"):
        bridge = MolQFormer()
        llm = LlamaForCausalLM(LlamaConfig(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                                           num_attention_heads=32, vocab_size=32000))
        llm.resize_token_embeddings(32002, mean_resizing=False)
    assert {k: v for k, v in full.items() if not k.startswith("llm_model.")} == shapes(bridge)
    base = {k[len("llm_model.base_model.model."):]: v for k, v in full.items()
            if k.startswith("llm_model.") and ".lora_" not in k}
    assert base == shapes(llm)


def test_qformer_is_the_official_one_minus_exactly_the_documented_deletions():
    import re

    before = load("qformer_before_deletions_keys.json")
    with torch.device("meta"):
        ours = shapes(QFormer())
    deleted = re.compile(r"^(cls\.|bert\.embeddings\.(word|position)_embeddings\.|"
                         r"bert\.encoder\.layer\.\d+\.(intermediate|output)\.)")
    assert {k: v for k, v in before.items() if not deleted.match(k)} == ours
    assert len(before) - len(ours) == 81
