"""The page: builds without torch in page.py, named endpoints work over HTTP, rendering and game logic."""

import ast
import html
from pathlib import Path

import gradio as gr
import pytest

from apps.prax import DEMO, page
from apps.prax.game import Game
from shared.context import DemoContext
from shared.errors import UserInputError
from shared.pool import ModelPool

SPEC = [{"string": "12ab", "label": "+"}, {"string": "07xyz", "label": "+"}, {"string": "1ab", "label": "-"}]


@pytest.fixture(scope="module")
def ctx():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        yield DemoContext(DEMO, pool=ModelPool(budget_bytes=10**9))


def test_page_module_imports_no_torch():
    tree = ast.parse(Path(page.__file__).read_text())
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
             for a in getattr(n, "names", [])} | {n.module.split(".")[0] for n in ast.walk(tree)
                                                  if isinstance(n, ast.ImportFrom) and n.module}
    assert "torch" not in names and "transformers" not in names


def test_defaults_fall_back_to_bundled_weights_offline(ctx):
    assert ctx.default_weights(page.LITERAL_PREFERENCE) == "tiny-literal"
    assert ctx.default_weights(page.PRAGMATIC_PREFERENCE) == "tiny-pragmatic"


def test_build_registers_named_endpoints(ctx):
    blocks = page.build(ctx)
    assert isinstance(blocks, gr.Blocks)
    names = [d["api_name"] for d in blocks.get_config_file()["dependencies"]]
    assert "synthesize" in names and "suggest" in names


def test_synthesize_and_render_side_by_side(ctx):
    result = page.synthesize(ctx, SPEC, "tiny-literal", k=5, samples=40)
    assert result["weights"] == "tiny-literal" and result["n_samples"] == 40
    assert len(result["candidates"]) <= 5
    html = page.render_guesses("Literal", result)
    for c in result["candidates"]:
        assert c["matches"] == [True, True, False]
    if result["candidates"]:
        assert "✓" in html and "✗" in html
    empty = page.render_guesses("Literal", None, "No examples yet")
    assert "No examples yet" in empty


def test_render_escapes_html():
    result = {"examples": [{"string": "<b>", "label": "+"}], "n_samples": 1, "n_consistent": 1, "n_unique": 1,
              "candidates": [{"program": "<b>", "logprob": -1.0, "probability": 1.0, "matches": [True], "count": 1}]}
    html = page.render_guesses("x", result)
    assert "<b>" not in html.replace("<b>x", "") and "&lt;b&gt;" in html


def test_bad_input_reaches_the_user_as_a_sentence(ctx):
    with pytest.raises(UserInputError, match="both as a match"):
        page.synthesize(ctx, [{"string": "a", "label": "+"}, {"string": "a", "label": "-"}], "tiny-literal")
    with pytest.raises(UserInputError, match="Unknown weight set"):
        page.synthesize(ctx, SPEC, "nope")


def test_game_checks_labels_and_records_success():
    game = Game("[0-9]{2}")
    game.check_label("12", "+")
    with pytest.raises(UserInputError, match="should be labelled \\+"):
        game.check_label("34", "-")
    assert not game.record("literal", "[0-9]+", 2)
    assert game.record("literal", "[0-9][0-9]", 3)
    assert game.record("literal", "[0-9]{2}", 4)
    assert game.solved_after == {"literal": 3}
    assert "literal: got it after 3 examples" in game.status(["literal", "PraX"])
    assert "PraX: not yet" in game.status(["literal", "PraX"])
    assert Game.from_dict(game.as_dict()) == game
    assert Game.new(seed=1).target == Game.new(seed=1).target


def test_http_api_endpoints(ctx):
    from gradio_client import Client

    blocks = page.build(ctx)
    blocks.queue().launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True)
    try:
        client = Client(blocks.local_url, verbose=False)
        out = client.predict(SPEC, "tiny-literal", 3, api_name="/synthesize")
        assert out["weights"] == "tiny-literal" and len(out["candidates"]) <= 3
        assert all(c["matches"] == [True, True, False] for c in out["candidates"])
        with pytest.raises(Exception, match="no examples"):
            client.predict([], "tiny-literal", 3, api_name="/synthesize")
    finally:
        blocks.close()


def _handler(blocks, name):
    return next(f.fn for f in blocks.fns.values() if f.name == name)


def test_page_handlers_add_update_suggest_and_play(ctx):
    blocks = page.build(ctx)
    add_plus = next(f.fn for f in blocks.fns.values() if f.name == "<lambda>")  # the "+ should match" button
    examples, cleared, _ = add_plus([], "12ab", None)
    assert examples == [{"string": "12ab", "label": "+"}] and cleared == ""
    update = _handler(blocks, "_update")
    lit_html, prag_html, game, status = update([], "tiny-literal", "tiny-pragmatic", 20, None)
    assert "No examples yet, so no guess" in lit_html and status == "No game running."
    lit_html, prag_html, _, _ = update(SPEC, "tiny-literal", "tiny-pragmatic", 20, None)
    assert "Literal listener (tiny-literal)" in lit_html and "PraX listener (tiny-pragmatic)" in prag_html
    easy = [{"string": "123", "label": "+"}, {"string": "ab", "label": "-"}]
    suggestion, text, _ = _handler(blocks, "_suggest")(easy, "tiny-literal")
    assert suggestion["string"] not in {"123", "ab"} and html.escape(suggestion["string"]) in text
    game, examples, _, game_text = _handler(blocks, "_new_game")()
    assert game_text.startswith("Hidden regex set.")
    assert examples == [] and Game.from_dict(game).target
    target = Game.from_dict(game).target
    _, _, game, status = update([{"string": "zz", "label": "+"}], "tiny-literal", "tiny-pragmatic", 10, game)
    assert status.startswith("Hidden regex set.") and "literal:" in status
    assert target in _handler(blocks, "_reveal")(game)
    with pytest.raises(gr.Error, match="both as a match"):
        add_plus([{"string": "a", "label": "-"}], "a", None)
