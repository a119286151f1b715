"""Front ends and demos (``apps/<id>/``). The registry of demos is ``apps.registry``; ``apps.DEMOS``,
``apps.get_demo`` and ``apps.discover`` are its, imported when first asked for, so importing one demo's modules
(``apps.prax.actions``) loads no other demo."""

_REGISTRY = ("DEMOS", "get_demo", "discover")


def __getattr__(name: str):
    if name in _REGISTRY:
        from apps import registry

        return getattr(registry, name)
    raise AttributeError(f"module 'apps' has no attribute {name!r}")
