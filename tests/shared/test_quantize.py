"""Weight-only int8/int4 Linears (shared/quantize.py) against the arithmetic they stand for, and DEMOHUB_QUANTIZE's
checks: an unknown value is refused in a sentence when the hub starts."""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest
import torch
from torch import nn

from shared import quantize
from shared.device import quantize_problem, quantize_setting
from shared.pool import estimate_bytes
from tests.commands import REPO, checkout_env


def explicit_int4(weight: torch.Tensor, group: int) -> torch.Tensor:
    """The weight an int4 layer stands for: each group's codes 0..15 between its min and max, written out."""
    n, k = weight.shape
    grouped = weight.float().reshape(n, k // group, group)
    low, high = grouped.amin(-1, keepdim=True), grouped.amax(-1, keepdim=True)
    scale = (high - low) / 15
    return (torch.round((grouped - low) / scale).clamp(0, 15) * scale + low).reshape(n, k)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
# the packed kernels, int8's long prompt (widened), int4's long prompt (widened)
@pytest.mark.parametrize("rows", [1, quantize.PACKED_ROWS + 5, quantize.INT4_PACKED_ROWS + 5])
def test_int8_and_int4_layers_compute_what_their_codes_stand_for(dtype, rows):
    torch.manual_seed(0)
    linear = nn.Linear(256, 192).to(dtype)
    x = torch.randn(2, rows, 256, dtype=dtype)
    int8 = quantize.quantize_linear(linear, "int8")
    expected = nn.functional.linear(x.float(), int8.dequantized(), linear.bias.float())
    assert int8(x).shape == (2, rows, 192) and int8(x).dtype == dtype
    torch.testing.assert_close(int8(x).float(), expected, rtol=2e-2, atol=2e-2)
    int4 = quantize.quantize_linear(linear, "int4")
    assert int4.group == 128
    expected = nn.functional.linear(x.float(), explicit_int4(linear.weight, 128), linear.bias.float())
    torch.testing.assert_close(int4(x).float(), expected, rtol=2e-2, atol=3e-2)
    # and both stay near the full-precision layer: int8 well within 1%, int4 within its 4 bits' noise
    full = linear(x).float()
    assert (int8(x).float() - full).norm() / full.norm() < 0.01
    assert (int4(x).float() - full).norm() / full.norm() < 0.1


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_int8_rounds_row_blocks_to_the_codes_and_scales_of_the_whole_weight_and_leaves_it_as_it_was(monkeypatch,
                                                                                                     dtype):
    monkeypatch.setattr(quantize, "ROUND_ROWS", 7)
    linear = nn.Linear(48, 30).to(dtype)
    linear.weight.data[3] = 0  # a row of zeros: its scale stays above 0
    weight = linear.weight.detach().clone()
    int8 = quantize.Int8Linear(linear)
    scale = weight.float().abs().amax(dim=1).clamp(min=1e-12) / 127
    assert torch.equal(int8.scale, scale.to(dtype))
    assert torch.equal(int8.weight_int8, torch.round(weight.float() / scale[:, None]).clamp(-127, 127).to(torch.int8))
    assert torch.equal(linear.weight, weight), "rounding a float32 weight must not change it"


def test_quantising_a_large_layer_never_holds_its_whole_float_copies():
    """A 7B model's output layer (32,002 x 4,096) held three float copies while int8 rounded it, 1.05 GB above the
    layer; rounding ROUND_ROWS rows at a time holds a block's. Measured in a process of its own (a test process's
    freed memory would hide the growth) on a 16,384 x 4,096 layer, whose whole float copy is 268 MB: int8 grew the
    process by 540 MB before, 142-150 MB now (the codes themselves are 67 MB), int4 by 136-243 MB."""
    code = (
        "import torch\n"
        "from benchmarks.common import proc_status, restart_peak\n"
        "from shared import quantize\n"
        "layer = torch.nn.Linear(4096, 16384, bias=False).to(torch.bfloat16)\n"
        "for mode in ('int8', 'int4'):\n"
        "    restart_peak(); base = proc_status('VmRSS')\n"
        "    quantized = quantize.quantize_linear(layer, mode)\n"
        "    print(mode, (restart_peak() - base) / 1e6)\n"
        "    del quantized\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO,
                          env=checkout_env())
    assert done.returncode == 0, done.stderr[-2000:]
    growth = {mode: float(mb) for mode, mb in (line.split() for line in done.stdout.split("\n") if line)}
    assert set(growth) == {"int8", "int4"}
    limits = {"int8": 268, "int4": 1.5 * 268}  # int8: under one whole float copy, its 67 MB of codes included; int4
    # (grouped rounding holds more per block, a whole weight's would hold a float copy and int32 codes: 536 MB)
    for mode, mb in growth.items():
        assert mb < limits[mode], f"{mode} rounding grew the process by {mb:.0f} MB: a whole float copy is 268 MB"


@pytest.mark.parametrize("mode", ["int8", "int4"])
def test_each_layer_quantised_gives_its_rounding_blocks_back_to_the_system(monkeypatch, mode):
    """The row blocks a layer is rounded in are freed between the codes kept, where glibc keeps them: each layer
    trims the heap once it is quantised (a 7B int8 load held 3 GB more without it, BENCHMARKS.md)."""
    trims = []
    monkeypatch.setattr(quantize, "trim_heap", lambda: trims.append(len(trims)))
    model = nn.Sequential(nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 128)).to(torch.bfloat16)
    assert quantize.quantize_linears(model, mode) == 2
    assert len(trims) == 2


