"""Tag2Text on CPU: the official code and ours side by side, same weights, same input tensor, same run.

Run by hand (not in CI): it needs the official code and the libraries it was written for, kept OUT of the
project's virtual environment:

    # the official code (github:xinyu1205/recognize-anything), e.g. its ram/ folder from a git mirror of it:
    G=/path/to/recognize-anything.git; mkdir -p /tmp/recognize-anything && cd /tmp/recognize-anything
    git --git-dir $G ls-tree -r --name-only HEAD | grep -E '^ram/.*\\.(py|json|txt)$' | while read f; do
        mkdir -p "$(dirname "$f")"; git --git-dir $G show "HEAD:$f" > "$f"; done
    # (or: git clone https://github.com/xinyu1205/recognize-anything /tmp/recognize-anything; measured with commit
    #  7cb804a8609e9f4b1a50b7f31436d2df40bb9481 of 2025-02-18)
    # the libraries it runs on, beside (not inside) the project's venv:
    pip install --target /tmp/official-deps --no-deps transformers==4.46.3 tokenizers==0.20.3 \\
        huggingface_hub==0.26.5 timm==0.9.16 scipy
    # then, from the project root with the project's venv active:
    PYTHONPATH=/tmp/official-deps:/tmp/recognize-anything python benchmarks/tag2text_official.py

What it does: builds the official ``Tag2Text(image_size=384, vit='swin_b')`` at full size with seeded random weights
(rounded to fp16-representable values, because our loader stores a converted fp16 copy of the checkpoint: both
models then hold the very same fp32 numbers; 12 random tags get a high bias so that a photo's worth of tags pass
the threshold),
saves its state_dict in the official checkpoint layout (``{'model': ...}``, ``tagging_head.*`` saved as
``vision_multi.*``), loads OUR pipeline from that file through ``apps.tag2text.checkpoint``, and times both on the
same (B, 3, 384, 384) tensor: fp32, ``--threads`` threads (2), 3 beams, max_length 30, min_length 10, batch 1 and 8.
Official and ours are timed alternately (``paired_times``), so load drift hits both; medians of ``--repeats``.

Stages: image encoder (Swin-B), tagging head (label queries -> logits -> thresholded tags), tag encoder (the tag
text cross-attending to the image), caption decoding (beam search), and the whole call (``Tag2Text.generate(image,
return_tag_predict=True)`` for the official code, ``Tag2TextPipeline.predict_pixels`` for ours: tags + caption).
Before timing it asserts identical tag sets, identical caption token ids and stage tensors within tolerance.

Batch 8: upstream gives every image a caption conditioned on the first rows of the tag encoding (its cross-attention
keeps only as many key rows as query rows after ``generate`` expands the already-expanded encoder states), so only
image 0's caption is compared with the official one at batch 8 (ours: each image its own caption, as tested in
``tests/tag2text/test_pipeline.py``).

The official code imports a few modules of timm and torchvision that the Tag2Text path never runs; torchvision's
wheel needs CUDA torch, so ``official_shims`` registers timm's own ``layers/{helpers,drop,weight_init}.py`` (the
real code, loaded from the timm on PYTHONPATH) under the names the official files import, plus placeholders for the
ViT-only names that raise if ever called. ``ram/__init__.py`` (torchvision transforms) is bypassed the same way.
The official tokenizer is ``BertTokenizer.from_pretrained('bert-base-uncased')``; with no Hub here it is built from
the same vocabulary file that ships with this demo (identical ids), with the official special tokens.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
import types
from dataclasses import replace
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from apps.tag2text.checkpoint import CHECKPOINT_NAME  # noqa: E402
from apps.tag2text.config import VOCAB_FILE  # noqa: E402
from apps.tag2text.decoding import beam_search  # noqa: E402
from apps.tag2text.pipeline import Tag2TextPipeline, class_thresholds  # noqa: E402
from benchmarks.tag2text_decode import paired_times  # noqa: E402

SEP, PAD = 102, 0
TAGS = 12  # tags given a high bias in the random model


def _find_on_path(package: str) -> Path:
    for entry in sys.path:
        candidate = Path(entry or ".") / package
        if (candidate / "__init__.py").is_file():
            return candidate
    raise SystemExit(f"{package} not found on PYTHONPATH; see this script's docstring for the setup.")


def _load_file(name: str, path: Path) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _package(name: str, path: Path | None = None) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__path__ = [str(path)] if path else []
    sys.modules[name] = module
    return module


def official_shims() -> Path:
    """Make ``ram.models.tag2text`` importable without torchvision / fairscale (see the module docstring)."""
    timm_dir = _find_on_path("timm")
    ram_dir = _find_on_path("ram")

    def unused(*args, **kwargs):
        raise RuntimeError("not part of the official Tag2Text (swin_b) path")

    _package("timm", timm_dir)
    _package("timm.layers", timm_dir / "layers")
    _load_file("timm.layers.grid", timm_dir / "layers" / "grid.py")
    layers = sys.modules["timm.layers"]
    for file in ("helpers", "drop", "weight_init"):
        module = _load_file(f"timm.layers.{file}", timm_dir / "layers" / f"{file}.py")
        layers.__dict__.update({k: v for k, v in vars(module).items() if not k.startswith("_")})
    _package("timm.models")
    sys.modules["timm.models.layers"] = layers
    stubs = {
        "timm.models.hub": {"download_cached_file": unused},
        "timm.models.registry": {"register_model": lambda fn: fn},
        "timm.models.vision_transformer": {"_cfg": unused, "PatchEmbed": unused},
        "timm.models.helpers": {"named_apply": unused, "adapt_input_conv": unused},
        "fairscale": {}, "fairscale.nn": {}, "fairscale.nn.checkpoint": {},
        "fairscale.nn.checkpoint.checkpoint_activations": {"checkpoint_wrapper": unused},
    }
    for name, attrs in stubs.items():
        module = _package(name)
        module.__dict__.update(attrs)
    _package("ram", ram_dir)
    _package("ram.models", ram_dir / "models")
    return ram_dir


def official_tokenizer(text_encoder_type: str = "bert-base-uncased"):
    """What the official ``init_tokenizer`` returns, built from the local bert-base-uncased vocabulary."""
    from transformers import BertTokenizer

    tokenizer = BertTokenizer(str(VOCAB_FILE))
    tokenizer.add_special_tokens({"bos_token": "[DEC]"})
    tokenizer.add_special_tokens({"additional_special_tokens": ["[ENC]"]})
    tokenizer.enc_token_id = tokenizer.additional_special_tokens_ids[0]
    return tokenizer


def build_official(seed: int):
    """The official full-size Tag2Text with seeded random weights, rounded to fp16-representable values."""
    import transformers

    official_shims()
    import ram.models.tag2text as official

    official.init_tokenizer = official_tokenizer
    torch.manual_seed(seed)
    model = official.Tag2Text(image_size=384, vit="swin_b").eval()
    with torch.no_grad():
        gen = torch.Generator().manual_seed(seed)
        n = model.num_class  # about a photo's worth of tags pass the threshold (random weights alone give none)
        bias = torch.full((n,), -4.0)
        bias[torch.randperm(n, generator=gen)[:TAGS]] = 4.0
        model.fc.b.copy_(bias.unsqueeze(0))
        for param in model.parameters():
            param.copy_(param.half().float())
    return model, transformers.__version__


def save_official_layout(model, folder: Path) -> Path:
    state = {}
    for key, value in model.state_dict().items():
        if key.startswith("tagging_head."):
            key = "vision_multi." + key[len("tagging_head."):]
        state[key] = value
    path = folder / CHECKPOINT_NAME
    torch.save({"model": state}, path)
    return path


class Official:
    """The official model's stages, called the way its ``generate`` calls them."""

    def __init__(self, model, num_beams: int, max_length: int, min_length: int):
        self.m, self.beams, self.max_length, self.min_length = model, num_beams, max_length, min_length

    def image(self, pixels):
        return self.m.visual_encoder(pixels)

    def tags(self, embeds):
        """-> (logits, tag index lists, ' | '-joined tag strings)."""
        m = self.m
        atts = torch.ones(embeds.shape[:-1], dtype=torch.long)
        queries = m.label_embed.weight.unsqueeze(0).repeat(embeds.shape[0], 1, 1)
        hidden = m.tagging_head(encoder_embeds=queries, encoder_hidden_states=embeds, encoder_attention_mask=atts,
                                return_dict=False, mode="tagging")[0]
        logits = m.fc(hidden)
        chosen = torch.sigmoid(logits) > m.class_threshold
        chosen[:, m.delete_tag_index] = False
        indices = [row.nonzero().flatten().tolist() for row in chosen]
        return logits, indices, [" | ".join(m.tag_list[i] for i in idx) for idx in indices]

    def encode_tags(self, embeds, tag_text):
        m = self.m
        embeds = embeds.repeat_interleave(self.beams, dim=0)
        rows = [t for t in tag_text for _ in range(self.beams)]
        tokens = m.tokenizer(rows, padding="max_length", truncation=True, max_length=40, return_tensors="pt")
        ids = tokens.input_ids
        ids[:, 0] = m.tokenizer.enc_token_id
        atts = torch.ones(embeds.shape[:-1], dtype=torch.long)
        return m.tag_encoder(ids, attention_mask=tokens.attention_mask, encoder_hidden_states=embeds,
                             encoder_attention_mask=atts, return_dict=True).last_hidden_state

    def decode(self, encoded, batch):
        m = self.m
        prompt = m.tokenizer([m.prompt] * batch, return_tensors="pt").input_ids
        prompt[:, 0] = m.tokenizer.bos_token_id
        out = m.text_decoder.generate(input_ids=prompt[:, :-1], max_length=self.max_length,
                                      min_length=self.min_length, num_beams=self.beams,
                                      eos_token_id=m.tokenizer.sep_token_id, pad_token_id=m.tokenizer.pad_token_id,
                                      repetition_penalty=1.0, encoder_hidden_states=encoded,
                                      encoder_attention_mask=None)
        return [[t for t in row.tolist() if t not in (SEP, PAD)] for row in out]

    def whole(self, pixels):
        return self.m.generate(pixels, num_beams=self.beams, max_length=self.max_length,
                               min_length=self.min_length, return_tag_predict=True)


