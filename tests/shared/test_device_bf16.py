"""bf16 on the CPU: native-support detection, the forced-bf16 warning, `demohub doctor`'s line, what a page says, and
every demo that runs under DEMOHUB_DTYPE=bf16 (tiny checkpoints) really runs in bf16, close to fp32."""

from __future__ import annotations

import logging
import platform

import numpy as np
import pytest
import torch

from shared import device
from shared.device import Bf16Support, cpu_flags, native_bf16_features

X86_EMULATED = "fpu vme sse sse2 avx avx2 avx512f avx512dq avx512bw avx512vl avx512_vnni"  # e.g. Ice Lake server
X86_NATIVE = X86_EMULATED + " avx512_bf16 amx_bf16 amx_tile amx_int8"  # Sapphire Rapids
ARM_NATIVE = "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp bf16 i8mm sve"  # Graviton 3


@pytest.mark.parametrize("flags, features", [
    (X86_EMULATED, ()),
    (X86_NATIVE, ("avx512_bf16", "amx_bf16")),
    ("avx512f AVX512_BF16", ("avx512_bf16",)),  # Cooper Lake: AVX512-BF16, no AMX; names compared case-blind
    ("amx_tile amx_int8", ()),  # AMX without its bf16 part multiplies no bf16
    (ARM_NATIVE, ("bf16",)),
    ("fp asimd", ()),
    ("", ()),
])
def test_native_bf16_features_from_flag_sets(flags, features):
    assert native_bf16_features(flags.split()) == features
    assert Bf16Support(features).native == bool(features)


def test_cpu_flags_read_x86_and_arm_cpuinfo(tmp_path):
    x86 = tmp_path / "x86"
    x86.write_text(f"processor\t: 0\nmodel name\t: Xeon\nflags\t\t: {X86_NATIVE}\nbugs\t\t: spectre_v1\n\n"
                   f"processor\t: 1\nflags\t\t: {X86_NATIVE}\n")
    arm = tmp_path / "arm"
    arm.write_text(f"processor\t: 0\nBogoMIPS\t: 2100.00\nFeatures\t: {ARM_NATIVE}\nCPU implementer\t: 0x41\n")
    assert cpu_flags(x86) == set(X86_NATIVE.split()) and "spectre_v1" not in cpu_flags(x86)
    assert native_bf16_features(cpu_flags(arm)) == ("bf16",)
    assert cpu_flags(tmp_path / "missing") == set()


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="torch's probe names x86 features")
def test_this_machine_agrees_with_torchs_own_cpu_probe():
    """Two independent sources: Linux's flags and torch's cpuinfo-based probe (AMX tiles counted as AMX-BF16)."""
    if not cpu_flags():
        pytest.skip("no /proc/cpuinfo here: the probe is the only source")
    assert set(device.cpu_bf16_support().features) == device._torch_cpu_flags()


def test_summary_lines():
    native = Bf16Support(("avx512_bf16", "amx_bf16"))
    assert native.summary() == "native (avx512_bf16, amx_bf16): opt in with DEMOHUB_DTYPE=bf16"
    assert native.summary(in_use=True) == "native (avx512_bf16, amx_bf16): in use (DEMOHUB_DTYPE=bf16)"
    emulated = Bf16Support(())
    assert emulated.summary().startswith("emulated (no AVX512-BF16, AMX-BF16 or Arm BF16): slower than fp32")
    assert emulated.summary().endswith("keep fp32") and "unset it" in emulated.summary(in_use=True)


@pytest.fixture
def emulating_cpu(monkeypatch):
    """This process believes its CPU emulates bf16, and has not warned yet."""
    monkeypatch.setattr(device, "cpu_bf16_support", lambda: Bf16Support(()))
    device._warn_if_bf16_emulated.cache_clear()  # not warned yet in this process


