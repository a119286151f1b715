"""PraX listener inference, UI-free: examples in, ranked regexes out (fact sheet, "Inference defaults").

Official recipe: draw N samples (``do_sample``, top_p 0.9, temperature 1, max_new_tokens 128, no beams) with the
decoder started from ``<extra_id_124>``, keep the samples that full-match-agree with every example (timeout 1 s),
de-duplicate, and rank by summed token log-probability. Returns the top-k with their scores.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from apps.prax import dsl, rsa
from apps.prax.dsl import Example
from apps.prax.model import load_listener
from apps.prax.tokens import EOS_ID, PAD_ID, PROGRAM_ID, decode_program, encode_listener_input
from shared.errors import UserInputError

DEFAULT_SAMPLES = 500  # upstream handler.py; the official Space used 100
MAX_SAMPLES = 1000
MAX_K = 50
TOP_P = 0.9
TOP_K = 50  # transformers' generation default, which upstream inherited alongside top_p
MAX_NEW_TOKENS = 128


@dataclass
class Candidate:
    program: str
    logprob: float  # summed token log-probability of program + </s> under the listener
    probability: float  # share among the kept (consistent, unique) candidates: softmax of logprob
    matches: list[bool]  # full match on each example, in the order given
    count: int = 1  # how many samples produced this program


@dataclass
class SynthesisResult:
    examples: list[Example]
    candidates: list[Candidate]  # best first, at most k
    n_samples: int
    n_consistent: int  # consistent samples, duplicates included
    n_unique: int  # distinct consistent programs before the top-k cut

    @property
    def top1(self) -> str | None:
        return self.candidates[0].program if self.candidates else None

    def as_dict(self) -> dict:
        return {"examples": [e.as_dict() for e in self.examples], "n_samples": self.n_samples,
                "n_consistent": self.n_consistent, "n_unique": self.n_unique,
                "candidates": [{"program": c.program, "logprob": round(c.logprob, 4),
                                "probability": round(c.probability, 4), "matches": c.matches, "count": c.count}
                               for c in self.candidates]}


@dataclass
class Suggestion:
    example: Example
    speaker_probability: float  # S1(u* | h*) among the candidate examples
    assumed_program: str  # h*: the listener's current top guess, which the label follows
    n_programs: int  # |H|, the listener's consistent candidates (h* included)
    n_candidates: int  # |U|
    remaining: int  # programs in H still consistent once the example is added
    method: str = "rsa-s1-over-sampled-examples"
    note: str = field(default="No speaker model: candidate examples come from our example sampler run over the "
                              "listener's candidate programs; S1 picks the one that best singles out h*.")


def _check_int(name: str, value, low: int, high: int) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise UserInputError(f"{name} must be a whole number between {low} and {high}.") from None
    if not low <= number <= high:
        raise UserInputError(f"{name} is {number}; choose a value between {low} and {high}.")
    return number


class PraxPipeline:
    """A ByT5 listener: ``PraxPipeline.from_pretrained(folder)(examples) -> SynthesisResult``."""

    def __init__(self, model, device: str = "cpu", dtype: torch.dtype = torch.float32, name: str = "",
                 max_batch: int = 1024):
        self.model = model
        self.device = device
        self.dtype = dtype
        self.name = name
        self.max_batch = max_batch  # sequences per generate() call
        self.max_new_tokens = MAX_NEW_TOKENS  # the trainer lowers this: its programs are at most 30 characters

    @classmethod
    def from_pretrained(cls, path: str | Path, device: str | None = None, dtype: torch.dtype | None = None):
        from shared.device import pick_device, pick_dtype

        device = device or pick_device()
        dtype = dtype or pick_dtype(device)
        path = Path(path)
        return cls(load_listener(path, device=device, dtype=dtype), device=device, dtype=dtype, name=path.name)

    def memory_bytes(self) -> int:
        return sum(p.numel() * p.element_size() for p in self.model.parameters())

    # ------------------------------------------------------------ sampling

    def _encode(self, specs: Sequence[Sequence[Example]]) -> tuple[torch.Tensor, torch.Tensor]:
        rows = [encode_listener_input(spec) for spec in specs]
        width = max(map(len, rows))
        ids = torch.full((len(rows), width), PAD_ID, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, row in enumerate(rows):
            ids[i, :len(row)] = torch.tensor(row)
            mask[i, :len(row)] = 1
        return ids.to(self.device), mask.to(self.device)

    @torch.inference_mode()
    def _generate(self, specs: Sequence[Sequence[Example]], n: int) -> list[list[tuple[str, float]]]:
        ids, mask = self._encode(specs)
        out = self.model.generate(
            input_ids=ids, attention_mask=mask, do_sample=True, top_p=TOP_P, top_k=TOP_K, temperature=1.0,
            num_beams=1, num_return_sequences=n, max_new_tokens=self.max_new_tokens, decoder_start_token_id=PROGRAM_ID,
            eos_token_id=EOS_ID, pad_token_id=PAD_ID, return_dict_in_generate=True, output_logits=True,
        )
        tokens = out.sequences[:, 1:]  # drop <extra_id_124>
        logits = torch.stack(out.logits, dim=1).float()  # raw (unwarped) logits: the model's own probabilities
        logp = torch.log_softmax(logits, dim=-1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
        # count every token up to and including the first </s>; padding after it is not the model's choice
        finished_before = torch.cumsum((tokens == EOS_ID).long(), dim=1) - (tokens == EOS_ID).long()
        logp = (logp * (finished_before == 0)).sum(dim=1).tolist()
        tokens = tokens.tolist()
        return [[(decode_program(tokens[i * n + j]), logp[i * n + j]) for j in range(n)] for i in range(len(specs))]

    def sample_programs(self, specs: Sequence[Sequence[Example]], num_samples: int,
                        seed: int | None = None) -> list[list[tuple[str, float]]]:
        """``num_samples`` (program, summed log-prob) samples per spec, batched across specs."""
        if seed is not None:
            torch.manual_seed(seed)
        results: list[list[tuple[str, float]]] = [[] for _ in specs]
        per_call = max(1, min(num_samples, self.max_batch))
        specs_per_call = max(1, self.max_batch // per_call)
        for start in range(0, len(specs), specs_per_call):
            group = list(range(start, min(len(specs), start + specs_per_call)))
            remaining = num_samples
            while remaining > 0:
                n = min(per_call, remaining)
                for i, samples in zip(group, self._generate([specs[i] for i in group], n), strict=True):
                    results[i].extend(samples)
                remaining -= n
        return results

    # ------------------------------------------------------------ synthesis

    @staticmethod
    def rank(examples: Sequence[Example], samples: Sequence[tuple[str, float]], k: int) -> SynthesisResult:
        """Consistency filter -> de-duplicate -> sort by summed log-probability -> top-k."""
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
        ranked = sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))
        top = max((lp for _, lp in ranked), default=0.0)
        total = sum(math.exp(lp - top) for _, lp in ranked)
        candidates = [
            Candidate(program=p, logprob=lp, probability=math.exp(lp - top) / total, count=counts[p],
                      matches=[dsl.matches(p, ex.string) for ex in examples])
            for p, lp in ranked[:k]
        ]
        return SynthesisResult(list(examples), candidates, len(samples), n_consistent, len(ranked))

    def synthesize_batch(self, specs: Sequence[Sequence], k: int = 10, num_samples: int = DEFAULT_SAMPLES,
                         seed: int | None = None, validate: bool = True) -> list[SynthesisResult]:
        k = _check_int("k (how many guesses)", k, 1, MAX_K)
        num_samples = _check_int("The number of samples", num_samples, 1, MAX_SAMPLES)
        specs = [dsl.validate_examples(s) if validate else list(s) for s in specs]
        samples = self.sample_programs(specs, num_samples, seed=seed)
        return [self.rank(spec, s, k) for spec, s in zip(specs, samples, strict=True)]

    def __call__(self, examples: Sequence, k: int = 10, num_samples: int = DEFAULT_SAMPLES,
                 seed: int | None = None) -> SynthesisResult:
        return self.synthesize_batch([examples], k=k, num_samples=num_samples, seed=seed)[0]

    # ------------------------------------------------------------ informative examples

    def suggest_example(self, examples: Sequence, num_samples: int = 100, seed: int | None = 0,
                        positives_per_program: int = 3, negatives: int = 40, max_programs: int = 30) -> Suggestion:
        """The next example that best singles out the listener's top guess h* among its candidates (RSA S1).

        H = the listener's consistent, de-duplicated candidates (h* = top-1, last row). U = strings from our example
        sampler over the candidates (positives of each) plus random strings, labelled by h*, minus strings already
        given. u* = argmax_u S1(u | h*) over M[h, u] = 1[h agrees with u].
        """
        examples = dsl.validate_examples(examples)
        result = self(examples, k=max_programs, num_samples=num_samples, seed=seed)
        if not result.candidates:
            raise UserInputError("The listener found no regex consistent with these examples, so there is no guess "
                                 "to refine; add a simpler example or raise the number of samples.")
        programs = [c.program for c in result.candidates]
        target = programs[0]
        rng = random.Random(seed)
        used = {ex.string for ex in examples}
        strings: list[str] = []
        for program in programs:
            strings.extend(dsl.sample_positives(program, rng, positives_per_program))
        strings.extend(dsl.sample_negatives(target, rng, negatives))
        strings = [s for s in dict.fromkeys(strings) if s not in used]
        if not strings:
            raise UserInputError("No new example string could be generated for the current guess; "
                                 "add one of your own.")
        utterances = [Example(s, "+" if dsl.matches(target, s) else "-") for s in strings]
        hypotheses = programs[1:] + [target]
        matrix = np.array([[dsl.matches(h, u.string) == u.positive for u in utterances] for h in hypotheses])
        choice = rsa.choose_next(matrix)
        s1 = rsa.speaker(rsa.literal_listener(matrix))[-1]
        chosen = utterances[choice]
        return Suggestion(example=chosen, speaker_probability=float(s1[choice]), assumed_program=target,
                          n_programs=len(hypotheses), n_candidates=len(utterances),
                          remaining=int(matrix[:, choice].sum()))
