"""A refused or unreadable layout: the sentence a person reads beside the layout box (never the JSON reader's own
words), how the canvas editor is told to draw it (boxes marked by the pipeline's own box check, the last readable
layout kept while the text cannot be read), and the page's validator that puts the sentence at the layout box."""

from __future__ import annotations

import json

import pytest

from apps.geodiffusion.actions import editor_value, layout_from_editor
from apps.geodiffusion.checks import check_inputs
from apps.geodiffusion.layout import KNOWN_CONFIGS, BoxProblem, parse_layout
from apps.geodiffusion.page import build
from shared.errors import UserInputError

COCO = KNOWN_CONFIGS["coco-stuff-256x256"]
NU = KNOWN_CONFIGS["nuimages-256x256"]
START = json.dumps({"bbox": [["truck", 0.1321, 0.3914, 0.7247, 0.7849], ["house", 0.0, 0.06875, 0.9046875, 0.5458]]})
UNREADABLE_NOTE = ("Showing the last readable layout: the layout text below cannot be read (its message says why). "
                   "Boxes can be drawn here again once it can.")
UNICORN = ("Box 2 has label 'unicorn', which the coco_stuff checkpoint does not know; use one of its 172 classes "
           "(e.g. person, bicycle, car, motorcycle, airplane, bus).")


@pytest.mark.parametrize(("text", "sentence"), [
    (START[:-2], "it ends before its closing brackets (line 1, character 96)"),  # its last "]}" deleted
    ('{"bbox": [["car", 0.1, 0.1, 0.2, 0.2]]', "it ends before its closing brackets (line 1, character 39)"),
    ('{\n  "bbox": [\n    ["car", 0.1, 0.1, 0.2, 0.2]\n', "it ends before its closing brackets (line 4, character 1)"),
    ("{", "it ends before its closing brackets (line 1, character 2)"),
    ('{"bbox": [["car", 0.1 0.1, 0.2, 0.2]]}', "a comma is missing between two items (line 1, character 23)"),
    ('{"bbox" [["car", 0.1, 0.1, 0.2, 0.2]]}', "a colon is missing after a field name (line 1, character 9)"),
    ("{'bbox': []}", 'names and labels take double quotes ("car"), not single ones (line 1, character 2)'),
    ('{"bbox": [["car", 0.1, 0.1, 0.2, 0.2],]}', "a comma comes right before a closing bracket (line 1, character 39)"),
    ('{"bbox": [], }', "a comma comes right before a closing bracket (line 1, character 14)"),
    ('{"bbox": [[car, 0.1, 0.1, 0.2, 0.2]]}', 'a text needs double quotes ("car", not car) (line 1, character 12)'),
    ('{"bbox": None}', "JSON writes true, false and null in lower case (line 1, character 10)"),
    ('{"bbox": [["car", .1, 0.1, 0.2, 0.2]]}', "a number starts with a digit (0.5, not .5) (line 1, character 19)"),
    ('{"bbox": [["car, 0.1, 0.1, 0.2, 0.2]]}', "a text in double quotes is not closed (line 1, character 12)"),
    ('{"bbox": []}}', "more text follows its closing bracket (line 1, character 13)"),
    ('{"bbox": [], "camera": "a\\qb"}', "a backslash in a text starts no JSON escape (line 1, character 26)"),
    ('{"bbox": [], "camera": "fr\tont"}',
     "a text in double quotes runs over a line break or a tab (line 1, character 27)"),
    ('{"bbox": [["car", 0.1, 0.1, 0.2, 0.2]], "camera": }', "a value is missing (a number, a text in double quotes, "
                                                            "a list or an object) (line 1, character 51)"),
])
def test_unreadable_json_is_a_sentence_with_line_and_character(text, sentence):
    with pytest.raises(UserInputError) as refused:
        parse_layout(text, COCO)
    assert str(refused.value) == f"The layout is not valid JSON: {sentence}."
    for library_words in ("Expecting", "delimiter", "JSONDecodeError", "property name", "char "):
        assert library_words not in str(refused.value)


@pytest.mark.parametrize(("box", "mark", "sentence"), [
    (["unicorn", 0.1, 0.1, 0.3, 0.3], "unknown label", UNICORN),
    (["house", 0.7, 0.1, 0.3, 0.3], "inverted",
     "Box 2 (house): the bottom-right corner must lie right of and below the top-left one (x2 > x1 and y2 > y1); "
     "got x1=0.7, y1=0.1, x2=0.3, y2=0.3."),
    (["house", 0.1, 0.3, 0.3, 0.3], "no area", "Box 2 (house): the bottom-right corner must lie right of and below "
                                               "the top-left one (x2 > x1 and y2 > y1); got x1=0.1, y1=0.3, x2=0.3, "
                                               "y2=0.3."),
    (["house", 0.1, 0.1, 1.3, 0.3], "outside the image", "Box 2 (house): coordinates must be fractions of the image "
                                                         "size between 0 and 1; got [0.1, 0.1, 1.3, 0.3]."),
    (["house", 0.1, 0.3], "not a box", 'Box 2 must be [label, x1, y1, x2, y2]; got ["house", 0.1, 0.3].'),
])
def test_a_refused_box_names_itself_and_carries_its_mark(box, mark, sentence):
    layout = {"bbox": [["truck", 0.1, 0.1, 0.2, 0.2], box]}
    with pytest.raises(BoxProblem) as refused:
        parse_layout(layout, COCO)
    assert (str(refused.value), refused.value.index, refused.value.mark) == (sentence, 1, mark)
    with pytest.raises(UserInputError) as checked:  # the pipeline's check: the same sentence, naming its argument
        check_inputs(layout, config=COCO)
    assert (str(checked.value), checked.value.argument) == (sentence, "layout")


