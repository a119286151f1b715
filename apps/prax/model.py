"""The listener network (HF ``T5ForConditionalGeneration``, ByT5 vocabulary): configs, safe loading, saving.

Official repos (``pragmatic-programs/*``) ship ``config.json``, ``generation_config.json``, ``pytorch_model.bin``
(a pickled state dict), ``special_tokens_map.json`` and ``tokenizer_config.json``. We read the pickle only with
``torch.load(weights_only=True)`` and cache a safetensors conversion once (shared.checkpoints), so later starts
skip the pickle.
Our bundled sets are ``config.json`` + ``model.safetensors``.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import T5Config, T5ForConditionalGeneration

from apps.prax.tokens import EOS_ID, PAD_ID, VOCAB_SIZE
from shared.checkpoints import converted_path, load_safetensors, load_torch_state, save_safetensors
from shared.errors import CheckpointError

SAFETENSORS_NAME = "model.safetensors"
PICKLE_NAME = "pytorch_model.bin"
# Keys that HF ties to ``shared.weight`` and may be absent from a state dict.
TIED_KEYS = ("encoder.embed_tokens.weight", "decoder.embed_tokens.weight")


def byt5_config(d_model: int = 1472, d_ff: int = 3584, num_layers: int = 12, num_decoder_layers: int = 4,
                num_heads: int = 6, d_kv: int = 64, dropout_rate: float = 0.1) -> T5Config:
    """A ByT5-style config (gated-gelu, untied lm_head, vocab 384); the defaults are google/byt5-small."""
    return T5Config(
        vocab_size=VOCAB_SIZE, d_model=d_model, d_ff=d_ff, d_kv=d_kv, num_layers=num_layers,
        num_decoder_layers=num_decoder_layers, num_heads=num_heads, relative_attention_num_buckets=32,
        relative_attention_max_distance=128, dropout_rate=dropout_rate, feed_forward_proj="gated-gelu",
        tie_word_embeddings=False, is_encoder_decoder=True, pad_token_id=PAD_ID, eos_token_id=EOS_ID,
        decoder_start_token_id=PAD_ID, architectures=["T5ForConditionalGeneration"], gradient_checkpointing=False,
    )


def tiny_config(d_model: int = 128, d_ff: int = 256, num_layers: int = 3, num_decoder_layers: int = 2,
                num_heads: int = 4, d_kv: int = 32, dropout_rate: float = 0.0) -> T5Config:
    return byt5_config(d_model=d_model, d_ff=d_ff, num_layers=num_layers, num_decoder_layers=num_decoder_layers,
                       num_heads=num_heads, d_kv=d_kv, dropout_rate=dropout_rate)


def weights_file(folder: Path) -> Path:
    folder = Path(folder)
    for name in (SAFETENSORS_NAME, PICKLE_NAME):
        if (folder / name).is_file():
            return folder / name
    raise CheckpointError(f"The listener's weights folder holds neither {SAFETENSORS_NAME} nor {PICKLE_NAME}; "
                          "re-download the weights.")


def read_state_dict(folder: Path) -> dict[str, torch.Tensor]:
    """The folder's tensors: ``model.safetensors``, else ``pytorch_model.bin`` via its cached safetensors conversion
    (``shared.checkpoints``: the pickle is read once with ``weights_only=True``, the snapshot is left untouched)."""
    path = weights_file(folder)
    if path.name == SAFETENSORS_NAME:
        return load_safetensors(path)
    cached = converted_path(path)
    if cached.is_file():
        return load_safetensors(cached)
    state = load_torch_state(path)
    save_safetensors({k: v.detach().clone() for k, v in state.items() if k not in TIED_KEYS}, cached,
                     metadata={"format": "pt", "converted_from": str(path)})
    return state


def load_listener(folder: Path, device: str | torch.device = "cpu",
                  dtype: torch.dtype = torch.float32) -> T5ForConditionalGeneration:
    """Build the model from ``config.json`` and load its weights safely (no remote code, no full unpickling)."""
    folder = Path(folder)
    config = T5Config.from_pretrained(folder)
    if config.model_type != "t5" or config.vocab_size != VOCAB_SIZE:
        raise CheckpointError(f"The config.json of these weights is not a ByT5 listener (model_type="
                              f"{config.model_type}, vocab_size={config.vocab_size}); expected t5 with vocab 384.")
    model = untied(T5ForConditionalGeneration(config))
    state = read_state_dict(folder)
    if "shared.weight" not in state and "encoder.embed_tokens.weight" in state:
        state["shared.weight"] = state["encoder.embed_tokens.weight"]
    if "lm_head.weight" not in state and "shared.weight" in state:
        state["lm_head.weight"] = state["shared.weight"]
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if k not in TIED_KEYS]
    if missing or unexpected:
        raise CheckpointError(f"The listener's weights do not fit its config.json "
                              f"(missing {missing[:5]}, unexpected {unexpected[:5]}); re-download the weights.")
    model.to(device=device, dtype=dtype)
    model.eval()
    return model


def untied(model: T5ForConditionalGeneration) -> T5ForConditionalGeneration:
    """Give ``lm_head`` its own parameter: ByT5 has an untied output layer, but transformers 5 always ties it."""
    if model.lm_head.weight is model.shared.weight:
        model.lm_head.weight = torch.nn.Parameter(model.shared.weight.detach().clone())
    return model


def config_dict(config: T5Config) -> dict:
    """``config.json`` fields as ByT5 writes them: ``tie_word_embeddings: false`` (transformers 5 reads that flag
    to mean "do not scale decoder outputs", and would flip the scaling on reload if we saved its forced ``true``)."""
    fields = config.to_dict()
    fields["tie_word_embeddings"] = bool(getattr(config, "scale_decoder_outputs", False))
    fields.pop("scale_decoder_outputs", None)
    return fields


# Our trainer's programs are at most this many characters; ``config.json`` records it for our listeners, and the
# pipeline samples at most that many tokens plus ten (upstream's 128 are for its programs of up to 124 characters).
PROGRAM_CHARS_FIELD = "prax_max_program_chars"


def save_bundled(model: T5ForConditionalGeneration, folder: Path, max_program_chars: int | None = None) -> None:
    """Our layout: ``config.json`` + ``model.safetensors`` (no tokenizer files: ByT5Tokenizer() needs none);
    ``max_program_chars``: the longest program it was trained on (``PROGRAM_CHARS_FIELD``)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    fields = config_dict(model.config)
    if max_program_chars is not None:
        fields[PROGRAM_CHARS_FIELD] = max_program_chars
    (folder / "config.json").write_text(json.dumps(fields, indent=2))
    state = {k: v.detach().cpu().contiguous().clone() for k, v in model.state_dict().items() if k not in TIED_KEYS}
    save_file(state, str(folder / SAFETENSORS_NAME), metadata={"format": "pt"})
