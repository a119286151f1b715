"""PraX's ranking, torch-free: the listener's samples and the search's regexes in, ranked candidates out (what the
pipeline returns, and what the page shows from the search alone while a listener samples)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from apps.prax import dsl, search
from apps.prax.dsl import Example
from shared.pipeline import PipelineOutput

SEARCH_ONLY = "search"  # the ``weights`` of an output the search alone ranked
# How much the listener's log-probability counts beside the search's score. Chosen on the sampler's held-out spec
# files (checkpoints/prax/heldout-*.json), never on the people's evaluation set: top-1 of both bundled listeners,
# 100 samples, averaged over the two files, for weights 0 / 0.1 / 0.25 / 0.5 / 1 / 2: 0.273 / 0.278 / 0.275 /
# 0.278 / 0.268 / 0.258 (differences within the noise of 100 specs; the search's score carries most of it).
LISTENER_WEIGHT = 0.5


@dataclass(frozen=True)
class Candidate:
    program: str
    logprob: float  # summed token log-probability of program + </s> under the listener
    probability: float  # share among the kept (consistent, unique) candidates: softmax of score
    matches: tuple[bool, ...]  # full match on each example, in the order given
    count: int = 1  # how many samples produced this program (0: only the search proposed it, apps/prax/search.py)
    search_score: float | None = None  # the search's log score (prior + likelihood of the positives); None: not its
    score: float = 0.0  # what the ranking sorts by: search_score + LISTENER_WEIGHT * logprob (see rank)


@dataclass(frozen=True)
class PraxOutput(PipelineOutput):
    weights: str  # the listener's weight set
    examples: tuple[Example, ...]
    candidates: tuple[Candidate, ...]  # best first, at most k
    n_samples: int
    n_consistent: int  # consistent samples, duplicates included
    n_unique: int  # distinct consistent programs before the top-k cut

    @property
    def top1(self) -> str | None:
        return self.candidates[0].program if self.candidates else None


def rank(examples: Sequence[Example], samples: Sequence[tuple[str, float]], k: int,
         weights: str = "", proposed: Sequence[tuple[str, float, float]] = ()) -> PraxOutput:
    """Consistency filter -> de-duplicate -> rank -> top-k. ``proposed``: the search's consistent programs as
    (program, listener log-probability, search score).

    A program's ranking score is the search's score plus ``LISTENER_WEIGHT`` times the listener's summed
    log-probability (a product of two experts: the search's prior times the likelihood of the positives, and the
    listener's reading of the examples); a sample the search did not propose gets the lowest score the search gave
    (0 when it gave none), so without a search the ranking is the listener's own, as upstream."""
    best: dict[str, float] = {}
    counts: dict[str, int] = {}
    verdict: dict[str, bool] = {}
    n_consistent = 0
    for program, logprob in samples:
        if program not in verdict:
            verdict[program] = bool(program) and dsl.consistent(program, examples)
        if not verdict[program]:
            continue
        n_consistent += 1
        counts[program] = counts.get(program, 0) + 1
        best[program] = max(logprob, best.get(program, -math.inf))
    searched = {program: score for program, _, score in proposed}
    for program, logprob, _ in proposed:
        if program not in best:
            best[program], counts[program] = logprob, 0
    floor = min(searched.values(), default=0.0)
    score = {p: LISTENER_WEIGHT * lp + searched.get(p, floor) for p, lp in best.items()}
    ranked = sorted(best, key=lambda p: (-score[p], p))
    top = max(score.values(), default=0.0)
    total = sum(math.exp(v - top) for v in score.values())
    candidates = tuple(
        Candidate(program=p, logprob=best[p], probability=math.exp(score[p] - top) / total, count=counts[p],
                  matches=tuple(dsl.matches(p, ex.string) for ex in examples), search_score=searched.get(p),
                  score=score[p])
        for p in ranked[:k]
    )
    return PraxOutput(weights, tuple(examples), candidates, len(samples), n_consistent, len(ranked))


def search_only(examples: Sequence[Example], k: int) -> PraxOutput:
    """The search's own ranking, before (or without) a listener: its regexes by their search score."""
    return rank(examples, [], k, SEARCH_ONLY, [(program, 0.0, score) for program, score in search.scored(examples)])
