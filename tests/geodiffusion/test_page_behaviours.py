"""Page behaviours through the page's own event handlers: the checkpoint switch, and COCO export of a nuImages layout
and of images generated on the page (tiny checkpoint, 2 steps)."""

from __future__ import annotations

import io
import json
import zipfile

import gradio as gr
import numpy as np
import pytest
from PIL import Image

from apps.geodiffusion import DEMO
from apps.geodiffusion.actions import GeoDiffusionPage
from apps.geodiffusion.export import export_coco_zip
from apps.geodiffusion.layout import COCO_STUFF_CLASSES, KNOWN_CONFIGS, parse_layout
from apps.geodiffusion.page import build
from shared.context import DemoContext
from shared.pool import ModelPool
from tests.fixtures.tiny_geodiffusion import install_in_hf_cache

TIME_WEATHER = "nuimages-time-weather-512x512"
TIME_WEATHER_REPO = f"KaiChen1998/geodiffusion-{TIME_WEATHER}"
# The nuImages class list as the released checkpoints' category ids number it (1 + index), written out here rather
# than imported so a reordering in apps/ would fail the tests.
NUIMAGES = ["car", "truck", "trailer", "bus", "construction_vehicle", "bicycle", "motorcycle", "pedestrian",
            "traffic_cone", "barrier"]
LAYOUT_LABEL = "Layout (official JSON format, coordinates in [0, 1])"


@pytest.fixture
def time_weather_on_disk(offline, nuimages_checkpoint):
    """The tiny time-weather checkpoint cached as the released nuimages-time-weather-512x512, with its own
    generation_config.json values changed (30 steps, cfg 6.5) so the page visibly reads them from disk."""
    snapshot = install_in_hf_cache(nuimages_checkpoint, offline, TIME_WEATHER_REPO)
    config_file = snapshot / "generation_config.json"
    config = json.loads(config_file.read_text())
    config.update(num_inference_steps=30, cfg_scale=6.5)
    config_file.write_text(json.dumps(config))
    return snapshot


def handler(blocks: gr.Blocks, name: str, events: int = 1):
    """The page's registered event (function, inputs, outputs) whose function is called ``name`` (the first of
    ``events`` events that run it)."""
    matches = [f for f in blocks.fns.values() if f.name == name]
    assert len(matches) == events, [f.name for f in blocks.fns.values()]
    return matches[0]


def update_value(update, key):
    assert isinstance(update, dict) and update.get("__type__") == "update", update
    return update[key]


