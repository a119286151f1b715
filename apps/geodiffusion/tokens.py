"""Fast location-token encoding: CLIP BPE for the words, ``49408 + N`` for each ``<lN>``.

The official tokenizers carry 65,536 or 262,144 added tokens ``<l0>`` ... ``<l{Wb*Hb-1}>`` (added in order after
the 49,408-token CLIP vocabulary, so ``<lN>`` has id ``49408 + N``) and take seconds to load. Why splitting gives
the same ids as the official tokenizer:

- A tokenizer with added tokens first cuts the (normalised) text at every added-token match, then pre-tokenises
  and BPE-encodes each remaining piece separately; added tokens never take part in BPE merges. Cutting at ``<lN>``
  ourselves and BPE-encoding each piece on its own is the same computation; a word glued to a token (``car<l5>``)
  ends its piece, so it gets the end-of-word ``</w>`` form in both.
- CLIP's normaliser (NFC, whitespace runs -> one space, lowercase) and pre-tokeniser (a regex over letters, single
  digits and punctuation runs, whitespace dropped; the byte-level step's own regex never splits those pieces
  further) act locally, so normalising once and pre-tokenising per piece changes nothing.
- Only ``<lN>`` with ``N < Wb*Hb`` and no leading zero is an added token; ``<l05>`` or ``<l999999>`` stay text
  here as there. The added tokens are matched after normalisation (lowercasing), so ``<L5>`` is ``<l5>`` in
  transformers 5's tokenizers-backed CLIPTokenizer and here (the slow 4.25 class differed; the official code only
  writes lowercase).
- The sequence is ``[BOS] + ids + [EOS]`` padded with ``<|endoftext|>`` to 77 (diffusers calls the tokenizer with
  ``padding="max_length", max_length=77, truncation=True``); truncation keeps the first 75 content ids and then
  EOS, which is what we do, so overlong prompts lose the same tail tokens.

The BPE below is a plain reimplementation of CLIP's byte-level BPE (merge the lowest-ranked adjacent pair until
none is left), loaded straight from the checkpoint's ``tokenizer/vocab.json`` and ``merges.txt``.
"""

from __future__ import annotations

import json
import re as std_re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import regex

from shared.pipeline import PipelineOutput

if TYPE_CHECKING:
    from apps.geodiffusion.layout import GenerationConfig, Layout

BASE_VOCAB_SIZE = 49408
BOS_ID, EOS_ID = 49406, 49407
MODEL_MAX_LENGTH = 77
LOCATION_TOKEN = std_re.compile(r"<l(0|[1-9][0-9]*)>")
_PRETOKENIZE = regex.compile(
    r"""<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+""")
_WHITESPACE = regex.compile(r"\s+")


def _byte_characters() -> tuple[list[str], list[str]]:
    """Byte-level BPE's reversible byte -> printable character map: (indexed by byte, in vocabulary order)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    extra = [b for b in range(256) if b not in printable]
    table = {b: b for b in printable}
    table.update({b: 256 + i for i, b in enumerate(extra)})
    return [chr(table[b]) for b in range(256)], [chr(table[b]) for b in printable + extra]


BYTE_CHARS, VOCAB_BYTE_ORDER = _byte_characters()
BYTE_IDS = {c: i for i, c in enumerate(VOCAB_BYTE_ORDER)}


def normalize(text: str) -> str:
    """CLIP's normaliser in transformers: NFC, whitespace runs -> one space, lowercase."""
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFC", text)).lower()


