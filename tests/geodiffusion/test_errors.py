"""Bad input: each case is a UserInputError whose sentence says what to change (nothing loads first)."""

from __future__ import annotations

import pytest

from apps.geodiffusion.actions import GeoDiffusionPage
from apps.geodiffusion.layout import KNOWN_CONFIGS, encode_prompt, parse_layout
from shared.errors import UserInputError

NU = KNOWN_CONFIGS["nuimages-256x256"]
TW = KNOWN_CONFIGS["nuimages-time-weather-512x512"]
COCO = KNOWN_CONFIGS["coco-stuff-256x256"]


def test_empty_layout_is_allowed():
    assert parse_layout('{"bbox": []}', COCO).boxes == ()
    assert parse_layout("", COCO).boxes == ()
    assert encode_prompt({}, COCO) == "An image with "


@pytest.mark.parametrize(("layout", "config", "match"), [
    ('{"bbox": [["car", 0.2, 0.2, 0.2, 0.5]]}', NU, r"Box 1 \(car\).*x2 > x1 and y2 > y1"),  # zero width
    ('{"bbox": [["car", 0.2, 0.5, 0.6, 0.5]]}', NU, r"x2 > x1 and y2 > y1"),  # zero height
    ('{"bbox": [["car", 0.1, 0.1, 0.2, 0.2], ["bus", 0.6, 0.2, 0.3, 0.5]]}', NU, r"Box 2 \(bus\).*right of"),
    ('{"bbox": [["car", 0.1, 0.7, 0.3, 0.2]]}', NU, r"below the top-left"),  # inverted vertically
    ('{"bbox": [["car", -0.1, 0.1, 0.3, 0.2]]}', NU, r"between 0 and 1"),
    ('{"bbox": [["car", 0.1, 0.1, 1.2, 0.2]]}', NU, r"between 0 and 1"),
    ('{"bbox": [["car", 0.1, 0.1, NaN, 0.2]]}', NU, r"between 0 and 1"),
    ('{"bbox": [["spaceship", 0.1, 0.1, 0.3, 0.2]]}', NU, r"'spaceship'.*nuimages.*10 classes"),
    ('{"bbox": [["pedestrian", 0.1, 0.1, 0.3, 0.2]]}', COCO, r"coco_stuff checkpoint does not know"),
    ('{"bbox": [["car", "left", 0.1, 0.3, 0.2]]}', NU, r"coordinates must be numbers"),
    ('{"bbox": [["car", 0.1, 0.3, 0.2]]}', NU, r"\[label, x1, y1, x2, y2\]"),
    ('{"bbox": "car"}', NU, r'"bbox" must be a list'),
    ('{"bbox": [["car", 0.1, 0.1, 0.3, 0.2]', NU, r"not valid JSON.*line 1"),
    ("car 0.1 0.1 0.3 0.2", NU, r"not valid JSON"),
    ('"just text"', NU, r"must be a JSON object"),
    ('{"camera": "sideways", "bbox": []}', NU, r"camera must be one of front, front left"),
    ('{"camera": "front", "weather": "snow", "bbox": []}', TW, r"weather must be one of sunny, rain"),
    ('{"camera": "front", "timeofday": "dusk", "bbox": []}', TW, r"timeofday must be one of daytime, night"),
    ('{"camera": "front", "wether": "rain", "bbox": []}', TW, r"Unknown layout field\(s\) 'wether'"),
    ('{"bbox": [], "pad": "' + "x" * 30_000 + '"}', NU, r"30,0\d\d characters long"),
])
def test_bad_layouts(layout, config, match):
    with pytest.raises(UserInputError, match=match):
        parse_layout(layout, config)


def test_too_many_boxes_per_checkpoint():
    box = ["car", 0.1, 0.1, 0.3, 0.2]
    assert len(parse_layout({"bbox": [box] * 22}, NU).boxes) == 22
    with pytest.raises(UserInputError, match="at most 22 boxes.*has 23; remove 1"):
        parse_layout({"bbox": [box] * 23}, NU)
    with pytest.raises(UserInputError, match="at most 18 boxes.*has 19"):
        parse_layout({"bbox": [box] * 19}, COCO)


@pytest.mark.parametrize(("args", "match"), [
    (("{}", "coco-stuff-256x256", 0, 201, 4.0), "Steps must be a whole number between 1 and 200; got 201"),
    (("{}", "coco-stuff-256x256", 0, 50, 99), "guidance scale"),
    (("{}", "coco-stuff-256x256", -1, 50, 4.0),
     "seed must be a whole number between 0 and 9,223,372,036,854,775,807; got -1"),
    (("{}", "coco-stuff-256x256", 2.5, 50, 4.0), "seed must be a whole number"),
    (("{}", "no-such-checkpoint", 0, 50, 4.0), "Unknown weight set 'no-such-checkpoint'"),
    (('{"bbox": [["car", 0.5, 0.5, 0.4, 0.6]]}', "nuimages-256x256", 0, 50, 4.0), "x2 > x1"),
])
def test_page_rejects_bad_input_before_loading_weights(offline_page, args, match):
    with pytest.raises(UserInputError, match=match):
        offline_page.generate(*args)


def test_missing_weights_say_so_and_tell_the_operator_how_to_get_them(offline_page):
    import dataclasses

    from shared.errors import WeightsUnavailable

    with pytest.raises(WeightsUnavailable) as refused:
        offline_page.generate('{"bbox": []}', "coco-stuff-256x256", 0, 2, 4.0)
    assert str(refused.value) == "The geodiffusion weights 'coco-stuff-256x256' (4.30 GB) are not on this server."
    operator = GeoDiffusionPage(dataclasses.replace(offline_page.ctx, operator_here=True))  # a local-only hub
    with pytest.raises(WeightsUnavailable, match="demohub download geodiffusion --weights coco-stuff-256x256"):
        operator.generate('{"bbox": []}', "coco-stuff-256x256", 0, 2, 4.0)
