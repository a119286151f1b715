"""The registry of demos. Demos are found, not listed: every package ``apps/<id>/`` whose ``__init__`` declares
``DEMO = Demo(id="<id>", ...)`` is one (``DEMOS``, sorted by id). Importing this pulls in no heavy library: a demo's
``__init__`` only registers it. Only the front ends and tools that list demos import it (``apps.DEMOS`` does, when
first asked for): a demo's own modules never reach the other demos."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from shared.registry import Demo


def discover(folder: Path = Path(__file__).parent, package: str = "apps") -> tuple[Demo, ...]:
    """The demos declared by the subpackages of ``folder`` (``package``), sorted by id. A package whose ``DEMO``
    names another id than its folder is a mistake, said at once rather than routed wrongly."""
    demos = []
    for info in pkgutil.iter_modules([str(folder)]):
        if not info.ispkg:
            continue
        demo = getattr(importlib.import_module(f"{package}.{info.name}"), "DEMO", None)
        if isinstance(demo, Demo):
            if demo.id != info.name:
                raise ValueError(f"{package}.{info.name} declares DEMO with id {demo.id!r}: a demo's id is its "
                                 f"folder's name ({info.name!r})")
            demos.append(demo)
    return tuple(sorted(demos, key=lambda d: d.id))


DEMOS: tuple[Demo, ...] = discover()


def get_demo(demo_id: str) -> Demo:
    for demo in DEMOS:
        if demo.id == demo_id:
            return demo
    from shared.errors import UserInputError

    raise UserInputError(f"No demo called {demo_id!r}; choose one of: {', '.join(d.id for d in DEMOS)}.")