def test_quantizing_a_model_replaces_each_linear_once_and_the_pool_counts_fewer_bytes():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(50, 64), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64),
                          nn.Linear(64, 50, bias=False)).to(torch.bfloat16)
    model[4].weight = model[0].weight  # tied: the output layer shares the embedding table
    before = estimate_bytes(model)
    assert quantize.quantize_linears(model, "int8") == 2
    assert [type(m).__name__ for m in model] == ["Embedding", "Int8Linear", "ReLU", "Int8Linear", "Linear"]
    assert model[4].weight is model[0].weight  # a tied Linear is left as it is (no untied second copy)
    linear_bytes = (64 * 128 + 128 * 64) * 2  # bf16
    assert estimate_bytes(model) == pytest.approx(before - linear_bytes / 2, rel=0.05)  # 1 byte a weight + scales
    assert quantize.quantize_linears(model, "none") == 0


def test_int4_leaves_a_layer_whose_width_the_kernel_cannot_take():
    assert quantize.quantize_linear(nn.Linear(48, 16), "int4") is None  # 48 is no multiple of 32
    assert quantize.quantize_linear(nn.Linear(64, 24), "int4") is None  # 24 outputs: the kernel packs 16
    assert quantize.quantize_linear(nn.Linear(96, 16), "int4").group == 32


def test_the_setting_is_read_without_torch_and_an_unknown_one_is_a_sentence(monkeypatch):
    monkeypatch.delenv("DEMOHUB_QUANTIZE", raising=False)
    assert quantize_setting() == "none" and quantize_problem() is None
    monkeypatch.setenv("DEMOHUB_QUANTIZE", " INT4 ")
    assert quantize_setting() == "int4" and quantize_problem() is None  # this CPU runs both kinds
    monkeypatch.setenv("DEMOHUB_QUANTIZE", "int3")
    assert quantize_problem() == ("DEMOHUB_QUANTIZE='int3' is not a quantisation this hub knows: set it to int8 or "
                                  "int4 (weight-only, on a CPU), or leave it unset for the demo's own dtype.")


def test_a_kind_this_pytorch_cannot_run_is_named(monkeypatch):
    """A PyTorch without the int4 CPU kernel (older builds): the start-up check names it instead of the first
    visitor's model load failing."""
    monkeypatch.delattr(torch, "_weight_int4pack_mm_for_cpu")
    monkeypatch.setenv("DEMOHUB_QUANTIZE", "int4")
    problem = quantize_problem()
    assert problem.startswith(f"DEMOHUB_QUANTIZE=int4 cannot run here: this PyTorch ({torch.__version__}) has no "
                              "int4 CPU kernel for it (AttributeError")
    assert problem.endswith("Unset it, or try the other kind.")
    assert quantize.unsupported("int8") is None


def test_each_full_precision_weight_is_freed_as_its_layer_is_quantised(monkeypatch):
    """Quantising holds one layer's full-precision weight at a time, not all of them until the end (a 7B model would
    hold its bf16 and int8 copies at once)."""
    import weakref

    model = nn.Sequential(*[nn.Linear(64, 64) for _ in range(4)])
    weights = [weakref.ref(layer.weight) for layer in model]
    alive = []
    original = quantize.quantize_linear

    def watched(linear, *args):
        alive.append(sum(w() is not None for w in weights))
        return original(linear, *args)

    monkeypatch.setattr(quantize, "quantize_linear", watched)
    assert quantize.quantize_linears(model, "int8") == 4
    assert alive == [4, 3, 2, 1]


