"""The Llama-2 tokenizer after 3D-MoLM's changes, reproducing the slow (legacy) ``LlamaTokenizer`` ids.

Changes (fact sheet): pad ``[PAD]`` = len(sp) (32000), special ``<mol>`` = len(sp) + 1 (32001), bos = eos = unk =
``</s>`` so every prompt starts with id 2; embeddings are resized to len(sp) + 2. transformers 5 no longer ships the
legacy slow tokenizer, so this reads ``tokenizer.model`` with sentencepiece directly and splits on the special
tokens the way the slow tokenizer did: each text piece between specials is encoded on its own, with
sentencepiece's dummy prefix (``<mol>.`` gives ``▁.``), and whitespace next to a special token is kept.
"""

from __future__ import annotations

import re
from pathlib import Path

from apps.molm3d.tasks import MOL_TOKEN

PAD_TOKEN = "[PAD]"
EOS_TOKEN = "</s>"


class MoLMTokenizer:
    def __init__(self, model_file: str | Path):
        import sentencepiece as spm

        self.sp = spm.SentencePieceProcessor(model_file=str(model_file))
        self.base_size = self.sp.get_piece_size()
        self.pad_token_id = self.base_size
        self.mol_token_id = self.base_size + 1
        self.eos_token_id = self.bos_token_id = self.unk_token_id = self.sp.piece_to_id(EOS_TOKEN)
        self.special = {PAD_TOKEN: self.pad_token_id, MOL_TOKEN: self.mol_token_id}
        for piece in ("<unk>", "<s>", EOS_TOKEN):  # the slow tokenizer's own added tokens
            self.special[piece] = self.sp.piece_to_id(piece)
        self._split = re.compile("(" + "|".join(re.escape(s) for s in sorted(self.special, key=len)[::-1]) + ")")

    def __len__(self) -> int:
        return self.base_size + 2

    def encode(self, text: str, add_bos: bool = True) -> list[int]:
        ids = [self.bos_token_id] if add_bos else []
        for chunk in self._split.split(text):
            if chunk in self.special:
                ids.append(self.special[chunk])
            elif chunk:
                ids.extend(self.sp.encode(chunk))
        return ids

    def decode(self, ids) -> str:
        """Like ``batch_decode(skip_special_tokens=True)`` then ``strip()``, as the official generate does."""
        skip = set(self.special.values())
        return self.sp.decode([int(i) for i in ids if int(i) not in skip and int(i) < self.base_size]).strip()
