"""Shared fixtures: a tiny checkpoint in the official layout, and the bundled tiny listeners."""

from __future__ import annotations

import pytest

from tests.fixtures.tiny_prax import write_official_layout


@pytest.fixture(scope="session")
def official_checkpoint(tmp_path_factory):
    """A random tiny T5 written exactly in the official pragmatic-programs/* file layout."""
    return write_official_layout(tmp_path_factory.mktemp("official") / "listener")


@pytest.fixture(scope="session")
def bundled_literal():
    from apps.prax import DEMO
    from apps.prax.pipeline import PraxPipeline
    from shared import weights

    return PraxPipeline.from_pretrained(weights.resolve("prax", DEMO.weight_set("tiny-literal"), allow_download=False),
                                        device="cpu")


@pytest.fixture(scope="session", autouse=True)
def converted_cache(tmp_path_factory):
    """Safetensors conversions of test pickles go to a temp folder, never into the user's cache."""
    with pytest.MonkeyPatch.context() as mp:
        folder = tmp_path_factory.mktemp("converted")
        mp.setenv("DEMOHUB_CONVERTED_CACHE", str(folder))
        yield folder
