"""apps/ui.py owns the look: every banner kind styled in light and dark, icons without emoji fonts, one stylesheet
for the hub and for single-demo Spaces."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

import apps
from apps import hub, spaces, ui


@pytest.mark.parametrize("kind", ui.NOTICE_KINDS)
def test_every_banner_kind_has_a_light_and_a_dark_style(kind):
    assert re.search(rf"^\.demohub-{kind} \{{[^}}]*background", ui.CSS, re.M), kind
    assert re.search(rf"^\.dark \.demohub-{kind} \{{[^}}]*background", ui.CSS, re.M), kind
    assert f'class="demohub-notice demohub-{kind}"' in ui.notice("text", kind)


def test_an_unknown_banner_kind_is_refused_not_drawn_unstyled():
    with pytest.raises(ValueError, match="not one of"):
        ui.notice("text", "warn")


def test_banner_text_is_escaped():
    assert "<script>" not in ui.notice("<script>alert(1)</script>")


@pytest.mark.parametrize("demo", apps.DEMOS, ids=lambda d: d.id)
def test_demo_icons_are_ascii_svg(demo):
    icon = ui.demo_icon(demo)
    root = ET.fromstring(icon)
    assert root.tag == "svg" and root.find("text").text.isascii() and root.find("text").text.strip()
    assert icon.isascii(), "no emoji: Debian Chromium has no emoji font"


def _texts(blocks) -> str:
    return str(blocks.config)


def test_hub_titles_routes_and_cards_carry_no_emoji():
    blocks = hub.build_hub()
    emoji = re.compile("[\U0001F300-\U0001FAFF\u2600-\u27BF\u25B6]")
    found = emoji.findall(_texts(blocks))
    assert found == [], f"emoji render as empty boxes without an emoji font: {found[:5]}"
    assert all(ui.demo_icon(d) in _texts(blocks).replace('\\"', '"') for d in apps.DEMOS)


def test_hub_and_single_demo_spaces_launch_with_the_same_look(monkeypatch):
    seen = []
    monkeypatch.setattr(hub.serving, "launch", lambda blocks, settings, **kw: seen.append(kw))
    monkeypatch.setattr(spaces, "space_settings", lambda: None)
    hub.launch(prevent_thread_lock=True)
    spaces.launch_demo_app(blocks=None)
    assert len(seen) == 2 and all(kw["css"] == ui.CSS for kw in seen)
    assert all(type(kw["theme"]) is type(ui.theme()) for kw in seen)
