"""Reading the official checkpoint and converting it once to fp16 safetensors.

The official ``tag2text_swin_14m.pth`` (4.48 GB) is a training pickle: the weights under ``model`` plus, very
likely, optimizer state. It is read with ``torch.load(weights_only=True, mmap=True)``; only tensors under ``model``
are kept, ``vision_multi.*`` is renamed ``tagging_head.*`` (as the official loader does), buffers are dropped
(recomputed from the config), relative-position tables are resized to the window if needed, and each tied
tensor is stored once. The result (~0.75 GB fp16) is written next to the HF cache entry, so later starts read
no pickle. A read-only cache falls back to ``$DEMOHUB_CACHE`` / ``~/.cache/demohub``, and failing that the
pickle is simply read every time.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file

from apps.tag2text.config import CONFIG_NAME, Tag2TextConfig
from apps.tag2text.model import Tag2Text, build_model
from apps.tag2text.swin import interpolate_bias_table
from shared.checkpoints import load_torch_state, save_safetensors
from shared.errors import WeightsUnavailable

log = logging.getLogger(__name__)

CHECKPOINT_NAME = "tag2text_swin_14m.pth"
CONVERTED_NAME = "tag2text.fp16.safetensors"
CONVERTED_FORMAT = "2"  # 2: the model's config is in the metadata
RECOMPUTED_BUFFERS = ("relative_position_index", "attn_mask", "position_ids")
RENAMES = (("vision_multi.", "tagging_head."),)


def find_checkpoint(path: str | os.PathLike) -> Path:
    """``path`` itself if it is a file, else the official file name (or the only .pth / .safetensors) inside it."""
    path = Path(path)
    if path.is_file():
        return path
    if (path / CHECKPOINT_NAME).is_file():
        return path / CHECKPOINT_NAME
    candidates = sorted(path.glob("*.pth")) or sorted(path.glob("*.safetensors"))
    if len(candidates) == 1:
        return candidates[0]
    raise WeightsUnavailable(f"No Tag2Text checkpoint in {path}: expected {CHECKPOINT_NAME} there. "
                             "Run `demohub download tag2text` or point the demo at the folder holding it.")


def read_official(path: Path) -> dict[str, torch.Tensor]:
    """Tensors under ``model`` with official renames applied and recomputed buffers dropped."""
    out = {}
    for key, value in load_torch_state(path, key="model").items():
        if key.rsplit(".", 1)[-1] in RECOMPUTED_BUFFERS:
            continue
        for old, new in RENAMES:
            if key.startswith(old):
                key = new + key[len(old):]
        out[key] = value
    return out


def fit_to_model(state: dict[str, torch.Tensor], model: Tag2Text) -> dict[str, torch.Tensor]:
    """One tensor per unique parameter of ``model`` (canonical names), shapes checked, bias tables resized."""
    aliases = model.tied_aliases()
    for alias, canonical in aliases.items():
        if canonical not in state and alias in state:
            state[canonical] = state[alias]
    expected = {name: p.shape for name, p in model.named_parameters()}
    missing = [name for name in expected if name not in state]
    if missing:
        raise WeightsUnavailable(f"The checkpoint lacks {len(missing)} Tag2Text tensors (e.g. {missing[0]}); "
                                 "it is not the Tag2Text checkpoint this demo expects.")
    out = {}
    for name, shape in expected.items():
        tensor = state[name]
        if name.endswith("relative_position_bias_table"):
            tensor = interpolate_bias_table(tensor, shape[0])
        if tensor.shape != shape:
            raise WeightsUnavailable(f"Checkpoint tensor {name} has shape {tuple(tensor.shape)}, the model expects "
                                     f"{tuple(shape)}; the config does not match these weights.")
        out[name] = tensor
    ignored = sorted(set(state) - set(out) - set(aliases))
    if ignored:
        log.info("Ignored %d checkpoint tensors not used for inference, e.g. %s", len(ignored), ignored[0])
    return out


def converted_candidates(source: Path) -> list[Path]:
    """Where the fp16 copy of ``source`` may live, most preferred first."""
    source = Path(os.path.abspath(source))
    candidates = []
    snapshot = source.parent
    if snapshot.parent.name == "snapshots":  # <cache>/models--org--name/snapshots/<sha>/file
        candidates.append(snapshot.parent.parent / "demohub-converted" / snapshot.name / CONVERTED_NAME)
    else:
        candidates.append(source.parent / ".demohub-converted" / CONVERTED_NAME)
    root = Path(os.environ.get("DEMOHUB_CACHE") or Path.home() / ".cache" / "demohub")
    key = f"{snapshot.name}-{source.stat().st_size}"
    candidates.append(root / "tag2text" / key / CONVERTED_NAME)
    return candidates


def _source_stamp(source: Path) -> dict[str, str]:
    stat = Path(source).stat()  # follows the HF symlink to the blob
    return {"format": CONVERTED_FORMAT, "source_size": str(stat.st_size), "source_mtime": str(int(stat.st_mtime))}


def _converted_metadata(path: Path, stamp: dict[str, str]) -> dict[str, str] | None:
    """The metadata of a converted copy made from the file ``stamp`` describes, else None."""
    try:
        with safe_open(str(path), framework="pt") as handle:
            metadata = handle.metadata() or {}
    except (OSError, SafetensorError):
        return None
    return metadata if all(metadata.get(key) == value for key, value in stamp.items()) else None


def _read_converted(path: Path, stamp: dict[str, str]) -> dict[str, torch.Tensor] | None:
    if _converted_metadata(path, stamp) is None:
        return None
    try:
        return load_file(str(path))
    except (OSError, SafetensorError):
        return None


def _write_converted(state: dict[str, torch.Tensor], stamp: dict[str, str], candidates: list[Path]) -> Path | None:
    for target in candidates:
        if save_safetensors(state, target, metadata=stamp):
            return target
    log.warning("No writable place for converted Tag2Text weights; the .pth will be read on every start.")
    return None


def load_state(path: Path, model: Tag2Text, convert: bool = True) -> tuple[dict[str, torch.Tensor], Path]:
    """Weights for ``model`` from ``path`` (.pth or .safetensors): the converted copy when valid, else the pickle.

    Returns the state and the file actually read.
    """
    if path.suffix == ".safetensors":
        return fit_to_model(load_file(str(path)), model), path
    stamp = _source_stamp(path)
    candidates = converted_candidates(path)
    for candidate in candidates:
        if candidate.is_file():
            state = _read_converted(candidate, stamp)
            if state is not None:
                return fit_to_model(state, model), candidate
    state = fit_to_model(read_official(path), model)
    if not convert:
        return state, path
    # Use the fp16 values from the first start on, so a result never depends on whether it was the first.
    state = {k: v.to(torch.float16).contiguous() for k, v in state.items()}
    return state, _write_converted(state, {**stamp, "config": model.config.to_json()}, candidates) or path


def tensor_shapes(path: Path) -> dict[str, tuple[int, ...]]:
    """Every tensor's shape in a .pth (under ``model``, renamed as on load, buffers kept) or .safetensors file,
    read without loading the numbers (memory-mapped pickle / safetensors header)."""
    if path.suffix == ".safetensors":
        with safe_open(str(path), framework="pt") as handle:
            return {key: tuple(handle.get_slice(key).get_shape()) for key in handle.keys()}  # noqa: SIM118
    shapes = {}
    for key, value in load_torch_state(path, key="model").items():
        for old, new in RENAMES:
            if key.startswith(old):
                key = new + key[len(old):]
        shapes[key] = tuple(value.shape)
    return shapes


def read_config(checkpoint: Path) -> Tag2TextConfig:
    """``config.json`` beside the checkpoint if there is one (our tiny test models), else the sizes read from the
    checkpoint's tensor shapes: the official file, downloaded alone, gives the official config."""
    if (checkpoint.parent / CONFIG_NAME).is_file():
        return Tag2TextConfig.load(checkpoint.parent)
    if checkpoint.suffix != ".safetensors":  # a converted copy carries the config: no pickle read on later starts
        stamp = _source_stamp(checkpoint)
        for candidate in converted_candidates(checkpoint):
            metadata = _converted_metadata(candidate, stamp) if candidate.is_file() else None
            if metadata and "config" in metadata:
                return Tag2TextConfig.from_json(metadata["config"])
    try:
        return Tag2TextConfig.from_shapes(tensor_shapes(checkpoint))
    except ValueError as error:
        raise WeightsUnavailable(f"{checkpoint.name}: {error}.") from error


def load_model(path: str | os.PathLike, device="cpu", dtype=torch.float32) -> tuple[Tag2Text, Path]:
    """The Tag2Text model for a weights folder or file; the config comes from ``config.json`` beside it, if any,
    else from the checkpoint's shapes."""
    checkpoint = find_checkpoint(path)
    config = read_config(checkpoint)
    model = build_model(config, device="cpu", dtype=torch.float32)
    state, read_from = load_state(checkpoint, model)
    model.load_state_dict(state, strict=False)  # buffers are recomputed, aliases share storage with canonicals
    return model.to(device=device, dtype=dtype).eval(), read_from