def empty_copy(model: nn.Module) -> nn.Module:
    """``model``'s architecture with its parameters on the meta device (as a loader builds it before reading)."""
    from accelerate import init_empty_weights

    with init_empty_weights():
        return nn.Sequential(*[nn.Linear(m.in_features, m.out_features) for m in model])


@pytest.mark.parametrize("mode", ["int8", "int4"])
def test_filling_an_empty_model_quantises_each_layer_as_it_arrives(monkeypatch, mode):
    """``fill_quantized`` gives the model that loading in full and then quantising gives, while holding at most one
    full-precision Linear at any time (a 7B model: one layer in bf16 beside the quantised ones, not 13 GB)."""
    torch.manual_seed(0)
    source = nn.Sequential(*[nn.Linear(128, 64) for _ in range(4)]).to(torch.bfloat16)
    empty, plain_alive = empty_copy(source), []
    original = quantize.quantize_linear

    def watched(linear, *args):
        plain_alive.append(sum(type(m) is nn.Linear and not m.weight.is_meta for m in empty))
        return original(linear, *args)

    monkeypatch.setattr(quantize, "quantize_linear", watched)
    quantize.fill_quantized(empty, source.state_dict().items(), mode, torch.bfloat16)
    assert plain_alive == [1, 1, 1, 1]
    reference = quantize.quantize_linears(source, mode) and source.state_dict()
    filled = empty.state_dict()
    assert list(filled) == list(reference) and all(torch.equal(filled[k], reference[k]) for k in reference)


def test_filling_refuses_a_key_the_model_lacks_and_a_parameter_left_empty():
    """A key naming nothing in the model, or a parameter no key fills, is an error naming it; a key naming a buffer
    the model computes itself (old Llama checkpoints hold ``rotary_emb.inv_freq``) is passed over."""
    source = nn.Sequential(nn.Linear(64, 32), nn.Linear(32, 16))
    tensors = list(source.state_dict().items())
    empty = empty_copy(source)
    empty.add_module("rotary_emb", nn.Module())
    empty.rotary_emb.register_buffer("inv_freq", torch.ones(4), persistent=False)
    quantize.fill_quantized(empty, [*tensors, ("0.rotary_emb.inv_freq", torch.zeros(4))], "int8", torch.float32)
    assert torch.equal(empty.rotary_emb.inv_freq, torch.ones(4)) and type(empty[1]) is quantize.Int8Linear
    with pytest.raises(ValueError, match=r"holds 2\.scale, which the model has no parameter for"):
        quantize.fill_quantized(empty_copy(source), [*tensors, ("2.scale", torch.ones(1))], "int8", torch.float32)
    with pytest.raises(ValueError, match=r"no values for 2 parameters, e\.g\. \['1\.weight', '1\.bias'\]"):
        quantize.fill_quantized(empty_copy(source), tensors[:2], "int8", torch.float32)


def test_requantizing_replaces_each_layer_in_place_as_its_weight_arrives_and_frees_the_old_one_at_once():
    """``requantize``: the layers quantised again from the checkpoint's tensors equal quantising the full-precision
    model with the statistics; the model, its other parameters and its output layer are kept; each old layer is gone
    before the next tensor is read (memory: the model plus one layer)."""
    import weakref

    torch.manual_seed(0)
    source = nn.Sequential(nn.Linear(64, 128), nn.Linear(128, 48), nn.Linear(48, 64)).to(torch.bfloat16)
    tensors = list(source.state_dict().items())
    model = empty_copy(source)
    quantize.fill_quantized(model, tensors, "int4", torch.bfloat16)
    kept = model[2].weight  # 48 inputs: no int4 form, left as it is
    statistics = {"0": torch.rand(64) * 4, "1": torch.rand(128)}
    olds = {name: weakref.ref(model[int(name)]) for name in statistics}
    memory = [model[i].weight_int4.data_ptr() for i in (0, 1)]
    alive = []

    def prepare(name: str, tensor: torch.Tensor) -> torch.Tensor:
        alive.append((name, [n for n, ref in olds.items() if ref() is not None]))
        return tensor

    assert quantize.requantize(model, tensors, "int4", torch.bfloat16, prepare, statistics) == 2
    assert alive == [("0.weight", ["0", "1"]), ("1.weight", ["1"])]  # layer 0's old form freed before layer 1 is read
    assert not any(ref() is not None for ref in olds.values()) and model[2].weight is kept
    assert [model[i].weight_int4.data_ptr() for i in (0, 1)] == memory  # the new codes in the old layers' buffers
    expected = copy.deepcopy(source)
    quantize.quantize_linears(expected, "int4", statistics)
    got, wanted = model.state_dict(), expected.state_dict()
    assert list(got) == list(wanted) and all(torch.equal(got[k], wanted[k]) for k in wanted)


