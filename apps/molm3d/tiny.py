"""Tiny 3D-MoLM snapshot in the official layout, for tests: same file names, keys and formats, tiny sizes.

Sizes are read back by the loader from the files alone: Uni-Mol and Q-Former sizes from tensor shapes (no extra
config file; the Q-Former head count follows BERT's 64-wide heads, so hidden 128 gives 2 heads), Llama from its
``config.json``. The tokenizer is a small sentencepiece model trained here with Llama-2's settings (BPE, byte
fallback, dummy prefix, digits split, ids 0/1/2 = <unk>/<s>/</s>).
"""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

import torch

from apps.molm3d.llm import LORA_TARGETS
from apps.molm3d.qformer import MolQFormer, QFormerConfig
from apps.molm3d.tasks import PROMPT_TEMPLATE, PROPERTY_SUFFIX, TASKS
from apps.molm3d.unimol import UNUSED_PREFIXES, UniMolConfig

TINY_UNIMOL = UniMolConfig(num_layers=2, embed_dim=32, ffn_dim=64, num_heads=4, num_kernels=16)
TINY_QFORMER = QFormerConfig(hidden_size=128, num_layers=2, intermediate_size=256, encoder_width=32,
                             llm_hidden_size=64)
TINY_LLAMA = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
              "rms_norm_eps": 1e-06, "hidden_act": "silu", "initializer_range": 0.02,
              "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0, "tie_word_embeddings": False,
              "architectures": ["LlamaForCausalLM"], "model_type": "llama", "torch_dtype": "float32"}
LORA_R = 8

CORPUS = [
    "The molecule is an aromatic ester and a member of benzoic acids. It has a role as an anti-inflammatory agent.",
    "The Molecular Weight for the input molecule is 180.16 g/mol. The LogP for the input molecule is 1.31.",
    "The Topological Polar Surface Area for the input molecule is 63.60 Å². HOMO-LUMO Gap 5.762 eV.",
    "CC(=O)Oc1ccccc1C(=O)O CN1C=NC2=C1C(=O)N(C(=O)N2C)C CC(=O)OC(CC(=O)[O-])C[N+](C)(C)C",
    "Describe the input molecule. What is the solubility of this molecule in water at room temperature?",
    *(f"What is the {t.property_name} of this molecule? {PROPERTY_SUFFIX}" for t in TASKS.values() if t.numeric),
    PROMPT_TEMPLATE.replace("<mol>", ""),
]


def train_tokenizer(model_file: Path, vocab_size: int = 400) -> None:
    import sentencepiece as spm

    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(CORPUS * 20), model_writer=buffer, vocab_size=vocab_size, model_type="bpe",
        byte_fallback=True, split_digits=True, add_dummy_prefix=True, remove_extra_whitespaces=False,
        normalization_rule_name="identity", unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
        allow_whitespace_only_pieces=True, character_coverage=1.0, num_threads=1, minloglevel=2,
    )
    model_file.write_bytes(buffer.getvalue())


def write_unimol(path: Path, seed: int = 0) -> None:
    from apps.molm3d.unimol import UniMolEncoder

    torch.manual_seed(seed)
    model = UniMolEncoder(TINY_UNIMOL)
    with torch.no_grad():  # Uni-Mol's own init: kernel means/stds uniform on [0, 3]
        model.gbf.means.weight.uniform_(0, 3)
        model.gbf.stds.weight.uniform_(0, 3)
    sd = dict(model.state_dict())
    d = TINY_UNIMOL.embed_dim
    for prefix in UNUSED_PREFIXES:  # the pre-training heads the real file carries and the loader must drop
        sd[prefix + "dense.weight"] = torch.randn(d, d)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"args": argparse.Namespace(arch="unimol_base", seed=1), "model": sd}, path)


def write_generalist(path: Path, llama_layers: int, seed: int = 0) -> None:
    torch.manual_seed(seed)
    model = MolQFormer(TINY_UNIMOL, TINY_QFORMER)
    with torch.no_grad():
        model.query_tokens.normal_(0, 0.02)
    sd = {}
    for key, tensor in model.state_dict().items():
        if key.startswith("graph_encoder.") or key.endswith("position_ids"):
            continue  # frozen or buffers: the released checkpoint does not carry them
        sd[f"blip2opt.{key}"] = tensor if key.startswith("ln_graph.") else tensor.to(torch.bfloat16)
    h, ffn = TINY_LLAMA["hidden_size"], TINY_LLAMA["intermediate_size"]
    shapes = {"q_proj": (h, h), "k_proj": (h, h), "v_proj": (h, h), "o_proj": (h, h),
              "gate_proj": (ffn, h), "up_proj": (ffn, h), "down_proj": (h, ffn)}
    for i in range(llama_layers):
        for name in LORA_TARGETS:
            out_f, in_f = shapes[name]
            group = "self_attn" if name.endswith(("q_proj", "k_proj", "v_proj", "o_proj")) else "mlp"
            base = f"blip2opt.llm_model.base_model.model.model.layers.{i}.{group}.{name}"
            sd[f"{base}.lora_A.default.weight"] = (torch.randn(LORA_R, in_f) * 0.05).to(torch.bfloat16)
            sd[f"{base}.lora_B.default.weight"] = (torch.randn(out_f, LORA_R) * 0.05).to(torch.bfloat16)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"epoch": 9, "global_step": 1000, "pytorch-lightning_version": "2.0.7", "state_dict": sd}, path)


def write_llama(folder: Path, seed: int = 0) -> None:
    from transformers import LlamaConfig, LlamaForCausalLM

    folder.mkdir(parents=True, exist_ok=True)
    train_tokenizer(folder / "tokenizer.model")
    import sentencepiece as spm

    vocab = spm.SentencePieceProcessor(model_file=str(folder / "tokenizer.model")).get_piece_size()
    config = {**TINY_LLAMA, "vocab_size": vocab, "transformers_version": "4.28.0.dev0"}
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    (folder / "generation_config.json").write_text(json.dumps(
        {"bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0, "transformers_version": "4.28.0.dev0"}))
    (folder / "special_tokens_map.json").write_text("{}")
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "LlamaTokenizer"}))
    torch.manual_seed(seed)
    cfg = {k: v for k, v in config.items() if k not in ("architectures", "transformers_version", "torch_dtype")}
    sd = LlamaForCausalLM(LlamaConfig(**cfg)).state_dict()
    keys = list(sd)
    shards = {"pytorch_model-00001-of-00002.bin": keys[: len(keys) // 2],
              "pytorch_model-00002-of-00002.bin": keys[len(keys) // 2:]}
    weight_map = {}
    for name, shard_keys in shards.items():
        torch.save({k: sd[k].clone() for k in shard_keys}, folder / name)
        weight_map.update(dict.fromkeys(shard_keys, name))
    total = sum(t.numel() * t.element_size() for t in sd.values())
    (folder / "pytorch_model.bin.index.json").write_text(json.dumps(
        {"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2))


def build_tiny_snapshot(root: str | Path, seed: int = 0) -> Path:
    """Write ``uni-mol/``, ``generalist/`` and ``llama-2-7b-hf/`` under ``root``; returns ``root``."""
    root = Path(root)
    write_unimol(root / "uni-mol" / "mol_pre_no_h_220816.pt", seed)
    write_generalist(root / "generalist" / "generalist.ckpt", TINY_LLAMA["num_hidden_layers"], seed)
    write_llama(root / "llama-2-7b-hf", seed)
    return root
