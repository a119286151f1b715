"""apps/ui.py owns the look: every banner kind styled in light and dark, icons without emoji fonts, one stylesheet
for the hub and for single-demo Spaces."""

from __future__ import annotations

import dataclasses
import re
import xml.etree.ElementTree as ET

import pytest

import apps
from apps import hub, spaces, ui, views

SVG = "http://www.w3.org/2000/svg"


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
def test_each_card_pictures_the_demo_with_its_own_editor_or_examples(demo):
    """A demo that declares a picture: the card shows it (the first example layout, molecule, example set or image);
    one that declares none: its title, drawn (below)."""
    picture = views.preview_of(demo)
    if not demo.preview:
        assert picture == views.title_picture(demo)
        return
    assert picture == demo.preview_html() and picture.startswith(("<svg", "<img", "<div"))
    if picture.startswith("<svg"):
        ET.fromstring(picture)  # well-formed, as the browser needs it inline
    if demo.id == "tag2text":  # the first example image, inline (a data URL: it shows on both hubs)
        import base64
        from pathlib import Path

        from apps.tag2text.actions import example_images

        data = picture.split('src="data:image/png;base64,', 1)[1].split('"', 1)[0]
        assert base64.b64decode(data) == Path(example_images()[0]).read_bytes()
        return
    expected = {"geodiffusion": "car", "molm3d": "<svg", "prax": "12ab", "mert": "<rect"}.get(demo.id, "")
    assert expected in picture


def test_a_demo_that_declares_no_picture_gets_its_title_drawn_and_escaped():
    title = 'Fo<script>alert("x")</script> & Co: what `it` *does*'
    demo = dataclasses.replace(apps.DEMOS[0], preview="", title=title, space_colours=("pink", "no-such-colour"))
    picture = views.preview_of(demo)
    svg = ET.fromstring(picture)  # well-formed, as the browser needs it inline
    assert svg.tag == f"{{{SVG}}}svg" and svg.get("aria-label") == title
    assert [t.text for t in svg.iter(f"{{{SVG}}}text")] == [demo.name, "what `it` *does*"]
    assert "<script>" not in picture and "`" not in picture
    assert views.TINTS["pink"] in picture and views.TINTS["gray"] in picture, "its Space's colours, else grey"
    assert hub.card_html(hub.PageResult(demo, "ready")).count("<svg") == 1, "the Gradio hub's card draws it"
    without_colon = ET.fromstring(views.title_picture(dataclasses.replace(demo, title="Solo")))
    assert [t.text for t in without_colon.iter(f"{{{SVG}}}text")] == ["Solo"]


def test_cards_say_what_runs_on_this_server_now(monkeypatch, tmp_path):
    from shared import weights

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    states = {d.id: weights.summary(d) for d in apps.DEMOS}
    assert states["prax"] == "Runs here now, on tiny-pragmatic, tiny-literal."  # bundled
    assert states["geodiffusion"] == ("Runs here now: layouts and the prompt the model reads; the model "
                                      "needs its weights (from 4.30 GB), not on this server yet.")
    assert states["molm3d"].startswith("Runs here now: the conformer, its 2D and 3D views and the RDKit table;")
    assert states["tag2text"] == "The model needs its weights (4.48 GB), not on this server yet."


def _texts(blocks) -> str:
    return str(blocks.config)


def test_hub_titles_routes_and_cards_carry_no_emoji():
    blocks = hub.build_hub()
    emoji = re.compile("[\U0001F300-\U0001FAFF\u2600-\u27BF\u25B6]")
    found = emoji.findall(_texts(blocks))
    assert found == [], f"emoji render as empty boxes without an emoji font: {found[:5]}"
    cards = next(str(c["props"]["value"]) for c in blocks.config["components"]
                 if "demo-cards" in str(c.get("props", {}).get("value", "")))
    for demo in apps.DEMOS:  # each card opens with its picture, linked to its page
        assert re.search(f'<a class="demo-preview" href="/{demo.id}"[^>]*>\\s*<(svg|img|div)', cards), demo.id


def test_hub_and_single_demo_spaces_launch_with_the_same_look(monkeypatch):
    seen = []
    monkeypatch.setattr(hub.serving, "launch", lambda blocks, settings, **kw: seen.append(kw))
    monkeypatch.setattr(spaces, "space_settings", lambda: None)
    hub.launch(prevent_thread_lock=True)
    spaces.launch_demo_app(blocks=None)
    assert len(seen) == 2 and all(kw["css"] == ui.CSS for kw in seen)
    assert all(type(kw["theme"]) is type(ui.theme()) for kw in seen)


