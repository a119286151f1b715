"""PraX listener inference, UI-free: examples in, ranked regexes out (fact sheet, "Inference defaults").

Official recipe: draw N samples (``do_sample``, top_p 0.9, temperature 1, max_new_tokens 128, no beams) with the
decoder started from ``<extra_id_124>``, keep the samples that full-match-agree with every example (timeout 1 s),
de-duplicate, and rank by summed token log-probability. Returns the top-k with their scores.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from apps.prax import checks, dsl, ranking, rsa, search
from apps.prax.checks import DEFAULT_K, DEFAULT_SAMPLES, SUGGEST_SAMPLES
from apps.prax.dsl import Example
from apps.prax.model import PROGRAM_CHARS_FIELD, load_listener
from apps.prax.ranking import Candidate, PraxOutput  # noqa: F401 (the pipeline's output types, as before)
from apps.prax.tokens import EOS_ID, PAD_ID, PROGRAM_ID, decode_program, encode_listener_input, encode_program
from shared.bounded import request_memory_bytes
from shared.errors import UserInputError
from shared.pipeline import Callback, Pipeline, PipelineOutput

TOP_P = 0.9
TOP_K = 50  # transformers' generation default, which upstream inherited alongside top_p
MAX_NEW_TOKENS = 128
SEARCHED = 32  # the search's best regexes that the listener scores and ranks with its own samples


@dataclass(frozen=True)
class PraxSuggestion(PipelineOutput):
    example: Example
    speaker_probability: float  # S1(u* | h*) among the candidate examples
    assumed_program: str  # h*: the listener's current top guess, which the label follows
    n_programs: int  # |H|, the listener's consistent candidates (h* included)
    n_candidates: int  # |U|
    remaining: int  # programs in H still consistent once the example is added
    method: str = "rsa-s1-over-sampled-examples"
    note: str = ("No speaker model: candidate examples come from our example sampler run over the listener's "
                 "candidate programs; S1 picks the one that best singles out h*.")


def weights_name(path: Path) -> str:
    """The weight set a folder holds: its name, or for a Hub cache snapshot (``models--org--name/snapshots/<sha>``)
    the repo's name, which is the weight set's name for every official PraX listener."""
    if path.parent.name == "snapshots" and path.parent.parent.name.startswith("models--"):
        return path.parent.parent.name.split("--")[-1]
    return path.name


class PraxPipeline(Pipeline):
    """A ByT5 listener: ``PraxPipeline.from_pretrained(folder)(examples) -> PraxOutput``."""

    output_class = PraxOutput
    components = ("model",)
    suggest_samples = SUGGEST_SAMPLES

    def __init__(self, model, device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32,
                 name: str = "", max_batch: int = 1024):
        self.model = model
        self.device = device
        self.dtype = dtype
        self.name = name
        self.max_batch = max_batch  # sequences per generate() call
        self.max_new_tokens = MAX_NEW_TOKENS  # the trainer lowers this: its programs are at most 30 characters

    @classmethod
    def from_pretrained(cls, path: str | Path, *, device: str | torch.device = "cpu",
                        dtype: torch.dtype = torch.float32) -> PraxPipeline:
        path = Path(path)
        pipe = cls(load_listener(path, device=device, dtype=dtype), device=device, dtype=dtype,
                   name=weights_name(path))
        trained_on = getattr(pipe.model.config, PROGRAM_CHARS_FIELD, None)  # our listeners record it; upstream's not
        if trained_on:
            pipe.max_new_tokens = min(MAX_NEW_TOKENS, int(trained_on) + 10)  # as our trainer samples them
        return pipe

    check_inputs = staticmethod(checks.check_inputs)  # torch-free: apps/prax/checks.py

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

    def sequence_bytes(self, input_tokens: int) -> int:
        """Working memory of one sampled sequence over ``input_tokens`` listener input tokens, an upper estimate:
        generate() copies the encoder's output for every sequence and caches every decoder layer's cross-attention
        keys and values over it, and keeps each step's logits (in float32)."""
        config = self.model.config
        cross_kv = config.num_decoder_layers * 2 * config.num_heads * config.d_kv
        width = self.dtype.itemsize
        per_sequence = input_tokens * (config.d_model + cross_kv) * width
        per_sequence += self.max_new_tokens * (cross_kv * width + config.vocab_size * 4 * 2)
        return 2 * per_sequence  # activations and temporaries beside what stays

    def encoder_bytes(self, input_tokens: int) -> int:
        """Working memory of encoding one spec, an upper estimate: T5 attention holds the relative position bias and
        each layer's scores and their softmax, each ``num_heads x input_tokens^2`` (470 MB at 3,062 tokens for the
        tiny listener, whatever the number of samples)."""
        return 4 * self.model.config.num_heads * input_tokens**2 * max(self.dtype.itemsize, 4)  # softmax in float32

    def batch_limit(self, input_tokens: int) -> int:
        """Sequences per generate() call: ``max_batch``, fewer where their memory would pass the request budget."""
        room = request_memory_bytes() - self.encoder_bytes(input_tokens)
        fits = max(0, room) // self.sequence_bytes(input_tokens)
        if fits < 1:
            raise UserInputError("These examples are too long for one listener pass within this hub's memory "
                                 "budget per request; use fewer or shorter examples.", argument="examples")
        return min(self.max_batch, fits)

    def calls(self, specs: Sequence[Sequence[Example]], num_samples: int) -> list[tuple[list[int], int]]:
        """``_plan`` for these specs, each call within the request's memory budget (``batch_limit``)."""
        longest = max((len(encode_listener_input(spec)) for spec in specs), default=1)
        return self._plan(len(specs), num_samples, self.batch_limit(longest))

    def _plan(self, n_specs: int, num_samples: int, max_batch: int | None = None) -> list[tuple[list[int], int]]:
        """The generate() calls that draw ``num_samples`` per spec: (spec indices, samples each), at most
        ``max_batch`` sequences per call (default ``self.max_batch``)."""
        max_batch = max_batch or self.max_batch
        per_call = max(1, min(num_samples, max_batch))
        specs_per_call = max(1, max_batch // per_call)
        calls = []
        for start in range(0, n_specs, specs_per_call):
            group = list(range(start, min(n_specs, start + specs_per_call)))
            for done in range(0, num_samples, per_call):
                calls.append((group, min(per_call, num_samples - done)))
        return calls

    def sample_programs(self, specs: Sequence[Sequence[Example]], num_samples: int, seed: int | None = None, *,
                        callback: Callback | None = None, extra_steps: int = 0) -> list[list[tuple[str, float]]]:
        """``num_samples`` (program, summed log-prob) samples per spec, batched across specs; ``callback(step,
        total)`` after each generate() call (``extra_steps`` more are the caller's, counted in ``total``)."""
        if seed is not None:
            torch.manual_seed(seed)
        results: list[list[tuple[str, float]]] = [[] for _ in specs]
        calls = self.calls(specs, num_samples)
        for step, (group, n) in enumerate(calls, 1):
            for i, samples in zip(group, self._generate([specs[i] for i in group], n), strict=True):
                results[i].extend(samples)
            if callback is not None:
                callback(step, len(calls) + extra_steps)
        return results

    # ------------------------------------------------------------ synthesis

    @torch.inference_mode()
    def score_programs(self, examples: Sequence[Example], programs: Sequence[str]) -> list[float]:
        """Each program's summed log-probability (its bytes and ``</s>``) under the listener given ``examples``: the
        score the listener's own sample of it would carry. The examples are encoded once, then one teacher-forced
        decoder pass for all of the programs."""
        if not programs:
            return []
        ids, mask = self._encode([examples])
        targets = [encode_program(p) for p in programs]
        target = torch.full((len(targets), max(map(len, targets))), PAD_ID, dtype=torch.long)
        for i, row in enumerate(targets):
            target[i, :len(row)] = torch.tensor(row)
        decoder = torch.cat([torch.full((len(targets), 1), PROGRAM_ID, dtype=torch.long), target[:, :-1]], dim=1)
        target, decoder = target.to(self.device), decoder.to(self.device)
        encoded = self.model.get_encoder()(input_ids=ids, attention_mask=mask).last_hidden_state  # once for all
        logits = self.model(encoder_outputs=(encoded.expand(len(targets), -1, -1),),
                            attention_mask=mask.expand(len(targets), -1), decoder_input_ids=decoder).logits.float()
        logp = torch.log_softmax(logits, dim=-1).gather(-1, target.unsqueeze(-1)).squeeze(-1)
        return (logp * (target != PAD_ID)).sum(dim=1).tolist()

    def searched(self, examples: Sequence[Example]) -> list[tuple[str, float, float]]:
        """The search's best consistent regexes for ``examples`` (at most ``SEARCHED``): (program, this listener's
        log-probability of it, the search's score)."""
        found = search.scored(examples)[:SEARCHED]
        listener = self.score_programs(examples, [program for program, _ in found])
        return [(program, logprob, score) for (program, score), logprob in zip(found, listener, strict=True)]

    rank = staticmethod(ranking.rank)  # torch-free: apps/prax/ranking.py

    def synthesize_batch(self, specs: Sequence[Sequence], k: int = DEFAULT_K, num_samples: int = DEFAULT_SAMPLES,
                         seed: int | None = None, validate: bool = True, *, callback: Callback | None = None,
                         search: bool = True) -> list[PraxOutput]:
        """One ``PraxOutput`` per spec, sampled in shared batches; ``validate=False`` for specs already checked
        (evaluation reads them from a spec file); ``search=False``: the listener's samples alone, ranked as upstream
        (what evaluation and benchmarks compare with). Steps: the generate() calls, then ranking."""
        if validate:
            checked = [self.check_inputs(spec, k=k, num_samples=num_samples) for spec in specs]
            specs = [examples for examples, _, _ in checked]
            k, num_samples = checked[0][1:] if checked else (k, num_samples)
        samples = self.sample_programs(specs, num_samples, seed=seed, callback=callback, extra_steps=1)
        # Never empty-handed where the search reads the positives: the listener ranks its samples with the search's
        # regexes.
        results = [self.rank(spec, drawn, k, self.name, self.searched(spec) if search else ())
                   for spec, drawn in zip(specs, samples, strict=True)]
        if callback is not None:
            total = len(self.calls(specs, num_samples)) + 1
            callback(total, total)
        return results

    def __call__(self, examples: Sequence, k: int = DEFAULT_K, num_samples: int = DEFAULT_SAMPLES,
                 seed: int | None = None, *, callback: Callback | None = None) -> PraxOutput:
        examples, k, num_samples = self.check_inputs(examples, k=k, num_samples=num_samples)
        return self.synthesize_batch([examples], k=k, num_samples=num_samples, seed=seed, validate=False,
                                     callback=callback)[0]

    # ------------------------------------------------------------ informative examples

    def suggest_example(self, examples: Sequence, num_samples: int = suggest_samples, seed: int | None = 0,
                        positives_per_program: int = 3, negatives: int = 40, max_programs: int = 30,
                        callback: Callback | None = None) -> PraxSuggestion:
        """The next example that best singles out the listener's top guess h* among its candidates (RSA S1).

        H = the listener's consistent, de-duplicated candidates (h* = top-1, last row). U = strings from our example
        sampler over the candidates (positives of each) plus random strings, labelled by h*, minus strings already
        given. u* = argmax_u S1(u | h*) over M[h, u] = 1[h agrees with u].
        """
        result = self(examples, k=max_programs, num_samples=num_samples, seed=seed, callback=callback)
        if not result.candidates:
            raise UserInputError("The listener found no regex consistent with these examples, so there is no guess "
                                 "to refine; add a simpler example or raise the number of samples.",
                                 argument="examples")
        programs = [c.program for c in result.candidates]
        target = programs[0]
        rng = random.Random(seed)
        used = {ex.string for ex in result.examples}
        strings: list[str] = []
        for program in programs:
            strings.extend(dsl.sample_positives(program, rng, positives_per_program))
        strings.extend(dsl.sample_negatives(target, rng, negatives))
        strings = [s for s in dict.fromkeys(strings) if s not in used]
        if not strings:
            raise UserInputError("No new example string could be generated for the current guess; "
                                 "add one of your own.", argument="examples")
        utterances = [Example(s, "+" if dsl.matches(target, s) else "-") for s in strings]
        hypotheses = programs[1:] + [target]
        matrix = np.array([[dsl.matches(h, u.string) == u.positive for u in utterances] for h in hypotheses])
        choice = rsa.choose_next(matrix)
        s1 = rsa.speaker(rsa.literal_listener(matrix))[-1]
        chosen = utterances[choice]
        return PraxSuggestion(example=chosen, speaker_probability=float(s1[choice]), assumed_program=target,
                              n_programs=len(hypotheses), n_candidates=len(utterances),
                              remaining=int(matrix[:, choice].sum()))