class Ours:
    def __init__(self, pipe: Tag2TextPipeline):
        self.p, self.c = pipe, pipe.config
        self.thresholds = class_thresholds(pipe.config)

    def image(self, pixels):
        return self.p.model.visual_encoder(pixels)

    def tags(self, embeds):
        logits = self.p.model.tag_logits(embeds)
        chosen = torch.sigmoid(logits) > self.thresholds
        chosen[:, list(self.c.delete_tag_index)] = False
        indices = [row.nonzero().flatten().tolist() for row in chosen]
        return logits, indices, [[self.c.tags[i] for i in idx] for idx in indices]

    def encode_tags(self, embeds, tags):
        return self.p.encode_tags(embeds, tags)

    def decode(self, encoded):
        c = self.c
        return beam_search(self.p.model.text_decoder, encoded, self.p.prompt_ids, num_beams=c.num_beams,
                           max_length=c.max_length, min_length=c.min_length, eos_token_id=SEP, pad_token_id=PAD)

    def whole(self, pixels):
        return self.p.predict_pixels(pixels, [()] * pixels.shape[0], self.thresholds)


def close(name: str, a: torch.Tensor, b: torch.Tensor, rtol: float = 1e-4, atol: float = 1e-4) -> str:
    err = (a.float() - b.float()).abs().max().item()
    assert torch.allclose(a.float(), b.float(), rtol=rtol, atol=atol), f"{name} differs: max abs error {err:.2e}"
    return f"{name} max abs diff {err:.1e}"