def test_the_editor_marks_what_the_check_refuses_and_says_so():
    text = json.dumps({"bbox": [["unicorn", 0.1, 0.1, 0.3, 0.3], ["house", 0.1, 0.1, 0.3, 0.3],
                                ["car", 0.7, 0.2, 0.3, 0.4]]})
    value = json.loads(editor_value(text, COCO))
    assert value["marks"] == ["unknown label", None, "inverted"] and value["readable"] is True
    assert value["layout"] == json.loads(text)  # drawn as written: the inverted box too
    assert value["note"] == ('Dashed red: box 1 "unicorn" (unknown label); box 3 "car" (inverted). The checkpoint '
                             "cannot take them; the message at the layout text below says what to change.")
    # The same labels against another checkpoint: nuImages knows "car", not "house".
    assert json.loads(editor_value(text, NU))["marks"] == ["unknown label", "unknown label", "inverted"]
    clean = json.loads(editor_value(START, COCO))
    assert clean["marks"] == [None, None] and clean["note"] == ""


@pytest.mark.parametrize("text", [START[:-2], '"just text"', "x" * 20_001])
def test_unreadable_text_keeps_the_last_readable_layout_and_takes_no_edits(text):
    shown = editor_value(START, COCO)
    value = json.loads(editor_value(text, COCO, shown))
    assert value["layout"] == json.loads(START) and value["readable"] is False
    assert value["marks"] == [None, None] and value["note"] == UNREADABLE_NOTE
    assert json.loads(editor_value(text, COCO))["layout"] == {"bbox": []}  # nothing shown before: nothing drawn
    edited = {**value, "layout": {"bbox": [["truck", 0, 0, 1, 1]]}}
    assert layout_from_editor(json.dumps(edited), text) is text, "the person's text is theirs to fix"


def test_the_page_checks_the_layout_as_generate_does_and_marks_the_layout_box(offline_page):
    from apps import ui

    text = json.loads(START)
    text["bbox"][1][0] = "unicorn"
    with pytest.raises(UserInputError) as refused:
        offline_page.check_generate(json.dumps(text), "coco-stuff-256x256")
    with pytest.raises(UserInputError) as checked:
        offline_page.check_layout(json.dumps(text), "coco-stuff-256x256")
    assert str(checked.value) == str(refused.value) == UNICORN
    layout_box, checkpoint = ui.validator(offline_page.check_layout)(json.dumps(text), "coco-stuff-256x256")
    assert (layout_box["is_valid"], layout_box["message"], checkpoint["is_valid"]) == (False, UNICORN, True)
    assert all(r["is_valid"] for r in ui.validator(offline_page.check_layout)(START, "coco-stuff-256x256"))


def test_the_layout_check_is_the_last_event_of_whatever_changes_or_reads_the_layout(offline_page):
    """Gradio runs a trigger's events one after another and clears an input's sentence when an event that reads the
    input starts or a later event ends: the layout check is the last event of a change of the layout text and of a
    change of checkpoint (after the weights banner's), and follows every other event that reads the layout text (but
    Generate, whose own check says the same)."""
    blocks = build(offline_page.ctx)
    by_id = {getattr(b, "elem_id", None): b for b in blocks.blocks.values()}
    layout_box, checkpoint = by_id["geo-layout-json"], next(
        b for b in blocks.blocks.values() if getattr(b, "label", None) == "Checkpoint")
    checks = [f for f in blocks.fns.values() if f.name == "mark_layout"]
    assert all(f.validator is not None and f.trigger_mode == "always_last" and f.inputs == [layout_box, checkpoint]
               for f in checks)
    for component in (layout_box, checkpoint):
        on_change = [f.name for f in blocks.fns.values() if (component._id, "change") in f.targets]
        assert len(on_change) >= 2 and on_change[-1] == "mark_layout", on_change
    assert "redraw_messages" in [f.name for f in blocks.fns.values() if (checkpoint._id, "change") in f.targets]
    readers = {i for i, f in blocks.fns.items() if layout_box in f.inputs and f.name not in (
        "mark_layout", "generate_on_page", "on_layout", "on_checkpoint")}
    assert len(readers) == 5 and readers == {f.trigger_after for f in checks} - {None}  # canvas, table, 3 fields
    marked = checks[0].validator('{"bbox": [["car", 0.5, 0.5, 0.2, 0.9]]}', "coco-stuff-256x256")
    assert not marked[0]["is_valid"] and marked[0]["message"].startswith("Box 1 (car): the bottom-right corner")
