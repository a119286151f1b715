"""The official MERT-v1-95M encoder and the Music-Descriptor probing heads, loaded from their released files unchanged.

The encoder. ``m-a-p/MERT-v1-95M``'s remote code (modeling_MERT.py, which needs ``trust_remote_code`` and no longer
loads on today's transformers) subclasses transformers' ``HubertModel``; with the released config (no CQT features,
``deepnorm`` and ``do_stable_layer_norm`` off) its forward pass is HubertModel's: a group-norm convolutional feature
encoder, LayerNorm + Linear projection, a weight-normed convolutional position embedding, 12 post-LayerNorm layers.
So the encoder here is transformers' ``HubertModel`` built from the released config.json, and pytorch_model.bin's
keys load into it one for one; only the position embedding's weight norm is stored in the old form (``weight_g``,
``weight_v``), which PyTorch's parametrization holds as ``parametrizations.weight.original0/1``.

The heads (the Space ``m-a-p/Music-Descriptor``, ``Prediction_Head/best-layer-MERT-v1-95M/``): per task a
``{TASK}.ckpt`` whose ``state_dict`` holds ``hidden_0`` (Linear 768 -> 512) and ``output`` (Linear 512 -> classes),
read through a ReLU, and ``{TASK}.id2class.json``. Each reads the time average of one transformer layer's output
(``BEST_LAYER``: index L of the 12 layers, ``hidden_states[L + 1]``, as the Space slices off the embedding output);
MTGInstrument reads all 12 through a learned softmax weighting (``aggregator``, shape [1, 12, 1]).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from apps.mert.tasks import BEST_LAYER
from shared.checkpoints import load_torch_checkpoint, load_torch_state

CONFIG_NAME, WEIGHTS_NAME = "config.json", "pytorch_model.bin"
# config.json keys transformers' HubertConfig reads under the same names (the rest are MERT's training settings,
# which change nothing at inference with this config, checked by ``encoder_config``).
HUBERT_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "hidden_act",
               "layer_norm_eps", "conv_dim", "conv_kernel", "conv_stride", "conv_bias", "feat_extract_norm",
               "feat_extract_activation", "feat_proj_layer_norm", "num_conv_pos_embeddings",
               "num_conv_pos_embedding_groups", "do_stable_layer_norm", "mask_time_prob", "mask_feature_prob")
WEIGHT_NORM_KEYS = {"weight_g": "parametrizations.weight.original0", "weight_v": "parametrizations.weight.original1"}


def encoder_config(config: dict):
    """transformers' ``HubertConfig`` for a released MERT config.json; a config whose forward pass is not
    HubertModel's (CQT features, deepnorm) is refused, naming the key."""
    from transformers import HubertConfig

    for key, plain in (("feature_extractor_cqt", False), ("deepnorm", False)):
        if config.get(key, plain) != plain:
            raise ValueError(f"config.json sets {key}={config[key]!r}: that MERT variant is not HubertModel's "
                             "forward pass and is not supported")
    return HubertConfig(**{key: config[key] for key in HUBERT_KEYS if key in config})


def official_keys(state_dict: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """pytorch_model.bin's keys as HubertModel names them today (``weight_g`` -> ``parametrizations...original0``)."""
    renamed = {}
    for key, value in state_dict.items():
        prefix, _, last = key.rpartition(".")
        renamed[f"{prefix}.{WEIGHT_NORM_KEYS[last]}" if last in WEIGHT_NORM_KEYS else key] = value
    return renamed


def load_encoder(folder: Path, dtype: torch.dtype = torch.float32):
    """The encoder from a MERT-v1 repo folder (config.json, pytorch_model.bin read with ``weights_only=True``);
    every key must match (strict)."""
    from transformers import HubertModel

    config = encoder_config(json.loads((folder / CONFIG_NAME).read_text(encoding="utf-8")))
    with torch.device("meta"):
        encoder = HubertModel(config)
    state = official_keys(load_torch_checkpoint(folder / WEIGHTS_NAME))
    encoder.load_state_dict(state, strict=True, assign=True)
    return encoder.to(dtype).eval()


class ProbingHead(nn.Module):
    """One Music-Descriptor head: Linear(768 -> 512), ReLU, Linear(512 -> classes), on one layer's time average
    (``layer``) or on all of them through a learned softmax weighting (``layer="all"``)."""

    def __init__(self, layer: int | str, num_classes: int, width: int = 768, hidden: int = 512, layers: int = 12):
        super().__init__()
        self.layer = layer
        self.hidden_0 = nn.Linear(width, hidden)
        self.output = nn.Linear(hidden, num_classes)
        if layer == "all":
            self.aggregator = nn.Parameter(torch.zeros(1, layers, 1))

    def forward(self, layer_means: torch.Tensor) -> torch.Tensor:
        """``layer_means``: [batch, 12, width], each transformer layer's output averaged over time."""
        if self.layer == "all":
            x = (layer_means * torch.softmax(self.aggregator, dim=1)).sum(dim=1)
        else:
            x = layer_means[:, int(self.layer)]
        return self.output(torch.relu(self.hidden_0(x)))


@dataclass(frozen=True)
class Task:
    name: str
    head: ProbingHead
    labels: tuple[str, ...]


def load_heads(folder: Path, width: int, layers: int) -> dict[str, Task]:
    """Every head of ``BEST_LAYER`` found in ``folder`` (``{TASK}.ckpt``'s ``state_dict`` with
    ``weights_only=True``, strict; ``{TASK}.id2class.json``), in the Space's order."""
    tasks = {}
    for name, layer in BEST_LAYER.items():
        checkpoint = folder / f"{name}.ckpt"
        if not checkpoint.is_file():
            continue
        id2class = json.loads((folder / f"{name}.id2class.json").read_text(encoding="utf-8"))
        labels = tuple(str(id2class[str(i)]) for i in range(len(id2class)))
        head = ProbingHead(layer, len(labels), width, layers=layers)
        head.load_state_dict(load_torch_state(checkpoint, "state_dict"), strict=True)
        tasks[name] = Task(name, head.eval(), labels)
    return tasks


def layer_means(encoder, samples: torch.Tensor) -> torch.Tensor:
    """[batch, layers, width]: each transformer layer's output averaged over time, for a batch of equally long
    mono 24 kHz clips ([batch, samples]); the embedding output (``hidden_states[0]``) is left out, as the Space does."""
    with torch.inference_mode():
        out = encoder(samples, output_hidden_states=True)
    return torch.stack(out.hidden_states[1:], dim=1).mean(dim=2)
