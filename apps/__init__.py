"""Front ends and demos. ``DEMOS`` is the explicit list; importing it pulls in no heavy library."""

from apps import geodiffusion, molm3d, prax, tag2text
from shared.registry import Demo

DEMOS: tuple[Demo, ...] = (geodiffusion.DEMO, molm3d.DEMO, prax.DEMO, tag2text.DEMO)


def get_demo(demo_id: str) -> Demo:
    for demo in DEMOS:
        if demo.id == demo_id:
            return demo
    from shared.errors import UserInputError

    raise UserInputError(f"No demo called {demo_id!r}; choose one of: {', '.join(d.id for d in DEMOS)}.")
