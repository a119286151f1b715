"""CodeSage's tokenizer from its released files, read by ``tokenizers`` (no ``trust_remote_code``).

The official ``CodeSageTokenizer`` (remote code) is transformers' byte-level BPE ``GPT2Tokenizer`` over StarCoder's
vocabulary (``vocab.json``, ``merges.txt``: GPT-2's pre-tokenising pattern, no prefix space), with CodeSage's added
tokens (``tokenizer_config.json``'s ``added_tokens_decoder``; their text in the input is that one token) and the
end-of-sequence token appended. The paper's evaluation builds each sequence as ``tokenize(text)[: length - 1] +
[eos]`` and pads with ``pad_token_id`` (masked out): ``encode`` does the same, without padding.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

FILES = ("vocab.json", "merges.txt", "tokenizer_config.json", "special_tokens_map.json")


@dataclass(frozen=True)
class Encoded:
    ids: tuple[int, ...]  # the tokens, the end-of-sequence token last
    truncated: bool  # the text had more tokens than fit


class CodeSageTokenizer:
    def __init__(self, folder: str | Path):
        from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

        folder = Path(folder)
        missing = [name for name in FILES[:2] if not (folder / name).is_file()]
        if missing:
            from shared.errors import CheckpointError

            raise CheckpointError(f"{missing[0]} is missing from the weights folder; re-download the weights.")
        self.tokenizer = Tokenizer(models.BPE.from_file(str(folder / "vocab.json"), str(folder / "merges.txt")))
        self.tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        self.tokenizer.decoder = decoders.ByteLevel()
        config = _json(folder / "tokenizer_config.json")
        added = sorted(((int(i), t) for i, t in config.get("added_tokens_decoder", {}).items()), key=lambda x: x[0])
        for token_id, token in added:
            self.tokenizer.add_special_tokens([AddedToken(token["content"], special=True, normalized=False)])
            if self.tokenizer.token_to_id(token["content"]) != token_id:
                raise ValueError(f"tokenizer_config.json gives {token['content']!r} the id {token_id}; the vocabulary "
                                 f"has {self.tokenizer.token_to_id(token['content'])}")
        specials = {**config, **_json(folder / "special_tokens_map.json")}
        self.eos_id = self._id(specials, "eos_token")
        self.pad_id = self._id(specials, "pad_token")

    def _id(self, specials: dict, name: str) -> int:
        token = specials.get(name)
        content = token.get("content") if isinstance(token, dict) else token
        token_id = self.tokenizer.token_to_id(content) if isinstance(content, str) else None
        if token_id is None:
            raise ValueError(f"the tokenizer files name no {name} the vocabulary holds ({content!r})")
        return token_id

    def encode(self, text: str, max_tokens: int) -> Encoded:
        return self.encode_batch([text], max_tokens)[0]

    def encode_batch(self, texts: list[str], max_tokens: int) -> list[Encoded]:
        """The paper's sequences: at most ``max_tokens - 1`` tokens of each text, then the end-of-sequence token."""
        return [Encoded((*e.ids[: max_tokens - 1], self.eos_id), len(e.ids) > max_tokens - 1)
                for e in self.tokenizer.encode_batch(texts, add_special_tokens=False)]


def _json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
