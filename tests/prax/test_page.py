"""The page and its actions: build without torch, named endpoints work over HTTP, rendering and game logic."""

import ast
import html
from contextlib import contextmanager
from pathlib import Path

import gradio as gr
import pytest

from apps.prax import DEMO, actions, dsl, page
from apps.prax.dsl import Example
from apps.prax.game import Game
from apps.prax.pipeline import Candidate, PraxOutput
from shared.context import DemoContext
from shared.errors import UserInputError
from shared.pool import ModelPool

SPEC = [{"string": "12ab", "label": "+"}, {"string": "07xyz", "label": "+"}, {"string": "1ab", "label": "-"}]


@pytest.fixture(scope="module")
def ctx():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        yield DemoContext(DEMO, pool=ModelPool(budget_bytes=10**9))


@pytest.mark.parametrize("module", [page, actions])
def test_page_modules_import_no_torch(module):
    tree = ast.parse(Path(module.__file__).read_text())
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
             for a in getattr(n, "names", [])} | {n.module.split(".")[0] for n in ast.walk(tree)
                                                  if isinstance(n, ast.ImportFrom) and n.module}
    assert "torch" not in names and "transformers" not in names


def test_defaults_fall_back_to_bundled_weights_offline(ctx):
    assert ctx.default_weights(actions.LITERAL_PREFERENCE) == "tiny-literal"
    assert ctx.default_weights(actions.PRAGMATIC_PREFERENCE) == "tiny-pragmatic"


def test_build_registers_named_endpoints(ctx):
    blocks = page.build(ctx)
    assert isinstance(blocks, gr.Blocks)
    names = [d["api_name"] for d in blocks.get_config_file()["dependencies"]]
    assert "synthesize" in names and "suggest" in names


def test_synthesize_and_render_side_by_side(ctx):
    result = actions.synthesize(ctx, SPEC, "tiny-literal", k=5, num_samples=40)
    assert result.weights == "tiny-literal" and result.n_samples == 40
    assert len(result.candidates) <= 5
    html = actions.render_guesses("Literal", result)
    for c in result.candidates:
        assert c.matches == (True, True, False)
    if result.candidates:
        assert "✓" in html and "✗" in html
    empty = actions.render_guesses("Literal", None, "No examples yet")
    assert "No examples yet" in empty


def test_render_escapes_html():
    result = PraxOutput("tiny-literal", (Example("<b>", "+"),), (Candidate("<b>", -1.0, 1.0, (True,), 1),), 1, 1, 1)
    html = actions.render_guesses("x", result)
    assert "<b>" not in html.replace("<b>x", "") and "&lt;b&gt;" in html


def test_bad_input_reaches_the_user_as_a_sentence(ctx):
    contradiction = [{"string": "a", "label": "+"}, {"string": "a", "label": "-"}]
    with pytest.raises(UserInputError, match="both as a match"):
        actions.synthesize(ctx, contradiction, "tiny-literal")
    with pytest.raises(UserInputError, match="Unknown weight set"):
        actions.synthesize(ctx, SPEC, "nope")
    with pytest.raises(UserInputError, match="both as a match") as info:
        actions.check_synthesize(contradiction, "tiny-literal", 3)
    assert info.value.argument == "examples"
    with pytest.raises(UserInputError, match="Unknown weight set") as info:
        actions.check_synthesize(SPEC, "nope", 3)
    assert info.value.argument == "weights"
    with pytest.raises(UserInputError, match="Unknown weight set") as info:
        actions.check_update(SPEC, "tiny-literal", "nope", 20, None)
    assert info.value.argument == "pragmatic_weights"
    with pytest.raises(UserInputError, match="samples") as info:
        actions.check_update(SPEC, "tiny-literal", "tiny-pragmatic", 0, None)
    assert info.value.argument == "num_samples"
    actions.check_update([], "tiny-literal", "tiny-pragmatic", 20, None)  # no examples yet: a hint, not an error


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
    assert Game.from_dict(game.to_dict()) == game
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