class ClipBPE:
    """CLIP's byte-level BPE over a vocab.json/merges.txt pair (no special tokens added).

    In CLIP's vocabulary the ids follow from the merges: 256 byte characters, the same with ``</w>``, then one id
    per merge (``512 + rank``), then the two special tokens. When vocab.json looks like that (a spot check), ids
    come from the merge ranks and each distinct token is confirmed against the file text the first time it is
    produced (a substring search, no full parse); any disagreement switches to the fully parsed vocab.json.
    """

    def __init__(self, merges: list[str], vocab: dict[str, int] | None = None, vocab_text: str | None = None):
        self.merges = merges
        self.merge_ranks = dict(zip(merges, range(len(merges)), strict=True))  # "a b" -> rank
        self.vocab = vocab  # None: ids derived from ranks, confirmed against vocab_text
        self._vocab_text = vocab_text
        self._confirmed: set[str] = set()
        self._bpe = lru_cache(maxsize=65536)(self._bpe_uncached)
        self._encode_normalized = lru_cache(maxsize=4096)(self._encode_normalized_uncached)

    @classmethod
    def from_folder(cls, folder: str | Path) -> ClipBPE:
        folder = Path(folder)
        merges = (folder / "merges.txt").read_text(encoding="utf-8").rstrip("\n").split("\n")
        if merges and merges[0].startswith("#version"):
            del merges[0]
        vocab_text = (folder / "vocab.json").read_text(encoding="utf-8")
        if _has_clip_order(vocab_text, merges):
            return cls(merges, vocab_text=vocab_text)
        return cls(merges, vocab=json.loads(vocab_text))

    def full_vocab(self) -> dict[str, int]:
        return self.vocab if self.vocab is not None else derived_vocab(self.merges)

    def _bpe_uncached(self, word: str) -> tuple[int, ...]:
        parts = [*word[:-1], word[-1] + "</w>"]
        ids = [*(BYTE_IDS[c] for c in word[:-1]), 256 + BYTE_IDS[word[-1]]]
        ranks = self.merge_ranks
        while len(parts) > 1:
            best, best_rank = -1, None
            for i in range(len(parts) - 1):
                rank = ranks.get(parts[i] + " " + parts[i + 1])
                if rank is not None and (best_rank is None or rank < best_rank):
                    best, best_rank = i, rank
            if best < 0:
                break
            pair = (parts[best], parts[best + 1])
            merged, merged_ids, i = [], [], 0
            while i < len(parts):  # merge every occurrence of the best pair, left to right
                if i < len(parts) - 1 and (parts[i], parts[i + 1]) == pair:
                    merged.append(parts[i] + parts[i + 1])
                    merged_ids.append(2 * 256 + best_rank)
                    i += 2
                else:
                    merged.append(parts[i])
                    merged_ids.append(ids[i])
                    i += 1
            parts, ids = merged, merged_ids
        if self.vocab is None and self._vocab_text is not None:
            for part, index in zip(parts, ids, strict=True):
                if part not in self._confirmed:
                    if _json_entry(self._vocab_text, part) != index:
                        self.vocab = json.loads(self._vocab_text)  # not CLIP's order after all
                        self._encode_normalized.cache_clear()
                        break
                    self._confirmed.add(part)
        if self.vocab is not None:
            return tuple(self.vocab.get(p, EOS_ID) for p in parts)
        return tuple(ids)

    def encode(self, text: str) -> list[int]:
        return list(self._encode_normalized(normalize(text)))

    def _encode_normalized_uncached(self, text: str) -> tuple[int, ...]:
        ids: list[int] = []
        for piece in _PRETOKENIZE.findall(text):
            if piece in ("<|startoftext|>", "<|endoftext|>"):
                ids.append(BOS_ID if piece == "<|startoftext|>" else EOS_ID)
                continue
            ids.extend(self._bpe("".join(BYTE_CHARS[b] for b in piece.encode("utf-8"))))
        return tuple(ids)


def derived_vocab(merges: list[str]) -> dict[str, int]:
    """CLIP's vocabulary built from its merges (the order vocab.json has)."""
    tokens = VOCAB_BYTE_ORDER + [c + "</w>" for c in VOCAB_BYTE_ORDER] + [m.replace(" ", "") for m in merges]
    tokens += ["<|startoftext|>", "<|endoftext|>"]
    return {t: i for i, t in enumerate(tokens)}


