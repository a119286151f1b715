"""``CodeSagePipeline``: search code by meaning with the official CodeSage embeddings, and embed code for agents.

A search embeds the query and every snippet of the corpus (``apps/codesage/corpus.py``) as the paper's evaluation
does (``tokenize(text)[: max - 1] + [eos]``, the mean of the last hidden states over the tokens, L2-normalised) and
ranks the snippets by cosine similarity. Beyond the official scripts: sequences go through the encoder sorted by
length instead of each padded to the longest allowed, and a snippet's embedding is kept (``CACHE_SNIPPETS``, keyed by
its tokens), so a second question about the same code embeds only the question.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import torch

from apps.codesage import checks
from apps.codesage.model import embed_sequences, load_encoder
from apps.codesage.tokenizer import CodeSageTokenizer
from shared.pipeline import Callback, Pipeline, PipelineOutput

CACHE_SNIPPETS = 8000  # embeddings kept (1,024 floats each at codesage-small's width: 32 MB)
# New tokens embedded per search: about a minute of codesage-small on 2 CPU cores, which embedded 830-970 tokens a
# second (BENCHMARKS.md, CodeSage: 151,758 tokens in 183 s); a GPU's budget is the corpus limits' own.
TOKEN_BUDGET = {"cpu": 50_000, "cuda": 2_000_000}


@dataclass(frozen=True)
class Match:
    file: str  # a snippet's file ("path" would read as a file to download to gradio_client)
    start: int  # first line, from 1
    end: int  # last line
    score: float  # cosine similarity to the query, -1 to 1
    code: str


@dataclass(frozen=True)
class CodeSageOutput(PipelineOutput):
    matches: tuple[Match, ...]  # best first
    searched: int  # snippets compared
    embedded: int  # of them embedded now (the others were kept from an earlier search)
    notes: tuple[str, ...]


@dataclass(frozen=True)
class Embedding(PipelineOutput):
    embedding: tuple[float, ...]  # unit length
    dimensions: int
    tokens: int  # read, the end-of-sequence token included
    truncated: bool  # the text had more tokens than the model reads


class CodeSagePipeline(Pipeline):
    output_class = CodeSageOutput
    components = ("encoder",)
    check_inputs = staticmethod(checks.check_inputs)

    def __init__(self, encoder, tokenizer: CodeSageTokenizer, device="cpu", dtype=torch.float32):
        self.encoder, self.tokenizer = encoder, tokenizer
        self.device, self.dtype = torch.device(device), dtype
        self.max_tokens = encoder.config.max_position_embeddings
        self.token_budget = TOKEN_BUDGET["cuda" if self.device.type == "cuda" else "cpu"]
        self._cache: OrderedDict[bytes, torch.Tensor] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def from_pretrained(cls, path, *, device="cpu", dtype=torch.float32) -> CodeSagePipeline:
        folder = Path(path)
        return cls(load_encoder(folder, dtype).to(device), CodeSageTokenizer(folder), device, dtype)

    def _embed(self, sequences: list[tuple[int, ...]], keys: list[bytes],
               callback: Callback | None = None) -> tuple[torch.Tensor, int]:
        """Unit embeddings of ``sequences`` (rows in order; ``keys`` theirs, ``_key``), from the cache where kept; and
        how many were new."""
        with self._lock:
            kept = {k: self._cache[k] for k in keys if k in self._cache}
        new = list(dict.fromkeys(k for k in keys if k not in kept))
        if new:
            first = {k: s for k, s in zip(keys, sequences, strict=True)}
            vectors = embed_sequences(self.encoder, [first[k] for k in new], self.tokenizer.pad_id,
                                      callback=callback)
            kept.update(zip(new, vectors, strict=True))
            with self._lock:
                for key, vector in zip(new, vectors, strict=True):
                    self._cache[key] = vector
                    self._cache.move_to_end(key)
                while len(self._cache) > CACHE_SNIPPETS:
                    self._cache.popitem(last=False)
        return torch.stack([kept[k] for k in keys]), len(new)

    def embed(self, code: str) -> Embedding:
        """One text's embedding (code or words), as the search compares them."""
        encoded = self.tokenizer.encode(checks.check_query(code, "code"), self.max_tokens)
        vector, _ = self._embed([encoded.ids], [_key(encoded.ids)])
        return Embedding(tuple(vector[0].tolist()), vector.shape[1], len(encoded.ids), encoded.truncated)

    def _within_budget(self, encoded: list, keys: list[bytes]) -> list[int]:
        """The snippets searched now: every one embedded before, and the others in order while their tokens fit
        ``token_budget`` (the rest wait for the next question, when these are kept)."""
        with self._lock:
            kept = {i for i, key in enumerate(keys) if key in self._cache}
        chosen, spent = [], 0
        for i, e in enumerate(encoded):
            if i not in kept:
                if spent + len(e.ids) > self.token_budget:
                    continue
                spent += len(e.ids)
            chosen.append(i)
        return chosen

    def __call__(self, query, code=None, files=None, top_k=5, *, callback: Callback | None = None) -> CodeSageOutput:
        inputs = self.check_inputs(query, code, files, top_k)
        query_ids = self.tokenizer.encode(inputs.query, self.max_tokens)
        encoded = self.tokenizer.encode_batch([s.code for s in inputs.corpus.snippets], self.max_tokens)
        keys = [_key(e.ids) for e in encoded]
        searched = self._within_budget(encoded, keys)
        snippets = [inputs.corpus.snippets[i] for i in searched]
        vectors, embedded = self._embed([query_ids.ids, *(encoded[i].ids for i in searched)],
                                        [_key(query_ids.ids), *(keys[i] for i in searched)], callback)
        scores = vectors[1:] @ vectors[0]
        best = torch.argsort(scores, descending=True, stable=True)[: inputs.top_k].tolist()
        notes = list(inputs.corpus.notes)
        if len(searched) < len(encoded):
            notes.append(f"Searched {len(searched):,} of the {len(encoded):,} snippets: this server embeds at most "
                         f"{self.token_budget:,} new tokens per search. Ask again to search the rest (those "
                         "embedded now are kept).")
        if query_ids.truncated:
            notes.append(f"The query is longer than {self.max_tokens:,} tokens; its first {self.max_tokens:,} "
                         "were read.")
        cut_short = sum(encoded[i].truncated for i in searched)
        if cut_short:
            notes.append(f"{cut_short:,} snippet{'s are' if cut_short > 1 else ' is'} longer than "
                         f"{self.max_tokens:,} tokens; the first {self.max_tokens:,} of each were read.")
        matches = tuple(Match(snippets[i].path, snippets[i].start, snippets[i].end, round(float(scores[i]), 4),
                              snippets[i].code) for i in best)
        return CodeSageOutput(matches, len(snippets), embedded, tuple(notes))


def _key(ids: tuple[int, ...]) -> bytes:
    """A sequence's key in the kept embeddings."""
    return hashlib.sha256(torch.tensor(ids, dtype=torch.int64).numpy().tobytes()).digest()
