"""encode_prompt against hand-computed prompts (fact sheet's worked example, half-even rounding, templates)."""

from __future__ import annotations

import json

import pytest

from apps.geodiffusion.layout import (
    CLASSES,
    COCO_STUFF_CLASSES,
    KNOWN_CONFIGS,
    GenerationConfig,
    encode_prompt,
    location_token,
    parse_layout,
)
from shared.errors import UserInputError

NU256 = KNOWN_CONFIGS["nuimages-256x256"]
NU512 = KNOWN_CONFIGS["nuimages-512x512"]
TW512 = KNOWN_CONFIGS["nuimages-time-weather-512x512"]
COCO256 = KNOWN_CONFIGS["coco-stuff-256x256"]
COCO512 = KNOWN_CONFIGS["coco-stuff-512x512"]
OFFICIAL_NUIMAGES = {"camera": "front", "bbox": [
    ["car", 0.756875, 0.4622, 0.90375, 0.5844], ["car", 0.47625, 0.4822, 0.691875, 0.8011],
    ["car", 0.0, 0.4933, 0.223125, 0.9267], ["car", 0.273125, 0.4511, 0.47375, 0.6444],
    ["car", 0.7125, 0.6689, 0.999375, 1.0]]}
OFFICIAL_COCO = {"bbox": [["truck", 0.1321, 0.3914, 0.7247, 0.7849], ["house", 0.0, 0.06875, 0.9046875, 0.5458],
                          ["road", 0.0, 0.6, 1.0, 1.0], ["snow", 0.0, 0.4792, 1.0, 0.89375],
                          ["tree", 0.0, 0.0, 1.0, 0.56875]]}


def grid_config(n: int, dataset: str = "coco_stuff") -> GenerationConfig:
    template = "An image with {bbox}" if dataset == "coco_stuff" else \
        "A driving scene image of {camera} camera with {bbox}"
    return GenerationConfig(dataset, template, (n, n), 4.0, 50, 18, 64, 64)


def test_worked_example_first_box_on_both_grids():
    # Fact sheet: ["car", 0.756875, 0.4622, 0.90375, 0.5844] -> <l30401> <l38374> (256) and <l121219> <l153550> (512).
    box = {"camera": "front", "bbox": [OFFICIAL_NUIMAGES["bbox"][0]]}
    assert encode_prompt(box, NU256) == "A driving scene image of front camera with car <l30401> <l38374>"
    assert encode_prompt(box, NU512) == "A driving scene image of front camera with car <l121219> <l153550>"


def test_official_nuimages_layout_full_prompt():
    # Each corner by hand: e.g. box 2 x1 = 0.47625*255 = 121.4 -> 121, y1 = 0.4822*255 = 122.96 -> 123: 123*256+121.
    assert encode_prompt(OFFICIAL_NUIMAGES, NU256) == (
        "A driving scene image of front camera with car <l30401> <l38374> car <l31609> <l52400> "
        "car <l32256> <l60473> car <l29510> <l42105> car <l43958> <l65535>")


def test_official_coco_layout_same_tokens_on_both_coco_checkpoints():
    # The COCO-Stuff 512x512 checkpoint keeps the 256x256 grid.
    expected = ("An image with truck <l25634> <l51385> house <l4608> <l35815> road <l39168> <l65535> "
                "snow <l31232> <l58623> tree <l0> <l37375>")
    assert encode_prompt(OFFICIAL_COCO, COCO256) == expected
    assert encode_prompt(OFFICIAL_COCO, COCO512) == expected


def test_round_half_even_on_small_grids():
    # 3x3: x=0.25 -> 0.5 -> 0 and x=0.75 -> 1.5 -> 2 (fact sheet).
    assert location_token(0.25, 0.25, (3, 3)) == "<l0>"
    assert location_token(0.75, 0.75, (3, 3)) == "<l8>"
    # 5x5: 0.375*4 = 1.5 -> 2, 0.625*4 = 2.5 -> 2 (half-even, not 3), 0.125*4 = 0.5 -> 0, 0.875*4 = 3.5 -> 4.
    assert encode_prompt({"bbox": [["car", 0.375, 0.125, 0.625, 0.875]]}, grid_config(5)) == \
        "An image with car <l2> <l22>"


def test_row_major_on_rectangular_grid():
    config = GenerationConfig("coco_stuff", "An image with {bbox}", (4, 2), 4.0, 50, 18, 64, 64)
    # x: 1.0*3 = 3, y: 1.0*1 = 1 -> 1*4 + 3 = 7; x 0.34*3 = 1.02 -> 1, y 0 -> 1.
    assert encode_prompt({"bbox": [["cat", 0.34, 0.0, 1.0, 1.0]]}, config) == "An image with cat <l1> <l7>"


