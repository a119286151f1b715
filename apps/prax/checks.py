"""PraX's input checks, torch-free: a page's validator and an API call's first check import this module only, so the
first call after start does not wait for torch (``PraxPipeline.check_inputs`` is ``check_inputs``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from apps.prax import dsl
from apps.prax.dsl import Example
from apps.prax.tokens import encode_listener_input
from shared.errors import UserInputError
from shared.validation import check_number

DEFAULT_K = 10
DEFAULT_SAMPLES = 500  # upstream handler.py; the official Space used 100
SUGGEST_SAMPLES = 100  # samples suggest_example draws (the official Space's setting)
MAX_SAMPLES = 1000
MAX_K = 50
# One request's sampling work: samples x listener input tokens. Decoding attends over every input token for every
# sample (on 2 CPU cores the tiny listener draws 100 samples over 3,062 tokens in ~20 s), so a request over this is
# refused with the largest sample count its examples allow.
MAX_SAMPLED_TOKENS = 250_000


class PraxInputs(NamedTuple):
    """What ``check_inputs`` returns: the request normalised, ready to run (a frozen tuple: it unpacks as
    ``examples, k, num_samples``)."""

    examples: tuple[Example, ...]
    k: int
    num_samples: int


def check_inputs(examples: Sequence, k=DEFAULT_K, num_samples=DEFAULT_SAMPLES) -> PraxInputs:
    """All of PraX's input checks, without weights: the examples (count, length, characters, labels, no string both +
    and -: ``dsl.validate_examples``), ``k``, ``num_samples``, and the sampling work they make together
    (``MAX_SAMPLED_TOKENS``). Returns them normalised as ``PraxInputs``."""
    examples = tuple(dsl.validate_examples(examples))
    k = check_number(k, "k (how many guesses)", 1, MAX_K, whole=True, argument="k")
    num_samples = check_number(num_samples, "The number of samples", 1, MAX_SAMPLES, whole=True,
                               argument="num_samples")
    tokens = len(encode_listener_input(examples))
    if num_samples * tokens > MAX_SAMPLED_TOKENS:
        most = max(1, MAX_SAMPLED_TOKENS // tokens)
        raise UserInputError(f"{num_samples} samples over examples this long ({tokens:,} bytes for the listener) is "
                             f"more sampling than one request may do here; use at most {most} samples, or fewer or "
                             "shorter examples.", argument="num_samples")
    return PraxInputs(examples, k, num_samples)