def test_a_short_prompt_runs_int8s_packed_kernel_and_a_long_one_widens_the_weight(monkeypatch):
    """The speed claim of int8 (BENCHMARKS.md: up to 16 rows run PyTorch's packed kernel): which kernel
    runs is what is checked, rows up to ``PACKED_ROWS`` through ``torch._weight_int8pack_mm``, more rows without."""
    calls = []
    packed = torch._weight_int8pack_mm

    def counted(*args):
        calls.append(args[0].shape[0])
        return packed(*args)

    monkeypatch.setattr(torch, "_weight_int8pack_mm", counted)
    int8 = quantize.quantize_linear(nn.Linear(64, 32).to(torch.bfloat16), "int8")
    int8(torch.ones(1, quantize.PACKED_ROWS, 64, dtype=torch.bfloat16))
    assert calls == [quantize.PACKED_ROWS]
    int8(torch.ones(1, quantize.PACKED_ROWS + 1, 64, dtype=torch.bfloat16))
    assert calls == [quantize.PACKED_ROWS], "a long prompt widens the weight instead"


def test_a_long_prompt_widens_int8_tile_by_tile_into_one_buffer_per_thread(monkeypatch):
    """Beyond ``PACKED_ROWS`` an int8 layer widens ``WIDEN_ROWS`` output rows at a time (here 32 of 96 and 100) into
    a buffer its thread keeps: the product is the dequantised weight's, every tile included, and a second call
    allocates no new buffer (the speed claim: BENCHMARKS.md's first token of a new question); another thread keeps
    its own, so two requests never write into one."""
    import threading

    monkeypatch.setattr(quantize, "WIDEN_ROWS", 32)
    monkeypatch.setattr(quantize, "_scratch", threading.local())  # none left by other tests
    torch.manual_seed(0)
    rows = quantize.PACKED_ROWS + 3
    for outputs in (96, 100):  # whole tiles, and a last tile of 4 rows
        int8 = quantize.quantize_linear(nn.Linear(64, outputs).to(torch.float32), "int8")
        x = torch.randn(rows, 64)
        expected = nn.functional.linear(x, int8.dequantized(), int8.bias)
        torch.testing.assert_close(int8(x), expected, rtol=1e-5, atol=1e-5)
    buffer = quantize._scratch.widened
    assert buffer.numel() == 32 * 64
    int8(torch.randn(rows, 64))
    assert quantize._scratch.widened is buffer
    seen = []
    thread = threading.Thread(target=lambda: (int8(torch.randn(rows, 64)), seen.append(quantize._scratch.widened)))
    thread.start()
    thread.join()
    assert seen and seen[0] is not buffer and seen[0].data_ptr() != buffer.data_ptr()
    with torch.inference_mode():  # a buffer made in inference mode is filled outside it too (and the other way)
        monkeypatch.setattr(quantize, "_scratch", threading.local())
        int8(torch.randn(rows, 64))
    torch.testing.assert_close(int8(x), nn.functional.linear(x, int8.dequantized(), int8.bias), rtol=1e-5, atol=1e-5)