def test_prompt_spellings_of_labels():
    nu = {"camera": "back left", "bbox": [["construction_vehicle", 0, 0, 1, 1], ["traffic_cone", 0, 0, 1, 1]]}
    assert encode_prompt(nu, grid_config(2, "nuimages")) == \
        "A driving scene image of back left camera with construction <l0> <l3> cone <l0> <l3>"
    coco = {"bbox": [["sky-other", 0, 0, 1, 1], ["traffic light", 0, 0, 1, 1]]}
    assert encode_prompt(coco, grid_config(2)) == "An image with sky other <l0> <l3> traffic light <l0> <l3>"


def test_prompt_spellings_are_accepted_as_labels():
    layout = parse_layout({"bbox": [["Sky Other", 0, 0, 1, 1], ["hot dog", 0, 0, 1, 1]]}, grid_config(2))
    assert [b.label for b in layout.boxes] == ["sky-other", "hot dog"]
    nu = parse_layout({"bbox": [["construction", 0, 0, 1, 1], ["cone", 0, 0, 1, 1]]}, grid_config(2, "nuimages"))
    assert [b.label for b in nu.boxes] == ["construction_vehicle", "traffic_cone"]


def test_label_spellings_are_those_aliases_documents():
    """The class name, its prompt text, or its own separator written as a space, in any case; nothing else."""
    nu, coco = grid_config(2, "nuimages"), grid_config(2)
    spellings = ["traffic_cone", "Cone", "TRAFFIC CONE", " traffic cone "]
    layout = parse_layout({"bbox": [[s, 0, 0, 1, 1] for s in spellings]}, nu)
    assert [b.label for b in layout.boxes] == ["traffic_cone"] * 4
    assert parse_layout({"bbox": [["Sky Other", 0, 0, 1, 1]]}, coco).boxes[0].label == "sky-other"
    for label, config in (("traffic-cone", nu), ("sky_other", coco), ("traffic  cone", nu)):
        with pytest.raises(UserInputError, match="does not know"):
            parse_layout({"bbox": [[label, 0, 0, 1, 1]]}, config)


def test_time_weather_template():
    layout = {"camera": "front right", "timeofday": "night", "weather": "rain", "bbox": [["bus", 0, 0, 0.5, 0.5]]}
    # 0.5 * 511 = 255.5 -> 256 (half-even): 256 * 512 + 256 = 131328.
    assert encode_prompt(layout, TW512) == \
        "A night rain driving scene image of front right camera with bus <l0> <l131328>"
    layout.pop("timeofday"), layout.pop("weather")
    assert encode_prompt(layout, TW512).startswith("A daytime sunny driving scene image of front right camera")


def test_empty_layout_gives_template_without_boxes():
    assert encode_prompt({"bbox": []}, COCO256) == "An image with "
    assert encode_prompt("", NU256) == "A driving scene image of front camera with "


def test_shuffle_none_keeps_order_and_seed_is_reproducible():
    config = grid_config(4)
    layout = {"bbox": [[name, 0, 0, 1, 1] for name in ("cat", "dog", "bird", "horse", "sheep", "cow")]}
    assert encode_prompt(layout, config) == "An image with " + " ".join(
        f"{n} <l0> <l15>" for n in ("cat", "dog", "bird", "horse", "sheep", "cow"))
    a = encode_prompt(layout, config, shuffle_seed=3)
    assert a == encode_prompt(layout, config, shuffle_seed=3)
    assert a != encode_prompt(layout, config)
    assert sorted(a.removeprefix("An image with ").split(" <l0> <l15>")) == \
        sorted(encode_prompt(layout, config).removeprefix("An image with ").split(" <l0> <l15>"))


def test_class_vocabularies_and_known_configs():
    assert len(CLASSES["nuimages"]) == 10
    assert len(COCO_STUFF_CLASSES) == 172 and len(set(COCO_STUFF_CLASSES)) == 172
    assert (NU256.num_location_tokens, NU512.num_location_tokens, COCO512.num_location_tokens) == (65536, 262144, 65536)
    assert (NU256.max_num_bbox, COCO256.max_num_bbox) == (22, 18)
    assert (COCO256.cfg_scale, COCO512.cfg_scale, NU256.cfg_scale) == (4.0, 4.5, 5.0)
    assert (COCO512.width, COCO512.num_bucket_per_side) == (512, (256, 256))


def test_generation_config_from_json_accepts_the_released_fields(tmp_path):
    fields = {"dataset": "nuimages", "num_bucket_per_side": [256, 256], "width": 256, "height": 256,
              "prompt_template": "A driving scene image of {camera} camera with {bbox}", "cfg_scale": 5.0,
              "num_inference_steps": 100, "max_num_bbox": 22}
    (tmp_path / "generation_config.json").write_text(json.dumps(fields))
    assert GenerationConfig.from_file(tmp_path / "generation_config.json") == NU256


@pytest.mark.parametrize("layout", [OFFICIAL_NUIMAGES, json.dumps(OFFICIAL_NUIMAGES)])
def test_layout_round_trips_through_official_format(layout):
    parsed = parse_layout(layout, NU256)
    assert parsed.to_dict()["bbox"] == OFFICIAL_NUIMAGES["bbox"]
    assert parse_layout(parsed.to_json(), NU256) == parsed