def _final(answers):
    """The last answer of a handler that answers in steps (a generator), as the page shows it in the end."""
    return list(answers)[-1]


def test_the_page_shows_the_searchs_guesses_before_the_listeners(ctx):
    """The update handler answers twice: first the search's guesses (torch-free, a fraction of a second; on a cold
    hub before the listeners have loaded), then each listener's ranking of its samples with them."""
    from apps import views
    from apps.prax import ranking

    first, final = list(_handler(page.build(ctx), "update")(SPEC, "tiny-literal", "tiny-pragmatic", 20, None))
    searched = ranking.search_only(dsl.validate_examples(SPEC), actions.SHOWN).candidates[0].program
    for panel in first[:2]:
        assert html.escape("The search's guesses") in panel and views.text(searched) in panel
        assert html.escape(actions.SAMPLING) in panel
    assert first[2:] == (gr.skip(), gr.skip())  # the game waits for the listeners
    for panel in final[:2]:
        assert "samples fit every example" in panel and html.escape("The search's guesses") not in panel


def test_page_handlers_add_update_suggest_and_play(ctx):
    blocks = page.build(ctx)
    add_plus = _handler(blocks, "add")  # the "+ should match" button
    examples, _, refused = add_plus([], "12ab", None)
    assert examples == [{"string": "12ab", "label": "+"}] and refused == ""
    update = _handler(blocks, "update")
    lit_html, prag_html, game, status = _final(update([], "tiny-literal", "tiny-pragmatic", 20, None))
    assert "No examples yet, so no guess" in lit_html and status == "No game running."
    lit_html, prag_html, _, _ = _final(update(SPEC, "tiny-literal", "tiny-pragmatic", 20, None))
    assert "Literal listener (tiny-literal)" in lit_html and "PraX listener (tiny-pragmatic)" in prag_html
    easy = [{"string": "123", "label": "+"}, {"string": "ab", "label": "-"}]
    suggestion, text, _ = _handler(blocks, "suggest_example")(easy, "tiny-literal")
    assert suggestion["example"]["string"] not in {"123", "ab"} and html.escape(suggestion["example"]["string"]) in text
    accepted, _, _ = _handler(blocks, "accept")(easy, suggestion, None)
    assert accepted == [*easy, suggestion["example"]]
    game, examples, _, game_text = _handler(blocks, "new_game")()
    target = Game.from_dict(game).target
    assert examples == [] and target
    assert game_text.startswith(f"Teach the listeners `{target}`.")  # the person knows the regex they teach
    _, _, game, status = _final(update([{"string": "zz", "label": "+"}], "tiny-literal", "tiny-pragmatic", 10, game))
    assert status.startswith(f"Teach the listeners `{target}`.") and "literal:" in status
    with pytest.warns(UserWarning, match="both as a match"):  # gr.Warning outside a request: the page's toast
        examples, listed, refused = add_plus([{"string": "a", "label": "-"}], "a", None)
    assert examples == listed == gr.skip() and refused == "a"  # the list as it was; the string back in the box


def test_page_handlers_show_download_bytes_and_sampling_steps(ctx, monkeypatch):
    real = ctx.compute

    @contextmanager
    def compute(name=None, on_download=None):  # a download of 100 bytes reported halfway, then the real listener
        on_download(50, 100)
        with real(name) as pipe:
            yield pipe

    monkeypatch.setattr(ctx, "compute", compute)
    blocks = page.build(ctx)
    shown = []

    def progress(value, desc=None, total=None, unit="steps"):  # stands in for gr.Progress
        shown.append((value, desc, unit))

    _final(_handler(blocks, "update")(SPEC, "tiny-literal", "tiny-pragmatic", 20, None, progress))
    assert shown.count(((50, 100), "Downloading weights", "bytes")) == 2  # one per listener
    assert [v for v, desc, _ in shown if desc == "Sampling regexes"] == [(1, 4), (2, 4), (3, 4), (4, 4)]
    shown.clear()
    _handler(blocks, "suggest_example")(SPEC, "tiny-literal", "", progress)
    assert shown[0] == ((50, 100), "Downloading weights", "bytes") and shown[-1][0] == (2, 2)