@pytest.mark.parametrize("demo", apps.DEMOS, ids=lambda d: d.id)
def test_embed_snippets_name_the_page_address_they_are_given_and_its_embedded_view(demo):
    snippets = ui.embed_snippets(demo, f"https://lab.example/demos/{demo.id}")
    iframe = snippets["iframe"]
    assert f'src="https://lab.example/demos/{demo.id}?{ui.EMBED_PARAMETER}"' in iframe
    assert f'height="{ui.EMBED_HEIGHT}"' in iframe, "one starting height for every demo, then the page's own"
    assert "localhost" not in iframe and "hf.space" not in iframe, "no address the visitor did not reach"
    # the iframe's height follows only its own frame's message, within bounds
    assert "event.source !== frame.contentWindow" in iframe and str(ui.MAX_EMBED_HEIGHT) in iframe
    assert f'id="demohub-{demo.id}"' in iframe and f'getElementById("demohub-{demo.id}")' in iframe
    assert f'<gradio-app src="https://lab.example/demos/{demo.id}">' in snippets["web_component"]


def test_the_web_component_names_the_space_only_when_the_hub_knows_it():
    demo = apps.get_demo("prax")
    assert "space=" not in ui.embed_snippets(demo, "https://lab.example/prax")["web_component"]
    on_space = ui.embed_snippets(demo, "https://lab-prax.hf.space/", space_id="lab/prax")
    assert '<gradio-app space="lab/prax">' in on_space["web_component"]
    assert 'src="https://lab-prax.hf.space/?embed=1"' in on_space["iframe"]


def test_a_page_address_cannot_break_out_of_the_snippet_markup():
    iframe = ui.embed_snippets(apps.get_demo("prax"), 'https://x.example/"><script>alert(1)</script>')["iframe"]
    assert "<script>alert(1)" not in iframe and "&quot;&gt;&lt;script&gt;" in iframe


def test_the_hub_navigation_names_each_demo_by_its_paper():
    pages = {route: name for route, name, _ in hub.build_hub().pages}
    assert pages == {"": "Home", **{d.id: d.name for d in apps.DEMOS}}
    assert list(pages)[1:] == sorted(d.id for d in apps.DEMOS)  # the registry's rule: by id, whatever demos there are


HOSTS = [
    ("127.0.0.1", "on this machine"), ("localhost", "on this machine"), ("[::1]", "on this machine"),
    ("lab.localhost", "on this machine"), ("0.0.0.0", "on this machine"),
    ("10.1.2.3", "inside this local network"), ("192.168.0.12", "inside this local network"),
    ("172.20.0.5", "inside this local network"), ("fd12:3456::1", "inside this local network"),
    ("gpu-box", "inside this local network"), ("gpu-box.local", "inside this local network"),
    ("172.32.0.1", ""), ("8.8.8.8", ""), ("demos.example.org", ""), ("lab-prax.hf.space", ""),
]


@pytest.mark.parametrize("host, reach", HOSTS)
def test_the_streamlit_pages_know_the_same_addresses(host, reach):
    """The Streamlit pages decide on the server (the request's Host) by the same rule as the browser's below."""
    from apps import views

    assert views.local_reach(host) == reach


@pytest.mark.parametrize("host, reach", HOSTS)
def test_the_embed_section_knows_which_addresses_only_some_can_reach(host, reach):
    """The browser's test of its own address (run by Node here, as the page runs it), which decides the warning."""
    import shutil
    import subprocess

    node = shutil.which("node")
    assert node, "Node.js is missing: scripts/test installs it"
    done = subprocess.run([node, "-e", f"console.log(({ui._LOCAL_HOST_JS})({host!r}))"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == reach


def test_the_local_address_warning_names_the_ways_to_a_public_one():
    warning = ui.code_notice(ui.LOCAL_ADDRESS_WARNING.replace("DEMO", "prax"), "warning")
    assert "<code>demohub deploy prax --space-id OWNER/NAME</code>" in warning
    assert "<code>demohub serve --share</code>" in warning
    assert "<code>--public-url https://your.domain</code>" in warning
    assert warning.count("<code>") == 3 and "`" not in warning
