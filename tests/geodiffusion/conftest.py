"""Tiny official-layout checkpoints built once per session, and pipelines loaded from them."""

from __future__ import annotations

import pytest

from tests.fixtures.tiny_geodiffusion import build_tiny_checkpoint


@pytest.fixture(scope="session")
def coco_checkpoint(tmp_path_factory):
    return build_tiny_checkpoint(tmp_path_factory.mktemp("geo") / "coco", dataset="coco_stuff")


@pytest.fixture(scope="session")
def nuimages_checkpoint(tmp_path_factory):
    return build_tiny_checkpoint(tmp_path_factory.mktemp("geo") / "nuimages", dataset="nuimages-time-weather")


@pytest.fixture(scope="session")
def coco_pipeline(coco_checkpoint):
    from apps.geodiffusion.pipeline import GeoDiffusionPipeline

    return GeoDiffusionPipeline.from_pretrained(coco_checkpoint, device="cpu")


@pytest.fixture(scope="session")
def nuimages_pipeline(nuimages_checkpoint):
    from apps.geodiffusion.pipeline import GeoDiffusionPipeline

    return GeoDiffusionPipeline.from_pretrained(nuimages_checkpoint, device="cpu")


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """An empty offline HF cache (returned) on the CPU; no DEMOHUB_CHECKPOINTS, no forced dtype."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("DEMOHUB_DEVICE", "cpu")
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio"))
    monkeypatch.delenv("DEMOHUB_CHECKPOINTS", raising=False)
    monkeypatch.delenv("DEMOHUB_DTYPE", raising=False)
    return tmp_path / "hub"


@pytest.fixture
def offline_page(tmp_path, monkeypatch):
    """The GeoDiffusion page's actions with no weights anywhere and the Hub offline."""
    from apps.geodiffusion import DEMO
    from apps.geodiffusion.actions import GeoDiffusionPage
    from shared.context import DemoContext
    from shared.pool import ModelPool

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("DEMOHUB_CHECKPOINTS", raising=False)
    return GeoDiffusionPage(DemoContext(DEMO, ModelPool(budget_bytes=10**9)))