def test_checkpoint_switch_updates_classes_controls_steps_and_cfg(time_weather_on_disk):
    blocks = build(DemoContext(DEMO, ModelPool(budget_bytes=10**9)))
    event = handler(blocks, "on_checkpoint")
    assert [c.label for c in event.inputs[:3]] == ["Checkpoint", LAYOUT_LABEL, "Sampler"]
    assert event.inputs[3].elem_id == "geo-layout-editor"  # what it shows while the layout text cannot be read
    layout_box, editor, camera, timeofday, weather, steps, cfg, sampler, prompt, _ = event.outputs
    assert layout_box.elem_id == "geo-layout-json"
    weights_view = handler(blocks, "redraw_messages")  # the banner follows the checkpoint's state (ui.WeightsView)
    assert [c.label for c in weights_view.inputs] == ["Checkpoint"]
    assert sampler.elem_id == "geo-sampler" and sampler.value == "default"
    assert sampler.choices == [("Official (PNDM, 30 steps)", "default"), ("Fast sampling (DPM-Solver++, 20 steps)",
                                                                          "fast")]
    assert editor.elem_id == "geo-layout-editor" and prompt.elem_id == "geo-prompt"
    assert [camera.label, timeofday.label, weather.label, steps.label, cfg.label] == [
        "Camera view", "Time of day", "Weather", "Steps", "Guidance scale (cfg)"]
    # The only checkpoint on disk is the default, and the page starts with its on-disk generation config.
    assert (steps.value, cfg.value, camera.visible, timeofday.visible, weather.visible) == (30, 6.5, True, True, True)
    assert json.loads(editor.value)["classes"] == NUIMAGES

    text = json.dumps({"camera": "back", "timeofday": "night", "weather": "rain",
                       "bbox": [["car", 0.1, 0.2, 0.5, 0.6], ["bus", 0.6, 0.3, 0.9, 0.8]]})
    # checkpoint: classes, camera shown, time/weather shown, steps, cfg, prompt start, the notice (None: no notice)
    expected = [
        ("nuimages-256x256", NUIMAGES, True, False, 100, 5.0, "A driving scene image of back camera with car <l",
         "The geodiffusion weights &#x27;nuimages-256x256&#x27;"),  # HTML-escaped in the banner
        ("coco-stuff-512x512", list(COCO_STUFF_CLASSES), False, False, 50, 4.5, "An image with car <l",
         "The geodiffusion weights &#x27;coco-stuff-512x512&#x27;"),  # HTML-escaped in the banner
        # On disk: its generation_config.json (4x4 grid, 30 steps, cfg 6.5), and no notice.
        (TIME_WEATHER, NUIMAGES, True, True, 30, 6.5,
         "A night rain driving scene image of back camera with car <l4> <l10> bus <l6> <l11>", None),
        ("coco-stuff-256x256", list(COCO_STUFF_CLASSES), False, False, 50, 4.0, "An image with car <l",
         "The geodiffusion weights &#x27;coco-stuff-256x256&#x27;"),  # HTML-escaped in the banner
        ("nuimages-512x512", NUIMAGES, True, False, 100, 5.0, "A driving scene image of back camera with car <l",
         "The geodiffusion weights &#x27;nuimages-512x512&#x27;"),  # HTML-escaped in the banner
    ]
    assert len(COCO_STUFF_CLASSES) == 172 and "sky-other" in COCO_STUFF_CLASSES
    for name, classes, shows_camera, shows_time_weather, n_steps, scale, prompt_start, notice in expected:
        written, *out = event.fn(name, text, "default")
        assert len(out) + 1 == len(event.outputs)
        value = json.loads(out[0])
        assert value["classes"] == classes, name
        assert value["layout"]["bbox"] == json.loads(text)["bbox"], name  # the boxes survive the switch
        # the layout keeps only the fields the checkpoint reads: COCO-Stuff has no camera, time or weather
        kept = [key for key in ("camera", "timeofday", "weather") if key in json.loads(written)]
        assert kept == ["camera"] * shows_camera + ["timeofday", "weather"] * shows_time_weather, name
        assert json.loads(written)["bbox"] == json.loads(text)["bbox"] and value["layout"] == json.loads(written)
        assert update_value(out[1], "visible") is shows_camera, name
        assert update_value(out[2], "visible") is shows_time_weather, name
        assert update_value(out[3], "visible") is shows_time_weather, name
        assert update_value(out[4], "value") == n_steps, name
        assert update_value(out[5], "value") == scale, name
        official = "DPM-Solver++" if name.startswith("coco") else "PNDM"
        assert update_value(out[6], "choices")[0] == (f"Official ({official}, {n_steps} steps)", "default"), name
        assert f"than the official {n_steps} {official} steps" in update_value(out[6], "info"), name
        assert update_value(event.fn(name, text, "fast")[5], "value") == 20, name  # fast sampling's steps
        assert out[7].startswith(prompt_start), (name, out[7])
        banner, = weights_view.fn(name)
        if notice is None:
            assert banner == "" and out[8].startswith("The prompt uses "), name
        else:
            assert notice in banner and "are not on this server" in banner, name
            assert "demohub download" not in banner, "a visitor of a public hub reads no command"
            assert out[8] == "", name  # no tokenizer on disk: no token count