def test_forced_bf16_on_an_emulating_cpu_warns_once_and_still_runs_bf16(emulating_cpu, monkeypatch, caplog):
    monkeypatch.setenv("DEMOHUB_DTYPE", "bf16")
    monkeypatch.setenv("DEMOHUB_DEVICE", "cpu")
    with caplog.at_level(logging.WARNING, logger="demohub"):
        assert device.pick_dtype() is torch.bfloat16
        assert device.pick_dtype("cpu", cpu_dtype="float32") is torch.bfloat16
    warnings = [r for r in caplog.records if "DEMOHUB_DTYPE=bf16" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING
    assert "emulated" in warnings[0].getMessage() and "slower than fp32" in warnings[0].getMessage()


@pytest.mark.parametrize("forced, where", [("bf16", "cuda"), ("fp32", "cpu"), ("fp16", "cpu")])
def test_no_warning_where_bf16_is_not_forced_on_the_cpu(emulating_cpu, monkeypatch, caplog, forced, where):
    monkeypatch.setenv("DEMOHUB_DTYPE", forced)
    with caplog.at_level(logging.WARNING, logger="demohub"):
        device.pick_dtype(where)
    assert not caplog.records


def test_no_warning_on_a_native_cpu(monkeypatch, caplog):
    monkeypatch.setattr(device, "cpu_bf16_support", lambda: Bf16Support(("amx_bf16",)))
    device._warn_if_bf16_emulated.cache_clear()  # not warned yet in this process
    monkeypatch.setenv("DEMOHUB_DTYPE", "bfloat16")
    with caplog.at_level(logging.WARNING, logger="demohub"):
        assert device.pick_dtype("cpu") is torch.bfloat16
    assert not caplog.records


def test_the_cpu_default_stays_fp32(monkeypatch):
    monkeypatch.delenv("DEMOHUB_DTYPE", raising=False)
    assert device.pick_dtype("cpu") is torch.float32


@pytest.mark.parametrize("env, cpu_dtype, gpu_dtype, plan", [
    ({}, None, None, "fp32 on the CPU; bf16 (fp16 where unsupported) on a GPU"),
    ({"DEMOHUB_DTYPE": "bf16"}, None, None, "bf16 (DEMOHUB_DTYPE=bf16)"),
    ({"DEMOHUB_DTYPE": "float16", "DEMOHUB_DEVICE": "cpu"}, None, None, "fp16 (DEMOHUB_DTYPE=float16)"),
    ({"DEMOHUB_DEVICE": "cpu"}, None, None, "fp32 on the CPU"),
    ({"DEMOHUB_DEVICE": "cpu"}, "bfloat16", None, "bf16 on the CPU"),
    ({"DEMOHUB_DEVICE": "cuda:1"}, None, "float16", "fp16 on a GPU"),
    ({"DEMOHUB_DEVICE": "mps"}, None, None, "fp16 on Apple's GPU (MPS)"),
])
def test_dtype_plan_says_what_pick_dtype_will_choose(monkeypatch, env, cpu_dtype, gpu_dtype, plan):
    for name in ("DEMOHUB_DTYPE", "DEMOHUB_DEVICE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert device.dtype_plan(cpu_dtype, gpu_dtype) == plan
    if env.get("DEMOHUB_DEVICE") == "cpu":  # where it names one dtype, it is pick_dtype's
        short = device.SHORT_NAMES[str(device.pick_dtype("cpu", cpu_dtype)).removeprefix("torch.")]
        assert plan.startswith(short)


def doctor_lines(capsys) -> dict[str, str]:
    from apps import cli

    assert cli.main(["doctor"]) == 0
    return {line[:14].strip(): line[14:] for line in capsys.readouterr().out.splitlines() if len(line) > 14}


def test_doctor_says_whether_this_cpu_has_native_bf16(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("DEMOHUB_DEVICE", "cpu")
    monkeypatch.delenv("DEMOHUB_DTYPE", raising=False)
    lines = doctor_lines(capsys)
    assert lines["Device/dtype"] == "cpu / float32"
    assert lines["bf16 on CPU"] == device.cpu_bf16_support().summary()
    monkeypatch.setenv("DEMOHUB_DTYPE", "bf16")
    lines = doctor_lines(capsys)
    assert lines["Device/dtype"] == "cpu / bfloat16"
    assert lines["bf16 on CPU"] == device.cpu_bf16_support().summary(in_use=True)


def test_doctor_on_an_emulating_cpu_says_keep_fp32(emulating_cpu, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("DEMOHUB_DEVICE", "cpu")
    monkeypatch.delenv("DEMOHUB_DTYPE", raising=False)
    assert doctor_lines(capsys)["bf16 on CPU"].endswith("slower than fp32, keep fp32")


# -- every demo under DEMOHUB_DTYPE=bf16 on the CPU, loaded the way the hub loads it -----------------------------------


@pytest.fixture
def load(monkeypatch, tiny_root):
    """``load(demo, weights, dtype)``: ``shared.context.load_pipeline`` on the tiny checkpoints, DEMOHUB_DTYPE set."""
    from shared.context import load_pipeline

    monkeypatch.setenv("DEMOHUB_DEVICE", "cpu")
    monkeypatch.setenv("DEMOHUB_CHECKPOINTS", str(tiny_root))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    def loader(demo, name: str, dtype: str):
        from shared import weights

        monkeypatch.setenv("DEMOHUB_DTYPE", dtype)
        ws = demo.weight_set(name)
        return load_pipeline(demo, ws, weights.resolve(demo.id, ws, allow_download=False))

    return loader


def parameter_dtypes(*modules: torch.nn.Module) -> set[torch.dtype]:
    return {p.dtype for m in modules for p in m.parameters()}


def test_tag2text_under_bf16_is_bf16_and_close_to_fp32(load):
    from apps.tag2text import DEMO
    from apps.tag2text.actions import example_images

    half, full = load(DEMO, "tag2text-swin-14m", "bf16"), load(DEMO, "tag2text-swin-14m", "fp32")
    assert half.dtype is torch.bfloat16 and parameter_dtypes(half.model) == {torch.bfloat16}
    out_half, out_full = half(example_images()), full(example_images())
    assert type(out_half) is type(out_full) and len(out_half.results) == len(out_full.results) == 4
    for a, b in zip(out_half.results, out_full.results, strict=True):
        assert isinstance(a.caption, str) and a.caption
        assert np.abs(np.subtract(a.scores, b.scores)).max() < 0.02  # tag probabilities, every tag
    assert out_half.to_dict().keys() == out_full.to_dict().keys()


def test_geodiffusion_under_bf16_is_bf16_and_close_to_fp32(load):
    from apps.geodiffusion import DEMO

    layout = {"bbox": [["car", 0.1, 0.2, 0.5, 0.6], ["pedestrian", 0.6, 0.5, 0.7, 0.9]]}
    half, full = load(DEMO, "nuimages-256x256", "bf16"), load(DEMO, "nuimages-256x256", "fp32")
    assert half.dtype is torch.bfloat16
    assert parameter_dtypes(half.sd.unet, half.sd.vae, half.sd.text_encoder) == {torch.bfloat16}
    a, b = half(layout, seed=1, num_inference_steps=2), full(layout, seed=1, num_inference_steps=2)
    assert a.prompt == b.prompt and [im.size for im in a.images] == [im.size for im in b.images]
    pixels_half, pixels_full = (np.asarray(out.images[0], dtype=np.float32) for out in (a, b))
    assert pixels_half.std() > 0  # a picture, not a blank
    assert np.abs(pixels_half - pixels_full).mean() < 8  # of 255: the same picture up to rounding


def test_prax_under_bf16_is_bf16_and_close_to_fp32(load):
    from apps.prax import DEMO
    from apps.prax.tokens import PROGRAM_ID, encode_listener_input, encode_program

    half, full = load(DEMO, "tiny-pragmatic", "bf16"), load(DEMO, "tiny-pragmatic", "fp32")
    assert half.dtype is torch.bfloat16 and parameter_dtypes(half.model) == {torch.bfloat16}
    examples = [("aa", "+"), ("aaa", "+"), ("b", "-")]
    out = half(examples, k=3, num_samples=30, seed=0)
    assert out.candidates and all(c.matches == (True, True, False) for c in out.candidates)
    # Teacher-forced next-byte distributions of one program: the same up to bf16's rounding. Compared as probabilities
    # (total variation per position) and as the program's summed log-probability, which ranks candidates. Entrywise
    # log-probabilities are not: bf16 keeps 8 bits, so a byte at log-probability -30 moves by ~0.1-0.2 depending on
    # the CPU's kernels (0.14 here, 0.19 on CI) while its probability stays ~1e-13.
    spec = half.check_inputs(examples)[0]
    ids = torch.tensor([encode_listener_input(spec)])
    program = encode_program("a+")
    target = torch.tensor([[PROGRAM_ID, *program[:-1]]])  # decoder input: start, then the bytes
    logp = [torch.log_softmax(p.model(input_ids=ids, decoder_input_ids=target).logits.float(), -1)[0]
            for p in (half, full)]
    total_variation = 0.5 * (logp[0].exp() - logp[1].exp()).abs().sum(-1)
    assert total_variation.max() < 0.02, total_variation  # 0.005 measured
    summed = [lp.gather(-1, torch.tensor(program)[:, None]).sum().item() for lp in logp]
    assert abs(summed[0] - summed[1]) < 0.01 * abs(summed[1]) + 0.05, summed  # -24.788 vs -24.790 measured
