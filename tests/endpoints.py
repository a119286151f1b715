"""The API functions the demos declare (``shared.api``; each demo's ``api.py``), as the tests list them: no test
names a demo's endpoints by hand, so a new demo's endpoints are tested the day they are declared."""

from __future__ import annotations

from typing import Any

import apps
from apps.hub import ENDPOINTS
from shared.api import Endpoint
from shared.registry import Demo

DECLARED: dict[str, tuple[Demo, Endpoint]] = {e.name: (d, e) for d in apps.DEMOS for e in d.endpoints()}
HUB_ENDPOINTS = tuple(e.name for e in ENDPOINTS)  # the hub's own (apps/hub.py), beside the demos'


def honest_call(endpoint: Endpoint) -> dict[str, Any]:
    """Every input at its declared example: a call the endpoint's checks accept."""
    return {i.name: i.example for i in endpoint.inputs}


def demo_of(name: str) -> str:
    """The demo that declares the endpoint ``name`` ("hub" for the hub's own)."""
    return "hub" if name in HUB_ENDPOINTS else DECLARED[name][0].id