def test_the_sampler_choice_moves_default_steps_only(time_weather_on_disk):
    """Choosing fast sampling sets Steps to 20 while they hold the checkpoint's default (30 on disk here), and
    back; steps a person typed stay."""
    blocks = build(DemoContext(DEMO, ModelPool(budget_bytes=10**9)))
    event = handler(blocks, "on_sampler")
    assert [c.label for c in event.inputs] == ["Sampler", "Steps", "Checkpoint"]
    assert [c.label for c in event.outputs] == ["Steps"]
    assert event.fn("fast", 30, TIME_WEATHER) == 20 and event.fn("default", 20, TIME_WEATHER) == 30
    assert event.fn("fast", 42, TIME_WEATHER) == 42 and event.fn("default", 42, TIME_WEATHER) == 42
    assert event.fn("fast", 100, "nuimages-256x256") == 20 and event.fn("fast", 50, "coco-stuff-256x256") == 20
    assert event.fn("default", 20, "coco-stuff-512x512") == 50


def test_coco_export_of_a_nuimages_layout(tmp_path):
    layout = parse_layout({"camera": "back left", "timeofday": "night", "weather": "rain", "bbox": [
        ["car", 0.1, 0.2, 0.5, 0.6], ["construction vehicle", 0.55, 0.25, 0.95, 0.75],
        ["Traffic Cone", 0.05, 0.7, 0.12, 0.9], ["pedestrian", 0.6, 0.5, 0.65, 0.8]]}, KNOWN_CONFIGS[TIME_WEATHER])
    rng = np.random.default_rng(0)
    images = [Image.fromarray(rng.integers(0, 256, (90, 160, 3), dtype=np.uint8)) for _ in range(2)]  # 160 wide
    path = export_coco_zip(images, layout, "nuimages", tmp_path / "nu.zip", prompt="the prompt")
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        coco = json.loads(zf.read("annotations/instances.json"))
        files = {n: np.asarray(Image.open(io.BytesIO(zf.read(n)))) for n in names if n.startswith("images/")}
    assert names == {"annotations/instances.json", "images/000001.png", "images/000002.png"}
    assert [(c["id"], c["name"]) for c in coco["categories"]] == list(enumerate(NUIMAGES, start=1))
    assert coco["images"] == [{"id": 1, "file_name": "000001.png", "width": 160, "height": 90},
                              {"id": 2, "file_name": "000002.png", "width": 160, "height": 90}]
    for record, image in zip(coco["images"], images, strict=True):
        assert np.array_equal(files[f"images/{record['file_name']}"], np.asarray(image))
    # x = x1 * 160, y = y1 * 90, w = (x2 - x1) * 160, h = (y2 - y1) * 90
    pixel_boxes = [[16, 18, 64, 36], [88, 22.5, 64, 45], [8, 63, 11.2, 18], [96, 45, 8, 27]]
    labels = ["car", "construction_vehicle", "traffic_cone", "pedestrian"]  # class names, not the prompt words
    by_id = {c["id"]: c["name"] for c in coco["categories"]}
    annotations = coco["annotations"]
    assert [a["id"] for a in annotations] == list(range(1, 9))
    assert [a["image_id"] for a in annotations] == [1] * 4 + [2] * 4
    for i, ann in enumerate(annotations):
        assert ann["bbox"] == pytest.approx(pixel_boxes[i % 4], abs=0.01)
        assert ann["area"] == pytest.approx(pixel_boxes[i % 4][2] * pixel_boxes[i % 4][3], abs=0.01)
        assert by_id[ann["category_id"]] == labels[i % 4] and ann["iscrowd"] == 0
    assert [a["category_id"] for a in annotations[:4]] == [1, 5, 9, 8]
    info = coco["info"]
    assert info["prompt"] == "the prompt" and "nuimages" in info["description"]
    assert {k: info["layout"][k] for k in ("camera", "timeofday", "weather")} == {
        "camera": "back left", "timeofday": "night", "weather": "rain"}
    assert [b[0] for b in info["layout"]["bbox"]] == labels