def test_the_settings_state_the_precision_and_the_measured_bf16_trade_off(monkeypatch):
    from apps.prax import actions
    from shared.weights import REPO_ROOT

    monkeypatch.delenv("DEMOHUB_DTYPE", raising=False)
    monkeypatch.delenv("DEMOHUB_DEVICE", raising=False)
    note = actions.precision_note()
    assert note.startswith("**Precision:** fp32 on the CPU;") and "DEMOHUB_DTYPE=bf16" in note
    section = (REPO_ROOT / "BENCHMARKS.md").read_text().split("## Reduced precision", 1)[1].split("\n## ", 1)[0]
    # the figures the page quotes are the benchmark's (top guess changed, speed, top-1 accuracy)
    for figure in ("9% (9 of 100)", "10% (10 of 100)", "| 1.30× |", "| 0.22 | 0.20 |"):
        assert figure in section
    assert "9-10%" in note and "1.3× faster" in note and "0.22 → 0.20" in note
    monkeypatch.setenv("DEMOHUB_DTYPE", "bf16")
    assert actions.precision_note().startswith("**Precision:** bf16 (DEMOHUB_DTYPE=bf16).")


def test_a_missing_official_listener_says_so_on_its_own_panel(ctx):
    """Choosing an official listener that is not on this server: its panel shows the sentence in place of any older
    guesses; the other listener still guesses; a running game records only the listener that answered."""
    game = actions.new_game()
    literal, pragmatic, game, _ = actions.update(ctx, SPEC, "tiny-literal", "pragmatic-ft-listener", 20, game)
    assert "<table" in literal and "Literal listener (tiny-literal)" in literal
    assert "<table" not in pragmatic and "PraX listener (pragmatic-ft-listener)" in pragmatic
    assert html.escape(ctx.weights_message("pragmatic-ft-listener")) in pragmatic
    assert "demohub download" not in pragmatic, "a visitor of a public hub reads no command"
    assert Game.from_dict(game) is not None


def test_the_weight_labels_banner_and_panels_come_from_one_state(ctx):
    """After a model call the page redraws its weights view: both selectors' labels, and the banner for the chosen
    sets that are not here."""
    blocks = page.build(ctx)
    ctx.pipeline("tiny-literal")  # a model call loaded it
    redraw = next(f for f in blocks.fns.values() if f.name == "redraw")
    assert [c.label for c in redraw.inputs] == ["Literal listener", "Pragmatic listener (PraX)"]
    literal_labels, pragmatic_labels, banner = redraw.fn("tiny-literal", "pragmatic-ft-listener")
    assert literal_labels["choices"] == pragmatic_labels["choices"] == ctx.weight_choices()
    assert ("tiny-literal (loaded)", "tiny-literal") in literal_labels["choices"]
    assert ("pragmatic-ft-listener (not on this server)", "pragmatic-ft-listener") in literal_labels["choices"]
    assert banner.count("demohub-notice") == 1 and "pragmatic-ft-listener" in banner
    assert redraw.fn("tiny-literal", "tiny-pragmatic")[2] == ""


