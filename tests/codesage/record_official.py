"""Records what the official CodeSage code computes on the tiny checkpoint: tests/codesage/official_outputs.json.

Two steps, two environments (the official remote code imports ``Conv1D`` from ``transformers.modeling_utils``, which
today's transformers no longer has; our code does not run on that transformers):

1. In the project's environment, write the tiny checkpoint in ``codesage/codesage-small``'s layout
   (``tests.fixtures.tiny_codesage.write_checkpoint``, seed 0) and ``texts.json``, the texts recorded::

       PYTHONPATH=. python -m tests.codesage.record_official write /tmp/codesage-tiny

2. In a separate environment with transformers 4.46.3, torch and numpy, and a folder holding the official
   ``modeling_codesage.py`` and ``config_codesage.py`` (the remote code of ``codesage/codesage-small``), run the paper's
   evaluation path (amazon-science/CodeSage ``evaluation/utils.py`` and ``nl2code_search.py``) on those texts::

       /tmp/codesage-official/bin/python tests/codesage/record_official.py record /tmp/codesage-tiny \\
           --official /tmp/codesage-official/code

   That path: ``tokenizer.tokenize(text)[: LENGTH - 1] + [eos_token]``, converted to ids, padded with
   ``pad_token_id`` to ``LENGTH``; ``attention_mask = ids != pad_token_id``; ``model(input_ids, attention_mask,
   return_dict=True).pooler_output``, L2-normalised; scores are dot products. The tokenizer is transformers' slow
   ``GPT2Tokenizer`` over the folder's files (the official ``tokenization_codesage.py`` is that class with CodeSage's
   added tokens; it is not available offline). All texts go through the model as one batch.

Step 2 imports nothing from this project (only the standard library, numpy, safetensors, torch, transformers and
the official files).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

FIXTURE = Path(__file__).parent / "official_outputs.json"
LENGTH = 64  # the evaluation's code_length for this record: every sequence is padded to it
OFFICIAL_FILES = ("modeling_codesage.py", "config_codesage.py")
TOKENIZER_FILES = ("vocab.json", "merges.txt", "tokenizer_config.json", "special_tokens_map.json")
DIGITS = 7  # significant digits kept of each recorded float

TEXTS = {
    "python": '''def binary_search(items, target):
    """Return the index of target in the sorted list items, or -1."""
    low, high = 0, len(items) - 1
    while low <= high:
        middle = (low + high) // 2
        if items[middle] == target:
            return middle
''',
    "javascript": "function add(a, b) {\n  return a + b;\n}\n\nconst sorted = values.sort((x, y) => x - y);\n",
    "question": "How do I read a JSON file and print every element of the list in it?",
    "unicode": 'def grüße(名前):\n    return f"こんにちは, {名前}! 🎉 — ça va?"\n',
    "special_tokens": "print('<|endoftext|>')  # the end token, then a pad: <pad> and more<pad>text",
    "mask_token": "fill the <mask> in: x = <mask> + 1",
    "tabs_crlf": "if (x) {\r\n\treturn y;\r\n}\r\n",
    "spaces": "   leading and trailing spaces   \n\n",
    "x": "x",
    "empty": "",
    "long_java": " ".join(["public static int max(int[] values) { int best = values[0]; for (int v : values) "
                         "if (v > best) best = v; return best; }"] * 4),
}


def digest(arrays: dict[str, np.ndarray]) -> str:
    """sha256 over each array's name, shape and float32 bytes, in name order."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        value = np.ascontiguousarray(arrays[name], dtype=np.float32)
        h.update(f"{name}{value.shape}".encode())
        h.update(value.tobytes())
    return h.hexdigest()


def weights_digest(folder: Path) -> str:
    """One digest of model.safetensors' tensors and the tokenizer's files (what the outputs depend on)."""
    from safetensors.numpy import load_file

    h = hashlib.sha256(digest(load_file(str(Path(folder) / "model.safetensors"))).encode())
    for name in TOKENIZER_FILES:
        h.update(name.encode())
        h.update((Path(folder) / name).read_bytes())
    h.update((Path(folder) / "config.json").read_bytes())
    return h.hexdigest()


