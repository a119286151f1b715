"""Reuse instead of recomputing or reallocating: tensors derived from weights once instead of on every call (Swin's
attention bias, the label queries' projection), and GELU written over its input.

A ``Derived`` value is recomputed as soon as one of its sources is replaced (``.to()``,
``load_state_dict(assign=True)``) or written in place (``load_state_dict``, ``copy_``): it keeps the source tensors
themselves (so a replaced one is never mistaken for its successor at the same address) and their version counters.
With autograd on it is not kept: a cached tensor would cut the gradient to its sources.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F


def _version(t: torch.Tensor) -> int:
    return -1 if t.is_inference() else t._version  # inference tensors keep no version counter


class Derived:
    def __init__(self) -> None:
        self._sources: tuple[torch.Tensor, ...] = ()
        self._versions: tuple[int, ...] = ()
        self._value: torch.Tensor | None = None

    def get(self, compute: Callable[[], torch.Tensor], *sources: torch.Tensor) -> torch.Tensor:
        """``compute()``, reused while every tensor of ``sources`` (what it reads) is the same and unchanged."""
        if torch.is_grad_enabled():
            return compute()
        fresh = (self._value is not None and len(sources) == len(self._sources)
                 and all(a is b for a, b in zip(sources, self._sources, strict=True))
                 and tuple(_version(t) for t in sources) == self._versions)
        if not fresh:
            with torch.inference_mode(False), torch.no_grad():  # a normal tensor, usable outside inference mode
                self._value = compute()
            self._sources, self._versions = sources, tuple(_version(t) for t in sources)
        return self._value


def gelu_(x: torch.Tensor) -> torch.Tensor:
    """GELU (exact, erf) computed in place over ``x``, a fresh activation nobody else reads: the same numbers as
    ``F.gelu`` without allocating and faulting in a second tensor as large (42 MB per tagging-head layer). With
    autograd on it is ``F.gelu``: backward needs the input."""
    return F.gelu(x) if torch.is_grad_enabled() else torch.ops.aten.gelu_(x)
