"""The sampler choice on tiny official-layout checkpoints: the official scheduler stays the default, "fast" is
DPM-Solver++ at FAST_SAMPLING_STEPS, both run and honour seeds, and neither call changes the other's scheduler."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from apps.geodiffusion.layout import FAST_SAMPLING_STEPS, KNOWN_CONFIGS, SAMPLERS
from apps.geodiffusion.pipeline import GeoDiffusionPipeline
from shared.errors import UserInputError

LAYOUT = {"bbox": [["car", 0.1, 0.2, 0.5, 0.6], ["sky-other", 0.0, 0.0, 1.0, 0.3]]}
NU_LAYOUT = {"camera": "back", "bbox": [["car", 0.1, 0.2, 0.5, 0.6], ["pedestrian", 0.6, 0.4, 0.7, 0.9]]}


def pixels(out):
    return np.stack([np.asarray(im, dtype=np.int16) for im in out.images])


@pytest.mark.parametrize("sampler", SAMPLERS)
@pytest.mark.parametrize("which", ["nuimages", "coco"])
def test_both_samplers_run_and_honour_seeds(request, which, sampler):
    pipe = request.getfixturevalue(f"{which}_pipeline")
    layout = NU_LAYOUT if which == "nuimages" else LAYOUT
    a = pipe(layout, seed=11, num_inference_steps=3, sampler=sampler)
    b = pipe(layout, seed=11, num_inference_steps=3, sampler=sampler)
    c = pipe(layout, seed=12, num_inference_steps=3, sampler=sampler)
    assert np.array_equal(pixels(a), pixels(b)), "same seed, same sampler: the same image"
    assert not np.array_equal(pixels(a), pixels(c)), "another seed: another image"
    assert pixels(a).std() > 0 and a.images[0].size == (64, 64)
    assert a.sampler == sampler and a.num_inference_steps == 3


def test_outputs_say_which_scheduler_ran(nuimages_pipeline, coco_pipeline):
    runs = {(name, sampler): pipe(LAYOUT if name == "coco" else NU_LAYOUT, num_inference_steps=2, sampler=sampler)
            for name, pipe in (("nuimages", nuimages_pipeline), ("coco", coco_pipeline)) for sampler in SAMPLERS}
    schedulers = {key: out.to_dict()["scheduler"] for key, out in runs.items()}
    assert schedulers == {("nuimages", "default"): "PNDMScheduler",  # the released nuImages scheduler
                          ("nuimages", "fast"): "DPMSolverMultistepScheduler",
                          ("coco", "default"): "DPMSolverMultistepScheduler",  # the official loader's for COCO-Stuff
                          ("coco", "fast"): "DPMSolverMultistepScheduler"}
    assert {key: out.to_dict()["sampler"] for key, out in runs.items()} == {key: key[1] for key in runs}


def test_fast_sampling_is_dpm_solver_pp_on_the_checkpoints_noise_schedule(nuimages_pipeline):
    official = nuimages_pipeline.samplers["default"].scheduler.config
    fast = nuimages_pipeline.samplers["fast"].scheduler.config
    assert fast.algorithm_type == "dpmsolver++" and fast.solver_order == 2
    for key in ("num_train_timesteps", "beta_start", "beta_end", "beta_schedule", "timestep_spacing", "steps_offset"):
        assert fast[key] == official[key], key
    fast_sd, official_sd = nuimages_pipeline.samplers["fast"], nuimages_pipeline.samplers["default"]
    assert official_sd is nuimages_pipeline.sd
    assert fast_sd.unet is official_sd.unet and fast_sd.vae is official_sd.vae  # the models are shared, not copied
    assert fast_sd.text_encoder is official_sd.text_encoder and fast_sd.scheduler is not official_sd.scheduler


def test_on_coco_stuff_fast_is_the_official_scheduler_at_fewer_steps(coco_pipeline):
    """The official COCO-Stuff loader already samples with DPM-Solver++: same steps, same seed, same pixels."""
    official = coco_pipeline(LAYOUT, seed=4, num_inference_steps=3)
    fast = coco_pipeline(LAYOUT, seed=4, num_inference_steps=3, sampler="fast")
    assert np.array_equal(pixels(official), pixels(fast))


def test_nuimages_samplers_differ_and_fast_leaves_the_official_one_as_it_was(nuimages_pipeline):
    before = pixels(nuimages_pipeline(NU_LAYOUT, seed=5, num_inference_steps=3))
    fast = pixels(nuimages_pipeline(NU_LAYOUT, seed=5, num_inference_steps=3, sampler="fast"))
    after = nuimages_pipeline(NU_LAYOUT, seed=5, num_inference_steps=3)
    assert not np.array_equal(before, fast)  # PNDM and DPM-Solver++ take different paths from the same noise
    assert np.array_equal(before, pixels(after)) and after.scheduler == "PNDMScheduler"
    assert type(nuimages_pipeline.sd.scheduler).__name__ == "PNDMScheduler"


def test_default_steps_follow_the_sampler_and_progress_counts_unet_evaluations(nuimages_pipeline):
    official, fast = [], []
    out = nuimages_pipeline(NU_LAYOUT, callback=lambda i, n: official.append((i, n)))
    assert out.num_inference_steps == 100 == nuimages_pipeline.config.num_inference_steps
    # PNDM as released (no Runge-Kutta steps) takes its first step twice: 101 UNet evaluations, and the bar ends full.
    assert official == [(i, 101) for i in range(1, 102)]
    out = nuimages_pipeline(NU_LAYOUT, sampler="fast", callback=lambda i, n: fast.append((i, n)))
    assert out.num_inference_steps == FAST_SAMPLING_STEPS == 20
    assert fast == [(i, 20) for i in range(1, 21)]
    assert nuimages_pipeline(NU_LAYOUT, sampler="fast", num_inference_steps=7).num_inference_steps == 7


def test_concurrent_calls_with_both_samplers_give_the_sequential_images(nuimages_pipeline):
    expected = {s: pixels(nuimages_pipeline(NU_LAYOUT, seed=9, num_inference_steps=3, sampler=s)) for s in SAMPLERS}
    got: dict[str, list] = {s: [] for s in SAMPLERS}

    def run(sampler):
        for _ in range(2):
            got[sampler].append(pixels(nuimages_pipeline(NU_LAYOUT, seed=9, num_inference_steps=3, sampler=sampler)))

    threads = [threading.Thread(target=run, args=(s,)) for s in SAMPLERS]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    for sampler in SAMPLERS:
        assert len(got[sampler]) == 2 and all(np.array_equal(g, expected[sampler]) for g in got[sampler]), sampler


@pytest.mark.parametrize("value", ["slow", "", 1, ["fast"], "dpm++"])
def test_an_unknown_sampler_is_a_user_error_naming_it(value):
    with pytest.raises(UserInputError, match='The sampler must be "default"') as info:
        GeoDiffusionPipeline.check_inputs("", sampler=value, config=KNOWN_CONFIGS["nuimages-256x256"])
    assert info.value.argument == "sampler" and repr(value) in str(info.value)


def test_check_inputs_normalises_the_sampler_and_fills_its_steps():
    nu, coco = KNOWN_CONFIGS["nuimages-256x256"], KNOWN_CONFIGS["coco-stuff-512x512"]
    check = GeoDiffusionPipeline.check_inputs
    assert check("", config=nu).sampler == check("", sampler=None, config=nu).sampler == "default"
    assert check("", sampler=" Fast ", config=nu).sampler == "fast"
    assert [check("", sampler=s, config=c).num_inference_steps for c in (nu, coco) for s in SAMPLERS] == [
        100, FAST_SAMPLING_STEPS, 50, FAST_SAMPLING_STEPS]
    assert check("", num_inference_steps=35, sampler="fast", config=coco).num_inference_steps == 35
    assert (nu.official_scheduler, coco.official_scheduler) == ("PNDM", "DPM-Solver++")


def test_the_settings_line_gives_the_estimated_trade_off():
    """The ratio comes from the CPU seconds benchmarks/geodiffusion_sampling.py estimated, for the checkpoint's own
    steps (PNDM's extra evaluation counted), and says it is an estimate."""
    from dataclasses import replace

    from apps.geodiffusion.actions import CPU_SECONDS, sampler_info, steps_for_sampler

    nu, coco = KNOWN_CONFIGS["nuimages-256x256"], KNOWN_CONFIGS["coco-stuff-512x512"]
    assert sampler_info(nu).startswith("Fast sampling takes 4.8× less time per image than the official 100 PNDM "
                                       "steps (estimated from short timed calls on 2 CPU cores at 256²).")
    assert sampler_info(coco).startswith("Fast sampling takes 2.4× less time per image than the official 50 "
                                         "DPM-Solver++ steps (estimated from short timed calls on 2 CPU cores "
                                         "at 512²).")
    fixed, per_evaluation = CPU_SECONDS[256]
    expected = (fixed + 31 * per_evaluation) / (fixed + 20 * per_evaluation)
    assert f"takes {expected:.1f}× less time" in sampler_info(replace(nu, num_inference_steps=30))
    assert steps_for_sampler("fast", 100, nu) == 20 and steps_for_sampler("fast", 35, nu) == 35
    assert steps_for_sampler("default", 20, coco) == 50 and steps_for_sampler("default", 21, coco) == 21


def test_the_page_figures_are_the_benchmark_tables():
    """CPU_SECONDS are BENCHMARKS.md's extrapolation rows (fixed s, s per UNet evaluation) for each image size."""
    import re

    from apps.geodiffusion.actions import CPU_SECONDS
    from shared.weights import REPO_ROOT

    text = (REPO_ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    section = text.split("## GeoDiffusion: fast sampling vs the official samplers")[1].split("\n## ")[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) > 7 and cells[7].startswith("extrapolated"):
            size = int(re.match(r"(\d+)²", cells[0]).group(1))
            rows[size] = (float(cells[4]), float(cells[3].split()[0]))
    assert rows == CPU_SECONDS
