"""Reuse instead of recomputing or reallocating: tensors derived from weights once instead of on every call (Swin's
attention bias, the label queries' projection), and GELU written over its input.

A derived tensor is a non-persistent buffer of the module that uses it, so the hub's memory estimate (``.buffers()``)
counts it (about 108 MB for the full-size Tag2Text, 7% of its weights) and no state_dict ever holds it. It is
recomputed as soon as one of its sources is replaced (``.to()``, ``load_state_dict(assign=True)``) or written in place
(``load_state_dict``, ``copy_``): the module keeps the source tensors themselves (so a replaced one is never mistaken
for its successor at the same address) and their version counters. With autograd on nothing is kept: a kept tensor
would cut the gradient to its sources.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn


def _version(t: torch.Tensor) -> int:
    return -1 if t.is_inference() else t._version  # inference tensors keep no version counter


def derived(module: nn.Module, name: str, compute: Callable[[], torch.Tensor], *sources: torch.Tensor) -> torch.Tensor:
    """``compute()``, kept as ``module``'s buffer ``name`` and reused while every tensor of ``sources`` (what it reads)
    is the same tensor, unchanged."""
    if torch.is_grad_enabled():
        return compute()
    kept = module.__dict__.setdefault("_derived_from", {})  # name -> (sources, versions)
    versions = tuple(_version(t) for t in sources)
    previous = kept.get(name)
    if (previous is None or len(previous[0]) != len(sources) or previous[1] != versions
            or any(a is not b for a, b in zip(previous[0], sources, strict=True))):
        with torch.inference_mode(False), torch.no_grad():  # a normal tensor, usable outside inference mode
            module.register_buffer(name, compute(), persistent=False)
        kept[name] = (sources, versions)
    return module.get_buffer(name)


def gelu_(x: torch.Tensor) -> torch.Tensor:
    """GELU (exact, erf) computed in place over ``x``, a fresh activation nobody else reads: the same numbers as
    ``F.gelu`` without allocating and faulting in a second tensor as large (42 MB per tagging-head layer). With
    autograd on it is ``F.gelu``: backward needs the input."""
    return F.gelu(x) if torch.is_grad_enabled() else torch.ops.aten.gelu_(x)