def test_export_of_images_generated_on_the_page(time_weather_on_disk):
    ctx = DemoContext(DEMO, ModelPool(budget_bytes=10**9))
    blocks = build(ctx)
    generate, export = handler(blocks, "generate_on_page"), handler(blocks, "export_dataset")
    gallery_items = handler(blocks, "gallery_items")  # when "show boxes" changes
    show_images = handler(blocks, "show_images")  # after generate: the gallery appears, export becomes possible
    assert list(export.inputs) == [generate.outputs[2]] == [gallery_items.inputs[0]] == [show_images.inputs[0]]
    gallery_box, export_button = show_images.outputs
    assert not gallery_box.visible and not export_button.interactive, "no empty gallery, no export of nothing"
    assert show_images.fn(None, True)[1]["interactive"] is False
    with pytest.raises(gr.Error, match="Generate images first"):
        export.fn(None)

    text = json.dumps({"camera": "front right", "timeofday": "night", "weather": "rain",
                       "bbox": [["car", 0.1, 0.2, 0.5, 0.6], ["traffic cone", 0.7, 0.75, 0.8, 0.95]]})
    assert [c.label for c in generate.inputs][-1] == "Sampler"
    prompt, notes, state = generate.fn(text, TIME_WEATHER, 7, 2, 5.0, 2, None)
    shown, export_state = show_images.fn(state, False)
    assert shown["visible"] and export_state["interactive"]
    gallery = shown["value"]
    assert len(gallery) == len(gallery_items.fn(state, False))
    assert prompt == "A night rain driving scene image of front right camera with car <l4> <l10> cone <l10> <l14>"
    assert notes == "2 image(s), 64x64, 2 steps, cfg 5.0, seed 7, PNDM (the checkpoint's sampler)."
    _, fast_notes, fast_state = generate.fn(text, TIME_WEATHER, 7, 2, 5.0, 1, None, "fast")
    assert fast_notes == "1 image(s), 64x64, 2 steps, cfg 5.0, seed 7, fast sampling (DPM-Solver++)."
    assert fast_state.output.scheduler == "DPMSolverMultistepScheduler"
    assert len(state.output.images) == 2 and state.dataset == "nuimages"
    generated = [np.asarray(im.convert("RGB")) for im in state.output.images]
    assert not np.array_equal(generated[0], generated[1])  # two different samples, so a mix-up would show
    assert all(np.array_equal(np.asarray(im), g) for (im, _), g in zip(gallery, generated, strict=True))
    again = GeoDiffusionPage(ctx).generate(text, TIME_WEATHER, seed=7, steps=2, cfg=5.0, num_images=2)
    assert all(np.array_equal(np.asarray(im.convert("RGB")), g) for im, g in zip(again.images, generated, strict=True))

    exported = export.fn(state)
    path = exported["value"]
    assert exported["visible"], "the file appears only once there is one"
    assert path.endswith("geodiffusion_coco.zip")
    with zipfile.ZipFile(path) as zf:
        coco = json.loads(zf.read("annotations/instances.json"))
        pngs = {n: Image.open(io.BytesIO(zf.read(n))) for n in zf.namelist() if n.startswith("images/")}
    assert sorted(pngs) == [f"images/{r['file_name']}" for r in coco["images"]] == [
        "images/000001.png", "images/000002.png"]
    for record, pixels in zip(coco["images"], generated, strict=True):
        png = pngs[f"images/{record['file_name']}"]
        assert png.format == "PNG" and png.size == (64, 64) == (record["width"], record["height"])
        assert np.array_equal(np.asarray(png.convert("RGB")), pixels)  # the generated pixels, no boxes drawn on
    boxed = gallery_items.fn(state, True)
    assert not np.array_equal(np.asarray(boxed[0][0]), generated[0])  # (what the boxes overlay would look like)
    assert coco["info"]["prompt"] == prompt
    assert [(c["id"], c["name"]) for c in coco["categories"]] == list(enumerate(NUIMAGES, start=1))
    by_id = {c["id"]: c["name"] for c in coco["categories"]}
    assert [(a["image_id"], by_id[a["category_id"]]) for a in coco["annotations"]] == [
        (1, "car"), (1, "traffic_cone"), (2, "car"), (2, "traffic_cone")]
    assert coco["annotations"][0]["bbox"] == pytest.approx([6.4, 12.8, 25.6, 25.6], abs=0.01)
    assert coco["annotations"][1]["bbox"] == pytest.approx([44.8, 48.0, 6.4, 12.8], abs=0.01)
    assert {k: coco["info"]["layout"][k] for k in ("camera", "timeofday", "weather")} == {
        "camera": "front right", "timeofday": "night", "weather": "rain"}