@torch.inference_mode()
def check_and_time(off: Official, ours: Ours, pixels: torch.Tensor, repeats: int):
    batch = pixels.shape[0]
    notes = []
    e_off, e_ours = off.image(pixels), ours.image(pixels)
    notes.append(close("image tokens", e_off, e_ours))
    l_off, i_off, text_off = off.tags(e_off)
    l_ours, i_ours, names_ours = ours.tags(e_off)
    notes.append(close("tag logits", l_off, l_ours))
    assert i_off == i_ours, "tag sets differ"
    assert text_off == [" | ".join(n) for n in names_ours], "tag texts differ"
    enc_off = off.encode_tags(e_off, text_off)
    enc_ours = ours.encode_tags(e_off, names_ours)
    notes.append(close("tag encoding", enc_off[::off.beams], enc_ours))
    ids_off, ids_ours = off.decode(enc_off, batch), ours.decode(enc_ours)
    compared = batch if batch == 1 else 1  # upstream's batch captions are all conditioned on image 0 (docstring)
    assert ids_off[:compared] == ids_ours[:compared], f"caption ids differ: {ids_off[:compared]} {ids_ours[:compared]}"
    whole_off = off.whole(pixels)
    whole_ours = ours.whole(pixels)
    captions_ours = [r.caption for r in whole_ours]
    assert whole_off[1] == text_off and [list(r.tags) for r in whole_ours] == names_ours, "whole-call tags differ"
    assert whole_off[0][:compared] == captions_ours[:compared], "whole-call captions differ"
    tags_found = sum(len(i) for i in i_ours)
    notes.append(f"tags identical ({tags_found} in all), caption ids identical ({compared} of {batch} compared, "
                 f"{len(ids_ours[0]) - len(ours.p.prompt_ids)} tokens)")

    rows = {}
    rows["image encoder (Swin-B)"] = paired_times(lambda: off.image(pixels), lambda: ours.image(pixels), repeats)
    rows["tagging head (3,429 queries)"] = paired_times(lambda: off.tags(e_off), lambda: ours.tags(e_off), repeats)
    rows["tag encoder"] = paired_times(lambda: off.encode_tags(e_off, text_off),
                                       lambda: ours.encode_tags(e_off, names_ours), repeats)
    rows["caption decoding (beam search)"] = paired_times(lambda: off.decode(enc_off, batch),
                                                          lambda: ours.decode(enc_ours), repeats)
    (enc_a, enc_b, _), (dec_a, dec_b, _) = rows["tag encoder"], rows["caption decoding (beam search)"]
    rows["caption (tag encoder + decoding, sum)"] = (enc_a + dec_a, enc_b + dec_b, (enc_a + dec_a) / (enc_b + dec_b))
    rows["whole call (tags + caption)"] = paired_times(lambda: off.whole(pixels), lambda: ours.whole(pixels), repeats)
    return rows, notes


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, nargs="+", default=[3, 1],
                        help="timed pairs per stage, one number for all batches or one per --batches entry")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-length", type=int, default=30)
    parser.add_argument("--min-length", type=int, default=10)
    parser.add_argument("--beams", type=int, default=3)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    model, tf_version = build_official(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["DEMOHUB_CACHE"] = tmp  # the converted fp16 copy goes beside the file or here, never elsewhere
        save_official_layout(model, Path(tmp))
        pipe = Tag2TextPipeline.from_pretrained(tmp)
    pipe.config = replace(pipe.config, num_beams=args.beams, max_length=args.max_length, min_length=args.min_length)
    off = Official(model, args.beams, args.max_length, args.min_length)
    ours = Ours(pipe)
    gen = torch.Generator().manual_seed(args.seed)
    pixels = torch.randn(max(args.batches), 3, 384, 384, generator=gen)
    load = [os.getloadavg()[0]]
    repeats = dict(zip(args.batches, args.repeats * len(args.batches) if len(args.repeats) == 1 else args.repeats,
                       strict=True))
    results = {}
    for batch in args.batches:
        results[batch] = check_and_time(off, ours, pixels[:batch], repeats[batch])
        load.append(os.getloadavg()[0])
    print(f"Tag2Text, official code vs ours: full size (372M parameters, random seeded weights), fp32, "
          f"{args.threads} threads, {args.beams} beams, max_length {args.max_length}, min_length {args.min_length}; "
          f"torch {torch.__version__}, official on transformers {tf_version}; timed pairs (median) per batch: "
          f"{', '.join(f'{b}: {r}' for b, r in repeats.items())}; load average {' -> '.join(f'{x:.2f}' for x in load)}")
    for batch, (_, notes) in results.items():
        print(f"- batch {batch}: " + "; ".join(notes))
    print()
    print("| stage | batch | official | ours | official / ours |")  # each row: one paired measurement
    print("|---|---|---|---|---|")
    for batch, (rows, _) in results.items():
        for stage, (t_off, t_ours, ratio) in rows.items():
            print(f"| {stage} | {batch} | {t_off:.2f} s | {t_ours:.2f} s | {ratio:.2f}× |")


if __name__ == "__main__":
    main()
