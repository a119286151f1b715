"""The one shape every demo's pipeline has, after diffusers' pipelines.

A demo's ``apps/<demo>/pipeline.py`` holds one ``<Name>Pipeline(Pipeline)``:

- ``from_pretrained(path, *, device="cpu", dtype=torch.float32)`` reads an official checkpoint folder; it has no
  device policy of its own (``shared.context.load_pipeline`` picks device and dtype once, through shared/device.py);
- ``check_inputs(...)``, a static method holding all of the demo's input validation, callable before any weights are
  loaded (pages run it as Gradio's ``validator=`` so a bad input never takes a model slot); it raises
  ``UserInputError(message, argument=...)`` naming the argument and returns the inputs in normalised form. It is the
  ``check_inputs`` of the demo's torch-free ``apps/<demo>/checks.py`` (``check_inputs =
  staticmethod(checks.check_inputs)``), so checking a request never imports torch;
- ``__call__(..., *, callback=None)`` runs the model, calling ``callback(step, total)`` as it goes (keyword-only in
  every pipeline), and returns a frozen ``<Name>Output`` dataclass whose ``to_dict()`` is JSON-ready (what the demo's
  named API endpoints return);
- ``components``: the names of the attributes that hold its torch modules (an ``nn.Module``, or a diffusers pipeline
  whose ``components`` hold them); ``modules()`` yields them, and the model pool measures the pipeline's memory from
  them, in one place (``shared.pool.estimate_bytes``).

A pipeline in a Ray Serve replica is used through ``shared.ray_pool.RemotePipeline``, a ``Pipeline`` too (its
modules live in the replica).
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import io
import math
from collections.abc import Callable, Iterator, Mapping
from pathlib import PurePath
from typing import Any, ClassVar

Callback = Callable[[int, int], None]  # callback(step, total): the one progress signature of every pipeline


class PipelineOutput:
    """Base of every ``<Name>Output`` (frozen dataclasses): ``to_dict()`` gives the JSON-ready form.

    Fields declared with ``dataclasses.field(metadata={"json": False})`` stay out of it (e.g. big arrays a page
    draws but an API client does not need).
    """

    def to_dict(self) -> dict[str, Any]:
        return {f.name: to_json(getattr(self, f.name)) for f in dataclasses.fields(self)  # type: ignore[arg-type]
                if f.metadata.get("json", True)}


def to_json(value: Any) -> Any:
    """``value`` as plain JSON types: dataclasses as dicts, tuples as lists, NaN/inf as None, images as PNG data URLs.

    Paths become their file name only: an API answer never shows a server path.
    """
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, enum.Enum):
        return to_json(value.value)
    if isinstance(value, PurePath):
        return value.name
    if hasattr(value, "to_dict") and callable(value.to_dict):
        return value.to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_json(v) for v in value]
    if hasattr(value, "tolist"):  # numpy arrays and scalars, torch tensors
        return to_json(value.tolist())
    if hasattr(value, "save") and hasattr(value, "mode") and hasattr(value, "size"):  # a PIL image
        buffer = io.BytesIO()
        value.save(buffer, format="PNG")
        return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
    raise TypeError(f"{type(value).__name__} has no JSON form; give it a to_dict() or leave it out of to_dict()")


class Pipeline:
    """Base class of the demo pipelines: the contract above, and the attributes every page may read."""

    output_class: ClassVar[type[PipelineOutput]]
    components: ClassVar[tuple[str, ...]] = ()  # attributes holding its torch modules (see modules())
    device: Any  # torch.device or its name
    dtype: Any  # torch.dtype

    def modules(self) -> Iterator[Any]:
        """The torch modules of ``components``: each attribute's ``nn.Module``, or the modules among a diffusers
        pipeline's ``components``."""
        for name in self.components:
            value = getattr(self, name)
            parts = value.components.values() if isinstance(getattr(value, "components", None), dict) else [value]
            yield from (part for part in parts if hasattr(part, "parameters") and hasattr(part, "buffers"))

    @classmethod
    def from_pretrained(cls, path, *, device="cpu", dtype=None):
        raise NotImplementedError

    @staticmethod
    def check_inputs(*args, **kwargs):
        raise NotImplementedError

    def __call__(self, *args, callback: Callback | None = None, **kwargs) -> PipelineOutput:
        raise NotImplementedError
