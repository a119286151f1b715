"""Broken weights on a running hub: each fault is a clear message from the API, and the other demos keep serving."""

from __future__ import annotations

import os
import shutil

import pytest
import torch
from gradio_client import Client

from tests.conftest import free_port
from tests.robustness.cases import VALID, fill, make_files


class CodePayload:
    def __reduce__(self):
        return (os.system, ("echo this must never run",))


@pytest.fixture(scope="module")
def faulty(tiny_root, tmp_path_factory):
    """A hub whose Tag2Text and 3D-MoLM folders are damaged copies of the tiny checkpoints; PraX is intact."""
    root = tmp_path_factory.mktemp("faulty")
    shutil.copytree(tiny_root / "tag2text", root / "tag2text")
    shutil.copytree(tiny_root / "molm3d", root / "molm3d")
    (root / "molm3d" / "generalist" / "generalist" / "generalist.ckpt").unlink()  # a folder missing a file
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("HF_HUB_CACHE", str(tmp_path_factory.mktemp("empty-cache")))
    mp.setenv("DEMOHUB_CHECKPOINTS", str(root))
    mp.setenv("DEMOHUB_CONVERTED_CACHE", str(tmp_path_factory.mktemp("converted")))
    mp.setenv("DEMOHUB_CACHE", str(tmp_path_factory.mktemp("demohub-cache")))
    from apps import hub
    from apps.settings import ServeSettings
    from shared.pool import ModelPool

    pool = ModelPool(budget_bytes=10**9)
    blocks, (_, url, _) = hub.launch(ServeSettings(port=free_port()), prevent_thread_lock=True, pool=pool)
    client = Client(url, verbose=False)
    files = make_files(tmp_path_factory.mktemp("files"))
    yield client, root / "tag2text" / "tag2text-swin-14m" / "tag2text_swin_14m.pth", files
    client.close()
    blocks.close()
    mp.undo()


def error_of(client, files, api_name, *args) -> str:
    args = [fill(a, files) for a in args]
    with pytest.raises(ValueError) as info:  # gradio_client's AppError (a ValueError), not a timeout
        client.predict(*args, api_name=api_name)
    return str(info.value)


def prax_still_works(client) -> None:
    api, args = VALID["prax"]
    assert client.predict(*args, api_name=api)


def test_truncated_pth(faulty):
    client, pth, files = faulty
    data = pth.read_bytes()
    pth.write_bytes(data[: len(data) // 2])
    message = error_of(client, files, *VALID["tag2text"][:1], *VALID["tag2text"][1])
    assert "truncated or corrupt" in message and "download" in message
    prax_still_works(client)


def test_pickle_that_carries_code_is_refused(faulty, capfd):
    client, pth, files = faulty
    torch.save({"model": {"w": torch.ones(1)}, "payload": CodePayload()}, pth)
    message = error_of(client, files, *VALID["tag2text"][:1], *VALID["tag2text"][1])
    assert "refused" in message and "weights_only" in message
    assert "this must never run" not in capfd.readouterr().out
    prax_still_works(client)


def test_weights_folder_missing_a_file(faulty):
    client, _, files = faulty
    message = error_of(client, files, "/ask", "CCO", "molecular weight")
    assert "generalist.ckpt" in message
    prax_still_works(client)


def test_offline_with_nothing_cached(faulty):
    client, _, files = faulty
    message = error_of(client, files, "/generate", '{"camera": "front", "bbox": []}', "nuimages-256x256", 0, 2, 5.0)
    assert "HF_HUB_OFFLINE=1" in message and "demohub download geodiffusion --weights nuimages-256x256" in message
    prax_still_works(client)


def test_truncated_safetensors(faulty, tmp_path):
    from shared.weights import BUNDLED_ROOT

    client, pth, files = faulty
    target = pth.parents[2] / "prax" / "tiny-literal"
    shutil.copytree(BUNDLED_ROOT / "prax" / "tiny-literal", target)
    weights_file = target / "model.safetensors"
    weights_file.write_bytes(weights_file.read_bytes()[:1000])
    api, args = VALID["prax"]
    message = error_of(client, files, api, args[0], "tiny-literal", args[2])
    assert "truncated or corrupt" in message
    prax_still_works(client)  # tiny-pragmatic, intact