def _has_clip_order(vocab_text: str, merges: list[str]) -> bool:
    """Spot-check vocab.json (byte characters, first/middle/last merge, specials) against the derived order."""
    if len(merges) != BASE_VOCAB_SIZE - 2 * 256 - 2:
        return False
    probes = {VOCAB_BYTE_ORDER[0]: 0, VOCAB_BYTE_ORDER[-1] + "</w>": 511, "<|startoftext|>": BOS_ID,
              "<|endoftext|>": EOS_ID}
    for rank in (0, 1, len(merges) // 2, len(merges) - 1):
        probes[merges[rank].replace(" ", "")] = 512 + rank
    return all(_json_entry(vocab_text, token) == index for token, index in probes.items())


def _json_entry(text: str, key: str) -> int | None:
    """The integer value of ``key`` in a flat JSON object's text, found with str.find (no full parse)."""
    for quoted in {json.dumps(key, ensure_ascii=False), json.dumps(key)}:
        start = 0
        while (pos := text.find(quoted, start)) >= 0:
            start = pos + len(quoted)
            rest = text[start:start + 24].lstrip()
            if rest.startswith(":"):
                digits = rest[1:].lstrip()
                end = len(digits) - len(digits.lstrip("0123456789"))
                return int(digits[:end]) if end else None
    return None


class LocationTokenizer:
    """Prompt -> the 77 input ids the official GeoDiffusion tokenizer gives, without loading its added tokens."""

    def __init__(self, bpe: ClipBPE, num_location_tokens: int, max_length: int = MODEL_MAX_LENGTH):
        self.bpe = bpe
        self.num_location_tokens = num_location_tokens
        self.max_length = max_length

    @classmethod
    def from_pretrained(cls, tokenizer_folder: str | Path, num_location_tokens: int) -> LocationTokenizer:
        """Load from a checkpoint's ``tokenizer/`` folder; checks that the ``<lN>`` ids are where expected."""
        folder = Path(tokenizer_folder)
        added = folder / "added_tokens.json"
        if added.is_file():
            text = added.read_text(encoding="utf-8")
            last = num_location_tokens - 1
            for n in (0, last // 2, last):
                if _json_entry(text, f"<l{n}>") != BASE_VOCAB_SIZE + n:
                    raise ValueError(f"{added} does not map <l{n}> to id {BASE_VOCAB_SIZE + n}; this is not a "
                                     f"GeoDiffusion tokenizer with {num_location_tokens} location tokens")
            if f'"<l{last + 1}>"' in text:
                raise ValueError(f"{added} has more than {num_location_tokens} location tokens")
        config = folder / "tokenizer_config.json"
        max_length = MODEL_MAX_LENGTH
        if config.is_file():
            max_length = int(json.loads(config.read_text(encoding="utf-8")).get("model_max_length", max_length))
            max_length = min(max_length, MODEL_MAX_LENGTH)
        return cls(ClipBPE.from_folder(folder), num_location_tokens, max_length)

    def content_ids(self, prompt: str) -> list[int]:
        """Ids without BOS/EOS/padding or truncation."""
        parts = LOCATION_TOKEN.split(normalize(prompt))  # text, number, text, number, ..., text
        encode = self.bpe._encode_normalized
        ids: list[int] = []
        text = parts[0]
        for i in range(1, len(parts), 2):
            n = int(parts[i])
            if n >= self.num_location_tokens:  # not an added token: stays part of the surrounding text
                text += f"<l{parts[i]}>" + parts[i + 1]
                continue
            ids.extend(encode(text))
            ids.append(BASE_VOCAB_SIZE + n)
            text = parts[i + 1]
        ids.extend(encode(text))
        return ids

    def encode(self, prompt: str, padding: bool = True) -> list[int]:
        """``[BOS] + ids[:max_length-2] + [EOS]``, padded with ``<|endoftext|>`` to ``max_length``."""
        ids = [BOS_ID, *self.content_ids(prompt)[: self.max_length - 2], EOS_ID]
        if padding:
            ids += [EOS_ID] * (self.max_length - len(ids))
        return ids

    def __call__(self, prompts: str | list[str]):
        """A ``[batch, 77]`` LongTensor (torch imported only here)."""
        import torch

        prompts = [prompts] if isinstance(prompts, str) else prompts
        return torch.tensor([self.encode(p) for p in prompts], dtype=torch.long)  # (B, 77) int64

    def overflow(self, prompt: str) -> int:
        """How many content tokens truncation drops from ``prompt``."""
        return max(0, len(self.content_ids(prompt)) - (self.max_length - 2))


def truncated_boxes(layout, config, tokenizer: LocationTokenizer, shuffle_seed: int | None = None) -> list[int]:
    """Layout indices of the boxes whose phrase does not fully fit in CLIP's 75 content tokens (prompt order)."""
    from apps.geodiffusion.layout import box_order, box_phrases

    phrases = box_phrases(layout, config)
    order = box_order(len(phrases), shuffle_seed)
    fields = {"camera": layout.camera, "timeofday": layout.timeofday, "weather": layout.weather}
    dropped = []
    for k, index in enumerate(order):
        prefix = config.prompt_template.format(bbox=" ".join(phrases[i] for i in order[:k + 1]), **fields)
        if tokenizer.overflow(prefix):
            dropped.append(index)
    return dropped


def cut_boxes_warning(layout: Layout, dropped) -> str:
    """The sentence about boxes whose tokens CLIP's 77-token limit cuts ("" when none is)."""
    if not dropped:
        return ""
    names = ", ".join(f"#{i + 1} ({layout.boxes[i].label})" for i in dropped)
    return (f"The prompt is longer than CLIP's 77 tokens, so box(es) {names} were cut and ignored by the model; "
            "use fewer boxes or shorter labels.")


NO_TOKENIZER = ("The {checkpoint} tokenizer is not on this server, so the token count and the boxes CLIP's 77-token "
                "limit would cut are unknown; the prompt itself is exact (it needs only the checkpoint's generation "
                "config).")


@dataclass(frozen=True)
class LayoutEncoding(PipelineOutput):
    """What the model reads for a layout, without any weights: the ``/encode_layout`` answer as ``to_dict()``."""

    checkpoint: str
    prompt: str  # the exact prompt (location tokens <lN> for each box's corners)
    layout: Layout  # the layout as checked, official format
    generation_config: str  # "checkpoint" (its generation_config.json here) or "released" (the published values)
    location_grid: tuple[int, int]  # location-token buckets per side (x, y)
    width: int
    height: int
    token_count: int | None = None  # CLIP tokens of the prompt with BOS and EOS, before truncation (None: no tokenizer)
    max_tokens: int = MODEL_MAX_LENGTH
    input_ids: tuple[int, ...] | None = None  # the 77 ids the text encoder reads (truncated, padded)
    dropped_boxes: tuple[int, ...] | None = None  # layout indices whose tokens the limit cuts (None: no tokenizer)
    warnings: tuple[str, ...] = ()


def encode_layout(layout: Layout, config: GenerationConfig, checkpoint: str, tokenizer: LocationTokenizer | None,
                  from_checkpoint: bool) -> LayoutEncoding:
    """The prompt, and with the checkpoint's tokenizer its token count, ids and cut boxes, for a checked layout."""
    from apps.geodiffusion.layout import encode_prompt

    prompt = encode_prompt(layout, config)
    common = {"checkpoint": checkpoint, "prompt": prompt, "layout": layout,
              "generation_config": "checkpoint" if from_checkpoint else "released",
              "location_grid": tuple(config.num_bucket_per_side), "width": config.width, "height": config.height}
    if tokenizer is None:
        return LayoutEncoding(**common, warnings=(NO_TOKENIZER.format(checkpoint=checkpoint),))
    dropped = tuple(truncated_boxes(layout, config, tokenizer))
    warning = cut_boxes_warning(layout, dropped)
    return LayoutEncoding(**common, token_count=len(tokenizer.content_ids(prompt)) + 2, max_tokens=tokenizer.max_length,
                          input_ids=tuple(tokenizer.encode(prompt)), dropped_boxes=dropped,
                          warnings=(warning,) if warning else ())
