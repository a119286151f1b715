"""The hub's PraX endpoint from Node.js through the official, pinned ``@gradio/client`` (tests/js/package.json),
against the real hub on its bundled PraX weights: ``node tests/js/prax.mjs URL`` prints one line of JSON."""

from __future__ import annotations

import re

from apps.prax import dsl
from tests.js.node import JS_DIR, result_of, run_node


def test_node_client_synthesizes_consistent_regexes(hub_url):
    out = result_of(run_node(JS_DIR / "prax.mjs", hub_url))
    examples, answer = out["examples"], out["answer"]
    assert out["parameters"] == ["examples", "weights", "k"]
    assert answer["examples"] == examples
    assert answer["weights"] == "tiny-pragmatic", "bundled weights: the default where no official set is cached"
    candidates = answer["candidates"]
    assert len(candidates) == 5 and answer["n_unique"] >= 5 and answer["n_consistent"] >= 5
    labels = [e["label"] == "+" for e in examples]
    for guess, checked in zip(candidates, out["checked"], strict=True):
        assert checked["program"] == guess["program"]
        assert guess["matches"] == labels, f"{guess['program']} does not fit every example"
        assert checked["matches_here"] == labels, f"{guess['program']}: JavaScript's RegExp disagrees"
        assert [dsl.matches(guess["program"], e["string"]) for e in examples] == labels
    probabilities = [c["probability"] for c in candidates]
    assert probabilities == sorted(probabilities, reverse=True) and 0 < sum(probabilities) <= 1 + 1e-6
    top = candidates[0]["program"]
    assert re.fullmatch(top, "ab1") and re.fullmatch(top, "xy7") and not re.fullmatch(top, "ab")
    assert "The label '?' is not understood" in out["refusal"], "bad input is refused with the page's sentence"
