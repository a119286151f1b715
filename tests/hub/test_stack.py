"""The tested stack: constraints.txt pins what CI runs, the hub says at start when its Gradio differs or lacks an
internal the hub changes (all of them in apps/gradio_internals.py), and the one it changes for speed (a session's
block configs, built lazily) keeps Gradio's behaviour."""

from __future__ import annotations

import gradio
import pytest
from gradio.state_holder import SessionState

from apps import gradio_internals, spaces
from shared.weights import REPO_ROOT


def test_constraints_pin_the_gradio_the_hub_is_tested_on_and_every_requirement():
    pins = spaces.tested_versions()
    assert pins["gradio"] == gradio_internals.TESTED_GRADIO == gradio.__version__  # CI installs with -c constraints.txt
    for line in (REPO_ROOT / "requirements.txt").read_text().splitlines():
        name = line.split("#")[0].strip().split("[")[0].split(">")[0].split("=")[0].strip()
        if name and not name.startswith("-"):
            assert name.lower().replace("_", "-") in pins, f"{name} has no pin in constraints.txt"


def test_an_untested_gradio_is_named_at_start(monkeypatch):
    assert gradio_internals.startup_warning() is None
    assert all(internal.present() for internal in gradio_internals.INTERNALS)  # the tested Gradio has every one
    monkeypatch.setattr(gradio, "__version__", "6.99.0")
    warning = gradio_internals.startup_warning()
    assert "Gradio 6.99.0 is installed" in warning and gradio_internals.TESTED_GRADIO in warning
    assert "pip install -r requirements.txt -c constraints.txt" in warning


def test_a_missing_internal_is_named_with_what_stops_working(monkeypatch):
    from gradio.mcp import GradioMCPServer
    from gradio.state_holder import SessionState as State

    monkeypatch.delattr(GradioMCPServer, "postprocess_output_data")
    monkeypatch.setattr(State, "__init__", lambda self, app: None)  # a release that renamed the parameter
    warning = gradio_internals.startup_warning()  # the version is the tested one: the internals still differ
    assert "Missing from this Gradio: gradio.state_holder.SessionState.__init__(blocks) (so building a session's " \
           "configs lazily does not work); gradio.mcp.GradioMCPServer.postprocess_output_data (so MCP tool results " \
           "as JSON and images does not work)." in warning
    assert "Queue.push" not in warning


def test_no_other_module_changes_a_gradio_internal():
    """Every assignment to a Gradio object's attribute is in apps/gradio_internals.py (the list above is complete)."""
    import re

    pattern = re.compile(r"^\s*(queue|blocks|server|block_fn|cls)\.(?!_?demohub)\w+ = ", re.M)  # not our own
    for path in sorted((REPO_ROOT / "apps").rglob("*.py")):
        if path.name != "gradio_internals.py":
            assert not pattern.findall(path.read_text(encoding="utf-8")), path


@pytest.fixture(scope="module")
def hub_blocks():
    from apps import hub

    gradio_internals.install_lazy_session_configs()
    return hub.build_hub()


def eager_configs(blocks) -> dict:
    """What Gradio's own SessionState builds for a new session."""
    config = blocks.default_config
    return {k: config.config_for_block(k, [], v) for k, v in config.blocks.items() if k in blocks.blocks}


def test_a_new_session_builds_no_block_config_until_one_is_read(hub_blocks, monkeypatch):
    built = []
    real = type(hub_blocks.default_config).config_for_block
    monkeypatch.setattr(type(hub_blocks.default_config), "config_for_block",
                        staticmethod(lambda *args, **kwargs: built.append(args[0]) or real(*args, **kwargs)))
    state = SessionState(hub_blocks)
    assert built == []  # Gradio's own __init__ builds one per block: hundreds for this hub
    textbox = next(k for k, v in hub_blocks.blocks.items() if isinstance(v, gradio.Textbox))
    state._update_value_in_config(textbox, "changed")  # what an event's output does
    assert built == [textbox] and state.config_values[textbox]["props"]["value"] == "changed"


def test_a_deep_link_reads_the_configs_gradio_would_have_built(hub_blocks):
    eager = eager_configs(hub_blocks)
    state = SessionState(hub_blocks)
    first = next(k for k, v in eager.items() if "props" in v and "value" in v["props"])
    state._update_value_in_config(first, "changed")
    eager[first]["props"]["value"] = "changed"
    assert list(state.components) == [c for c in eager.values() if c]  # same configs, same order
    assert len(state.config_values) == len(eager)


def test_the_hub_builds_no_web_app_until_launch(hub_blocks):
    """Gradio builds a FastAPI app per Blocks (17 for the hub, a second of its start); the built hub has none, and a
    Blocks built outside the hub's build gets its app as Gradio makes it."""
    assert hub_blocks.app is None
    with gradio.Blocks() as plain:
        gradio.Markdown("plain")
    assert plain.app is not None and len(plain.app.routes) > 10


def test_apps_built_by_another_thread_meanwhile_are_built():
    """Only the building thread skips the apps: a hub launching in another thread meanwhile gets its app."""
    import threading

    other = {}

    def build_elsewhere():
        with gradio.Blocks() as blocks:
            gradio.Markdown("elsewhere")
        other["app"] = blocks.app

    with gradio_internals.apps_at_launch_only():
        with gradio.Blocks() as here:
            gradio.Markdown("here")
        thread = threading.Thread(target=build_elsewhere)
        thread.start()
        thread.join()
    assert here.app is None and other["app"] is not None
    with gradio.Blocks() as after:  # left as it was
        gradio.Markdown("after")
    assert after.app is not None


def test_every_pinned_package_that_is_installed_is_at_its_pin():
    """The suite runs on the stack constraints.txt pins: every pinned package installed here is at its pin (one that
    is not installed is an optional extra's; torch may carry a local build tag, +cpu)."""
    from importlib import metadata

    from packaging.utils import canonicalize_name

    installed = {canonicalize_name(d.metadata["Name"]): d.version for d in metadata.distributions()}
    off = {}
    for line in (REPO_ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if "==" not in line:
            continue
        name, pin = (part.strip() for part in line.split("==", 1))
        version = installed.get(canonicalize_name(name.split("[")[0]))
        if version is not None and version.split("+")[0] != pin:
            off[name] = (version, pin)
    assert not off, f"installed (version, pin): {off}"
    assert len(installed) > 50