def rounded(values) -> list:
    """Nested lists of floats, each to ``DIGITS`` significant digits."""
    if isinstance(values, list):
        return [rounded(v) for v in values]
    return float(f"{values:.{DIGITS}g}")


def write(folder: Path) -> None:
    from tests.fixtures.tiny_codesage import write_checkpoint

    write_checkpoint(folder)
    (folder / "texts.json").write_text(json.dumps(TEXTS, ensure_ascii=False, indent=1), encoding="utf-8")
    print(f"wrote {folder}: weights {weights_digest(folder)[:12]}, {len(TEXTS)} texts")


def official_model(folder: Path, official: Path):
    """``CodeSageModel.from_pretrained(folder)`` through the official files in ``official``: (model, loading info).
    Used by ``record`` and by benchmarks/codesage_official.py."""
    sys.path.insert(0, str(official))  # the remote code imports its config as the top-level "config_codesage"
    from modeling_codesage import CodeSageModel

    model, info = CodeSageModel.from_pretrained(str(folder), output_loading_info=True)
    return model.eval(), info


def official_embed(model, ids, pad_id: int):
    """The evaluation's forward pass on padded ids ``[batch, length]`` (a torch tensor): (pooler_output, its
    L2-normalised form)."""
    import torch

    attention_mask = ids.ne(pad_id)
    with torch.no_grad():
        pooled = model(input_ids=ids, attention_mask=attention_mask, return_dict=True).pooler_output
    return pooled, torch.nn.functional.normalize(pooled, p=2, dim=1)


def record(folder: Path, official: Path) -> None:
    import torch
    import transformers
    from transformers import GPT2Tokenizer

    texts = json.loads((folder / "texts.json").read_text(encoding="utf-8"))
    model, info = official_model(folder, official)
    tokenizer = GPT2Tokenizer.from_pretrained(str(folder))
    rows, outputs = [], {}
    for name, text in texts.items():
        tokens = tokenizer.tokenize(text)
        ids = tokenizer.convert_tokens_to_ids(tokens[: LENGTH - 1] + [tokenizer.eos_token])
        outputs[name] = {"text": text, "token_count": len(tokens), "ids": ids}
        rows.append(ids + [tokenizer.pad_token_id] * (LENGTH - len(ids)))
    pooled, normalised = official_embed(model, torch.tensor(rows), tokenizer.pad_token_id)
    scores = (normalised @ normalised.T).numpy()
    for row, name in enumerate(texts):
        outputs[name]["pooler_output"] = rounded(pooled[row].tolist())
        outputs[name]["normalised"] = rounded(normalised[row].tolist())
    kept = np.asarray([outputs[name]["normalised"] for name in texts])
    rounding = float(np.abs(kept - normalised.numpy()).max())
    FIXTURE.write_text(json.dumps({
        "made_with": {"transformers": transformers.__version__, "torch": torch.__version__,
                      "numpy": np.__version__, "python": sys.version.split()[0],
                      "tokenizer": f"transformers.{type(tokenizer).__name__} (slow)",
                      **{f"{name} sha256": hashlib.sha256((official / name).read_bytes()).hexdigest()
                         for name in OFFICIAL_FILES}},
        "loading_info": {k: sorted(v) if isinstance(v, (list, set)) else str(v) for k, v in info.items()},
        "weights_sha256": weights_digest(folder), "length": LENGTH, "pad_token_id": tokenizer.pad_token_id,
        "eos_token_id": tokenizer.eos_token_id, "significant_digits": DIGITS, "rounding_error": rounding,
        "texts": outputs, "scores": rounded(scores.tolist())}, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"recorded {FIXTURE} ({len(texts)} texts, rounding error {rounding:.1e}); loading info: {info}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("step", choices=["write", "record"])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--official", type=Path, help="folder with modeling_codesage.py and config_codesage.py "
                                                      "(step record)")
    args = parser.parse_args(argv)
    if args.step == "write":
        write(args.folder)
    else:
        if args.official is None:
            parser.error("record needs --official")
        record(args.folder, args.official)


if __name__ == "__main__":
    main()
