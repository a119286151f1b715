"""Tiny official-layout checkpoints built once per session, and pipelines loaded from them."""

from __future__ import annotations

import pytest

from tests.geodiffusion.tiny_checkpoint import build_tiny_checkpoint


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