def test_a_long_reguess_says_how_long_before_it_starts(ctx, monkeypatch):
    """After the listeners have run here, moving the samples slider says how long the next re-guess takes, once it
    is long (the 92 s of 500 samples came with no warning); before any run, no number is made up."""
    from shared.pace import Pace

    monkeypatch.setattr(actions, "PACE", Pace())
    assert actions.run_estimate(500, "tiny-literal", "tiny-pragmatic") == ""  # nothing measured yet
    actions.update(ctx, SPEC, "tiny-literal", "tiny-pragmatic", 20, None)  # a re-guess: both listeners timed
    per_sample = sum(actions.PACE.estimate(name, 1) for name in ("tiny-literal", "tiny-pragmatic"))
    assert per_sample > 0
    long_run = int(actions.LONG_RUN_SECONDS / per_sample) + 1
    assert actions.run_estimate(long_run, "tiny-literal", "tiny-pragmatic").startswith(
        f"With {long_run} samples each re-guess takes about ")
    assert actions.run_estimate(max(1, long_run // 4), "tiny-literal", "tiny-pragmatic") == "", "short: no note"
    assert actions.run_estimate(long_run, "tiny-literal", "pragmatic-ft-listener") == "", "not run here: no number"
    blocks = page.build(ctx)
    event = next(f for f in blocks.fns.values() if f.name == "run_estimate")
    assert [c.label for c in event.inputs] == ["Samples per listener", "Literal listener", "Pragmatic listener (PraX)"]


def test_the_page_writes_signs_and_suggestions_for_people(ctx):
    """The list, the guesses' table and the card write − (the button's minus sign) for a negative example; the
    suggestion reads in words (no "S1 = 0.01 over 130 candidate examples"); the example-set menu closed without a
    choice does nothing (it warned "Choose an example set from the list first.")."""
    blocks = page.build(ctx)
    examples = [{"string": "ab1", "label": "+"}, {"string": "x", "label": "-"}]
    assert [label for label, _ in actions.example_choices(examples)] == ["+  ab1", "−  x"]
    assert "−" in actions.preview() and "- " not in actions.preview()
    suggestion, text, _ = _handler(blocks, "suggest_example")(examples, "tiny-literal")
    assert "S1" not in text and "candidate examples" not in text
    assert "the listener's best guess" in text and "singles that guess out best" in text
    assert _handler(blocks, "load")(None) == (gr.skip(),) * 4
    loaded, listed, _, _ = _handler(blocks, "load")("capitalised word")
    assert [label for label, _ in listed["choices"]][-1] == "−  HELLO"


def test_the_api_answers_with_the_candidates_the_page_shows(ctx):
    """Same examples, same seed: the named endpoint (which the MCP tool, gradio_client and a Ray replica also run)
    returns the regexes the page's panel lists, in its order, the search's included."""
    from apps import views
    from apps.prax import api

    final = _final(_handler(page.build(ctx), "update")(SPEC, "tiny-literal", "tiny-pragmatic", actions.PAGE_SAMPLES,
                                                       None))
    for panel, weights in zip(final[:2], ("tiny-literal", "tiny-pragmatic"), strict=True):
        answer = api.synthesize(ctx, SPEC, weights, actions.SHOWN)
        programs = [c["program"] for c in answer["candidates"]]
        assert programs and any(c["search_score"] is not None for c in answer["candidates"])
        positions = [panel.index(f"<code style='{actions.REGEX}'>{views.text(p)}</code>") for p in programs]
        assert positions == sorted(positions), "the page lists them in the API's order"


def test_with_no_guess_one_sentence_says_which_example_rules_out_what():
    """A panel with no candidate says why: no string that should match; the best reading of the matches and the
    string that should not match it reads; or (where that reading fits every example: a search cut short) that no
    regex was found, never an error."""
    def panel(*pairs):
        examples = tuple(Example(s, label) for s, label in pairs)
        return actions.render_guesses("PraX listener", PraxOutput("tiny-pragmatic", examples, (), 100, 0, 0))

    assert "Only strings that should not match" in panel(("x", "-"))
    blocked = panel(("ab", "+"), ("cd", "+"), ("ef", "-"))
    assert html.escape("[a-z]{2}, also matches “ef”, which should not match") in blocked
    assert "none of the listener&#x27;s 100 samples fits" in blocked
    fits = panel(("ab", "+"), ("cd", "+"), ("12", "-"))  # its best reading matches no negative
    assert "No regex of the program space (at most six parts) reads all 2 strings" in fits
