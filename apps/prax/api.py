"""PraX's API functions, declared once (``shared.api``): ``/synthesize`` and ``/suggest``, each also an MCP tool."""

from __future__ import annotations

from apps.prax import actions, checks
from apps.prax.dsl import MAX_EXAMPLES, MAX_STRING_CHARS
from shared.api import Endpoint, Input
from shared.context import DemoContext

EXAMPLES_TEXT = ('the labelled strings, a list of {"string": str, "label": "+" or "-"} ("+": should match, "-": should '
                 f"not); 1 to {MAX_EXAMPLES} examples, each string 1 to {MAX_STRING_CHARS} printable ASCII characters, "
                 "no string both + and -")
SPEC = [{"string": "12ab", "label": "+"}, {"string": "07xyz", "label": "+"}, {"string": "1ab", "label": "-"}]

ENDPOINTS = (
    Endpoint(
        name="synthesize",
        summary="Guess the regular expression a person means from strings it should and should not match (PraX "
                "listener).",
        inputs=(
            Input("examples", "records", EXAMPLES_TEXT, example=SPEC),
            Input("weights", "weights", "the listener's weight set (the bundled tiny-* ones are always here, the "
                  "official ones only where the operator has downloaded them)",
                  default=None, preference=actions.PRAGMATIC_PREFERENCE, example="tiny-pragmatic"),
            Input("k", "integer", "how many guesses to return", default=actions.SHOWN, minimum=1, maximum=checks.MAX_K,
                  example=3, label="Guesses", help=f"How many guesses to show, best first (1 to {checks.MAX_K})."),
        ),
        returns='{"weights", "examples", "candidates": [{"program", "logprob", "probability", "matches", "count", '
                '"search_score", "score"}] best first (matches: whether the program matches each example; count: the '
                'samples that gave it, 0 where only the search read it; search_score: the search\'s, null where it '
                'did not read it; score: what the ranking sorts by), "n_samples", "n_consistent", "n_unique"}',
        run="apps.prax.api:synthesize",
        check="apps.prax.api:check_synthesize",
    ),
    Endpoint(
        name="suggest",
        summary="The most informative next example for the PraX listener's current top guess (RSA over its "
                "candidates).",
        inputs=(Input("examples", "records", EXAMPLES_TEXT.replace("the labelled strings", "the labelled strings "
                                                                   "so far"), example=SPEC),),
        returns='{"example": {"string", "label"}, "speaker_probability", "assumed_program", "n_programs", '
                '"n_candidates", "remaining", "method", "note"}',
        run="apps.prax.api:suggest",
        check="apps.prax.api:check_suggest",
    ),
)


def check_synthesize(ctx: DemoContext, examples, weights, k) -> checks.PraxInputs:
    return checks.check_inputs(examples, k=k, num_samples=actions.PAGE_SAMPLES)


def check_suggest(ctx: DemoContext, examples) -> checks.PraxInputs:
    return checks.check_inputs(examples, num_samples=checks.SUGGEST_SAMPLES)


def synthesize(ctx: DemoContext, examples, weights, k) -> dict:
    return actions.synthesize(ctx, examples, weights, k=k).to_dict()


def suggest(ctx: DemoContext, examples) -> dict:
    return actions.suggest(ctx, examples, ctx.default_weights(actions.PRAGMATIC_PREFERENCE)).to_dict()