def test_a_long_prompt_widens_int4_tile_by_tile_and_a_short_one_runs_the_kernel(monkeypatch):
    """The speed claim of int4 (BENCHMARKS.md: a new question's first token): up to ``INT4_PACKED_ROWS`` rows run
    PyTorch's int4 kernel, more rows unpack the packed weight ``WIDEN_ROWS`` outputs at a time (here 128 of 192 and
    320) into buffers the thread keeps and give the kernel's products; a layer whose outputs fill no 64-output block
    (80 here) runs the kernel at any length."""
    import threading

    calls = []
    kernel = torch._weight_int4pack_mm_for_cpu

    def counted(*args):
        calls.append(args[0].shape[0])
        return kernel(*args)

    monkeypatch.setattr(quantize, "WIDEN_ROWS", 128)
    monkeypatch.setattr(quantize, "_scratch", threading.local())
    monkeypatch.setattr(torch, "_weight_int4pack_mm_for_cpu", counted)
    torch.manual_seed(0)
    long, short = quantize.INT4_PACKED_ROWS + 1, quantize.INT4_PACKED_ROWS
    for outputs in (192, 320):  # a last tile of 64 outputs, and whole tiles plus one of 64
        int4 = quantize.quantize_linear(nn.Linear(256, outputs).to(torch.bfloat16), "int4")
        x = torch.randn(long, 256, dtype=torch.bfloat16)
        widened = int4(x)
        assert calls == [], "a long prompt must not run the int4 kernel"
        expected = kernel(x, int4.weight_int4, int4.group, int4.scales_and_zeros) + int4.bias
        torch.testing.assert_close(widened, expected, rtol=1e-2, atol=2e-2)
        int4(x[:short])
        assert calls == [short]
        calls.clear()
    buffers = quantize._scratch.widened, quantize._scratch.codes
    assert buffers[0].numel() == 128 * 256 and buffers[1].numel() == 128 * 128
    int4(torch.randn(long, 256, dtype=torch.bfloat16))
    assert (quantize._scratch.widened, quantize._scratch.codes) == buffers  # no new memory at the next prompt
    odd = quantize.quantize_linear(nn.Linear(256, 80).to(torch.bfloat16), "int4")
    odd(torch.randn(long, 256, dtype=torch.bfloat16))
    assert calls == [long]


def test_a_pytorch_that_packs_int4_otherwise_runs_the_kernel_for_long_prompts(monkeypatch):
    """Widening reads PyTorch's packed layout (``INT4_BLOCK``); a PyTorch that packs differently is found by
    ``_int4_layout_known`` (a known layer packed and read back), and its int4 layers then run the kernel."""
    assert quantize._int4_layout_known.__wrapped__()  # this PyTorch packs as INT4_BLOCK says
    packing = torch._convert_weight_to_int4pack_for_cpu
    monkeypatch.setattr(torch, "_convert_weight_to_int4pack_for_cpu",
                        lambda codes, tiles: packing(codes.flip(0), tiles).flip(0))  # the same bytes, rows reversed
    assert not quantize._int4_layout_known.__wrapped__()
    calls = []
    kernel = torch._weight_int4pack_mm_for_cpu
    monkeypatch.setattr(quantize, "_int4_layout_known", lambda: False)
    monkeypatch.setattr(torch, "_weight_int4pack_mm_for_cpu", lambda *args: calls.append(1) or kernel(*args))
    int4 = quantize.quantize_linear(nn.Linear(64, 64).to(torch.bfloat16), "int4")
    int4(torch.randn(quantize.INT4_PACKED_ROWS + 1, 64, dtype=torch.bfloat16))
    assert calls == [1]


def test_input_statistics_are_each_channels_mean_square_over_the_calibration_run():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    quantize.quantize_linears(model, "int8")  # statistics come from the loaded, already quantised model
    batches = [torch.randn(3, 5, 8), torch.randn(7, 8)]
    found = quantize.input_statistics(model, lambda m: [m(b) for b in batches])
    inputs = torch.cat([b.reshape(-1, 8) for b in batches])
    torch.testing.assert_close(found["0"], (inputs ** 2).mean(dim=0))
    hidden = torch.relu(model[0](inputs))
    torch.testing.assert_close(found["2"], (hidden ** 2).mean(dim=0))
    assert not model[0]._forward_hooks and not model[2]._forward_hooks  # the hooks are gone


def test_calibrated_int4_protects_the_large_input_channels_and_computes_what_it_stands_for():
    """AWQ's scales: with one input channel 20x the others (as a Llama's outlier features are), int4 calibrated on
    the inputs' statistics is closer to the full-precision output than plain int4; its product is still the packed
    codes' (the input divided by the scales the weight columns were multiplied by)."""
    torch.manual_seed(0)
    linear = nn.Linear(256, 64)
    x = torch.randn(40, 256)
    x[:, [3, 77]] *= 20
    statistics = quantize.input_statistics(nn.Sequential(linear), lambda m: m(x))["0"]
    plain = quantize.quantize_linear(linear, "int4")
    calibrated = quantize.quantize_linear(linear, "int4", statistics)
    assert plain.input_scale is None and calibrated.input_scale is not None
    full = linear(x)
    error = {name: ((layer(x) - full).norm() / full.norm()).item()
             for name, layer in (("plain", plain), ("calibrated", calibrated))}
    assert error["calibrated"] < 0.9 * error["plain"], error  # measured: 0.059 against 0.067
    # the same arithmetic written out: the kernel's product on the scaled input
    y = torch._weight_int4pack_mm_for_cpu(x * calibrated.input_scale, calibrated.weight_int4, calibrated.group,
                                          calibrated.scales_and_zeros) + linear.bias
    torch.testing.assert_close(calibrated(x), y)


