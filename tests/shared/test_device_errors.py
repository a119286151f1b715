"""shared.device choices and overrides; shared.errors messages."""

import sys
import types

import pytest
import torch

from apps.ui import as_gradio_error
from shared import device
from shared.errors import UserInputError, WeightsUnavailable, user_message


def test_cpu_defaults(monkeypatch):
    monkeypatch.delenv("DEMOHUB_DEVICE", raising=False)
    monkeypatch.delenv("DEMOHUB_DTYPE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert device.pick_device() == "cpu"
    assert device.pick_dtype("cpu") is torch.float32
    assert device.pick_dtype("cpu", cpu_dtype="bfloat16") is torch.bfloat16


def test_gpu_dtype_prefers_bf16(monkeypatch):
    monkeypatch.delenv("DEMOHUB_DTYPE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: True)
    assert device.pick_dtype("cuda") is torch.bfloat16
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: False)
    assert device.pick_dtype("cuda:0") is torch.float16
    assert device.pick_dtype("cuda", gpu_dtype="float16") is torch.float16


def test_env_overrides(monkeypatch):
    monkeypatch.setenv("DEMOHUB_DEVICE", "cuda:1")
    monkeypatch.setenv("DEMOHUB_DTYPE", "fp16")
    assert device.pick_device() == "cuda:1"
    assert device.pick_dtype() is torch.float16
    monkeypatch.setenv("DEMOHUB_DTYPE", "int3")
    with pytest.raises(ValueError, match="DEMOHUB_DTYPE"):
        device.pick_dtype()


def test_gpu_decorator_is_identity_off_zero_gpu(monkeypatch):
    monkeypatch.delenv("SPACES_ZERO_GPU", raising=False)

    def f(x):
        return x + 1

    assert device.gpu(f) is f
    assert device.gpu(duration=120)(f) is f


def test_gpu_decorator_uses_spaces_on_zero_gpu(monkeypatch):
    calls = []
    fake_spaces = types.SimpleNamespace(GPU=lambda duration: lambda fn: calls.append(duration) or ("wrapped", fn))
    monkeypatch.setitem(sys.modules, "spaces", fake_spaces)
    monkeypatch.setenv("SPACES_ZERO_GPU", "true")

    def f():
        return 1

    assert device.gpu(duration=90)(f) == ("wrapped", f)
    assert calls == [90]


def test_messages_are_sentences_not_tracebacks(caplog):
    import re

    import gradio as gr

    assert user_message(UserInputError("Add an example first.")) == "Add an example first."
    with caplog.at_level("ERROR", logger="demohub"):
        message = user_message(KeyError("/srv/secret/path.bin"))
    assert "Traceback" not in message and "KeyError" not in message and "/srv/secret" not in message
    error_id = re.search(r"error id ([0-9a-f]{8})", message)[1]
    logged = [r for r in caplog.records if error_id in r.getMessage()]
    assert logged and "/srv/secret/path.bin" in logged[0].getMessage() and logged[0].exc_info, "the log has it all"
    err = as_gradio_error(WeightsUnavailable("Run `demohub download x`."))
    assert isinstance(err, gr.Error) and err.message.startswith("Run `demohub download x`. (error id ")
    already = WeightsUnavailable("The download failed (error id 0123abcd); nothing half-written is used.")
    assert user_message(already) == str(already), "one id per message: its cause is logged under it already"


def test_model_call_gives_readable_errors_and_zero_gpu_slot(monkeypatch):
    import gradio as gr

    from apps.ui import model_call

    durations = []
    monkeypatch.setitem(sys.modules, "spaces", types.SimpleNamespace(
        GPU=lambda duration: lambda fn: durations.append(duration) or fn))
    monkeypatch.setenv("SPACES_ZERO_GPU", "1")

    @model_call(duration=30)
    def run(x):
        raise UserInputError(f"bad {x}")

    assert durations == [30]
    with pytest.raises(gr.Error, match="bad 3"):
        run(3)
