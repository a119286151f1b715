"""Beam search for the caption decoder, with a KV cache and each image's own tag encoding.

Scoring follows the Hugging Face beam search the official code runs on (transformers 4.46.3,
``early_stopping=False``, length penalty 1): log-softmax scores, [SEP] banned below ``min_length``, 2*beams
candidates per image, a finished hypothesis scored by its summed log-probability over the number of generated
tokens (its [SEP] included), and a search that stops when no open beam can beat the worst kept hypothesis.
Tests compare token ids with outputs recorded from 4.46.3; transformers 5.x's rewrite stops differently at times.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from apps.tag2text.bert import BertLMHeadModel


@dataclass
class _Hypotheses:
    num_beams: int
    beams: list[tuple[float, list[int]]] = field(default_factory=list)
    worst: float = 1e9

    def add(self, tokens: list[int], score: float) -> None:
        if len(self.beams) < self.num_beams or score > self.worst:
            self.beams.append((score, tokens))
            if len(self.beams) > self.num_beams:
                ranked = sorted((s, i) for i, (s, _) in enumerate(self.beams))
                del self.beams[ranked[0][1]]
                self.worst = ranked[1][0]
            else:
                self.worst = min(score, self.worst)

    def is_done(self, best_sum_logprobs: float, generated: int) -> bool:
        return len(self.beams) >= self.num_beams and self.worst >= best_sum_logprobs / generated

    def best(self) -> list[int]:
        return sorted(self.beams, key=lambda b: b[0])[-1][1]


@torch.inference_mode()
def beam_search(
    decoder: BertLMHeadModel,
    encoder_states: torch.Tensor,
    prompt_ids: list[int],
    *,
    num_beams: int,
    max_length: int,
    min_length: int,
    eos_token_id: int,
    pad_token_id: int = 0,
    use_cache: bool = True,
    callback: Callable[[int, int], None] | None = None,
) -> list[list[int]]:
    """Token ids (prompt included, [SEP] excluded) of the best caption for each row of ``encoder_states``.

    ``use_cache=False`` re-runs the whole prefix and re-projects the cross-attention keys/values at every step
    (what the official code does under current transformers); it exists to measure the cache and to test that
    both give the same captions. ``callback(step, total)`` follows each step (``total`` = max_length - prompt).
    """
    batch, device = encoder_states.shape[0], encoder_states.device
    prompt_len = len(prompt_ids)
    rows_total = batch * num_beams
    ids = torch.tensor(prompt_ids, device=device).expand(rows_total, -1).clone()
    logits = past = step = None
    if use_cache:
        logits, past, step, cross_kv = _prefill(decoder, encoder_states, ids, num_beams, max_length)
        beam_states = None
    else:
        cross_kv, beam_states = None, encoder_states.repeat_interleave(num_beams, 0)
    beam_scores = torch.zeros(batch, num_beams, device=device)
    beam_scores[:, 1:] = -1e9  # all beams start identical: only the first may expand at step one
    beam_scores = beam_scores.view(-1)
    hyps = [_Hypotheses(num_beams) for _ in range(batch)]
    done = [False] * batch
    total_steps = max_length - prompt_len
    while True:
        cur_len = ids.shape[1]
        if logits is None:  # (the prompt's logits were computed above)
            if step is not None:
                logits = step(ids[:, -1:], cross_kv, past)
            else:  # no cache: the whole prefix again; a cache but no fused projection: the general forward
                logits, _ = decoder(ids if past is None else ids[:, -1:], cross_kv, past, beam_states)
        logprobs = torch.log_softmax(logits.float(), dim=-1)
        logits = None
        if cur_len < min_length:
            logprobs[:, eos_token_id] = float("-inf")
        vocab = logprobs.shape[-1]
        scores = (logprobs + beam_scores[:, None]).view(batch, num_beams * vocab)
        top_scores, top_idx = scores.topk(2 * num_beams, dim=1)
        top_tokens, top_beams = (top_idx % vocab).tolist(), (top_idx // vocab).tolist()
        next_scores, next_tokens, next_rows = _choose(
            ids, hyps, done, top_tokens, top_beams, top_scores.tolist(), generated=cur_len + 1 - prompt_len,
            eos_token_id=eos_token_id, pad_token_id=pad_token_id)
        rows = torch.tensor(next_rows, device=device)
        beam_scores = torch.tensor(next_scores, device=device)
        ids = torch.cat([ids[rows], torch.tensor(next_tokens, device=device).view(-1, 1)], dim=1)
        if past is not None:
            past.reorder(next_rows)
        if callback is not None:
            callback(ids.shape[1] - prompt_len, total_steps)
        if all(done) or ids.shape[1] >= max_length:
            break
    for b in range(batch):
        if not done[b]:
            for row in range(b * num_beams, (b + 1) * num_beams):
                hyps[b].add(ids[row].tolist(), beam_scores[row].item() / (ids.shape[1] - prompt_len))
    return [h.best() for h in hyps]


def _prefill(decoder: BertLMHeadModel, encoder_states: torch.Tensor, ids: torch.Tensor, num_beams: int,
             max_length: int) -> tuple:
    """The cached start: the prompt's logits for every beam, the cache they continue from, the one-token step and
    the cross-attention keys/values of every beam. Cross-attention keys/values depend only on the tag encoding, so
    they are projected once; every beam of an image starts from the same prompt, so the prompt runs once per image
    and each beam gets a copy of its keys/values (in a cache preallocated for the whole caption, written in place
    at each step)."""
    per_image = decoder.cross_key_values(encoder_states)
    cross_kv = [(k.repeat_interleave(num_beams, 0), v.repeat_interleave(num_beams, 0)) for k, v in per_image]
    prompt_cache = decoder.new_cache(encoder_states.shape[0], max_length, encoder_states)
    logits, _ = decoder(ids[::num_beams], per_image, prompt_cache)
    return (logits.repeat_interleave(num_beams, 0), prompt_cache.repeat_rows(num_beams), decoder.caption_step(),
            cross_kv)


def _choose(ids: torch.Tensor, hyps: list[_Hypotheses], done: list[bool], top_tokens: list[list[int]],
            top_beams: list[list[int]], top_scores: list[list[float]], *, generated: int, eos_token_id: int,
            pad_token_id: int) -> tuple[list[float], list[int], list[int]]:
    """One step's choice for every image still decoding, from its 2 × num_beams best continuations: an [SEP] among
    the top num_beams finishes a caption (kept in ``hyps``); the others fill the image's beams. Marks images whose
    captions can no longer improve as ``done``; returns each row's score, next token and the row it continues."""
    batch, num_beams = len(hyps), ids.shape[0] // len(hyps)
    rows_total = batch * num_beams
    next_scores, next_tokens = [0.0] * rows_total, [pad_token_id] * rows_total
    next_rows = [row - row % num_beams for row in range(rows_total)]  # finished images: any row of their own
    for b in range(batch):
        if done[b]:
            continue
        kept = 0
        for rank in range(2 * num_beams):
            token, row, score = top_tokens[b][rank], b * num_beams + top_beams[b][rank], top_scores[b][rank]
            if token == eos_token_id:
                if rank < num_beams:  # an [SEP] outside the top beams is not a finished caption
                    hyps[b].add(ids[row].tolist(), score / generated)
            else:
                slot = b * num_beams + kept
                next_scores[slot], next_tokens[slot], next_rows[slot] = score, token, row
                kept += 1
            if kept == num_beams:
                break
        done[b] = hyps[b].is_done(max(top_scores[b]), generated)
    return next_scores, next_tokens, next_rows