@pytest.mark.parametrize("how", ["quantize_linears", "fill_quantized"])
def test_statistics_calibrate_the_int4_layers_they_name(how):
    torch.manual_seed(0)
    source = nn.Sequential(nn.Linear(128, 64), nn.Linear(64, 32))
    statistics = {"1": torch.rand(64) + 0.5}
    if how == "quantize_linears":
        quantize.quantize_linears(source, "int4", statistics)
        model = source
    else:
        model = empty_copy(source)
        quantize.fill_quantized(model, source.state_dict().items(), "int4", torch.float32, statistics=statistics)
    assert model[0].input_scale is None
    expected = quantize.Int4Linear(nn.Linear(64, 32).requires_grad_(False), 64, statistics["1"])
    assert model[1].input_scale is not None and model[1].input_scale.shape == expected.input_scale.shape


def test_a_cached_quantised_model_fills_an_empty_one_tensor_for_tensor_and_refuses_what_does_not_fit(tmp_path):
    """``save_quantized`` / ``read_quantized``: a model of int8, calibrated int4 and plain layers (one weight tied to
    another module) comes back the same, its statistics with it, each layer of its kind, every tensor in memory of
    its own aligned to 64 bytes (a file's tensors are aligned to their element size only, and PyTorch's int8 kernel
    crashed a 7B model read from its file: BENCHMARKS.md); a layer of another shape or
    dtype, a tensor the model has no place for, or one it lacks, is a ``ValueError``, never a wrong model."""
    from accelerate import init_empty_weights

    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(64, 128)
            self.int8, self.int4, self.plain = nn.Linear(128, 64), nn.Linear(128, 64, bias=False), nn.Linear(64, 16)
            self.head = nn.Linear(128, 64, bias=False)
            self.tie_weights()

        def tie_weights(self):  # as transformers' models do where their config says so
            self.head.weight = self.embed.weight

    torch.manual_seed(0)
    model = Tied().to(torch.bfloat16)
    statistics = {"int4": torch.rand(128) + 0.1}
    model.int8 = quantize.quantize_linear(model.int8, "int8")
    model.int4 = quantize.quantize_linear(model.int4, "int4", statistics["int4"])
    target = tmp_path / "model.safetensors"
    assert quantize.save_quantized(model, target, statistics)

    def empty():
        with init_empty_weights():
            built = Tied().to(torch.bfloat16)
        built.config = type("Config", (), {"tie_word_embeddings": True})()
        return built

    filled = empty()
    read = quantize.read_quantized(filled, target)
    assert torch.equal(read["int4"], statistics["int4"])
    assert [type(m) for m in (filled.int8, filled.int4, filled.plain)] == [
        quantize.Int8Linear, quantize.Int4Linear, nn.Linear]
    assert filled.head.weight is filled.embed.weight and filled.int4.group == model.int4.group
    expected, got = model.state_dict(), filled.state_dict()
    assert list(got) == list(expected) and all(torch.equal(got[k], expected[k]) for k in expected)
    assert all(tensor.data_ptr() % 64 == 0 for tensor in got.values()), "aligned as PyTorch's kernels read them"
    x = torch.randn(3, 128, dtype=torch.bfloat16)
    assert torch.equal(filled.int4(x), model.int4(x)) and torch.equal(filled.int8(x), model.int8(x))

    from shared.checkpoints import load_safetensors, save_safetensors

    tensors = dict(load_safetensors(target))
    for change, message in (({"int4.weight_int4": tensors["int4.weight_int4"][:32]}, "int4.weight_int4"),
                            ({"int8.weight_int8": tensors["int8.weight_int8"].to(torch.int16)}, "int8.weight_int8"),
                            ({"int4.scales_and_zeros": tensors["int4.scales_and_zeros"][:, :, :1].expand(3, 64, 2)
                              .contiguous()}, "groups does not fit"),
                            ({"extra.weight": torch.ones(1)}, "no place for"),
                            ({"plain.bias": None}, "leaves empty")):
        broken = tmp_path / "broken.safetensors"
        assert save_safetensors({k: v for k, v in {**tensors, **change}.items() if v is not None}, broken)
        with pytest.raises(ValueError, match=message):
            quantize.read_quantized(empty(), broken)
