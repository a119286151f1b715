"""Fast location-token ids are identical to a CLIPTokenizer holding the added <lN> tokens (4x4 grid here)."""

from __future__ import annotations

import json
import random

import pytest

from apps.geodiffusion.layout import KNOWN_CONFIGS, NUIMAGES_CLASSES, GenerationConfig, encode_prompt, parse_layout
from apps.geodiffusion.tokens import ClipBPE, LocationTokenizer, derived_vocab, truncated_boxes
from tests.fixtures.tiny_geodiffusion import FIXTURES, write_tokenizer

GRID = (4, 4)
PARITY_TEXTS = [
    "a photo of a cat",
    "An image with car <l5> <l15> sky other <l0> <l3>",
    "car<l5>truck", "<l5><l6>", ",<l5>,", "<l15>", "",
    "An image with <l16> <l05> <L5> <l-1> <l 3> x",  # out of range, leading zero, uppercase, not tokens
    "  Hello   World!! it's 1999, café naïve ŝ 日本語 \t\n emoji 🙂 <l1>",
    "don't can't we'll I'd you're they've I'm",
    "<|endoftext|> hi <|startoftext|>",
    "a" * 100,
    " ".join(["dog <l1> <l2>"] * 40),  # far past 77: truncation keeps 75 content ids, then EOS
    "A night rain driving scene image of front left camera with " + " ".join(["pedestrian <l4> <l9>"] * 25),
]


@pytest.fixture(scope="module")
def tokenizer_folder(tmp_path_factory):
    return write_tokenizer(tmp_path_factory.mktemp("tok") / "tokenizer", GRID)


@pytest.fixture(scope="module")
def official(tokenizer_folder):
    from transformers import CLIPTokenizer

    return CLIPTokenizer.from_pretrained(tokenizer_folder)


@pytest.fixture(scope="module")
def fast(tokenizer_folder):
    return LocationTokenizer.from_pretrained(tokenizer_folder, GRID[0] * GRID[1])


def official_ids(tok, text):
    return tok(text, padding="max_length", max_length=77, truncation=True).input_ids


def test_the_reference_tokenizer_has_the_location_tokens(official):
    assert len(official) == 49408 + 16
    assert official.convert_tokens_to_ids(["<l0>", "<l15>"]) == [49408, 49423]


def test_clip_bpe_check_sentence(fast):
    assert fast.encode("a photo of a cat", padding=False) == [49406, 320, 1125, 539, 320, 2368, 49407]


@pytest.mark.parametrize("text", PARITY_TEXTS)
def test_ids_identical_to_official_tokenizer(official, fast, text):
    assert fast.encode(text) == official_ids(official, text)


def test_ids_identical_on_random_layout_prompts(official, fast):
    rng = random.Random(0)
    config = GenerationConfig("nuimages", "A {timeofday} {weather} driving scene image of {camera} camera with {bbox}",
                              GRID, 5.0, 100, 22, 64, 64)
    for _ in range(40):
        boxes = [[rng.choice(NUIMAGES_CLASSES), *sorted(rng.sample([i / 20 for i in range(21)], 2))[:1],
                  0.0, 1.0, 1.0] for _ in range(rng.randint(0, 22))]
        prompt = encode_prompt({"camera": "front left", "timeofday": "night", "bbox": boxes}, config)
        assert fast.encode(prompt) == official_ids(official, prompt)


def test_truncation_and_padding_shape(fast):
    ids = fast.encode(" ".join(["dog <l1> <l2>"] * 40))
    assert len(ids) == 77 and ids[0] == 49406 and ids[-1] == 49407
    assert ids[75] != 49407  # the 75th content id survives, EOS follows it
    short = fast.encode("a cat")
    assert short[:4] == [49406, 320, 2368, 49407] and set(short[4:]) == {49407}
    assert fast.overflow(" ".join(["dog <l1> <l2>"] * 40)) == 120 - 75


def test_vocab_ids_follow_from_the_merges():
    assert derived_vocab(ClipBPE.from_folder(FIXTURES).merges) == json.loads((FIXTURES / "vocab.json").read_text())


def test_non_clip_order_vocab_falls_back_to_the_file(tmp_path):
    # Two ids swapped: the spot check passes, but confirming "cat</w>" against the file must switch to the file.
    vocab = json.loads((FIXTURES / "vocab.json").read_text())
    vocab["cat</w>"], vocab["dog</w>"] = vocab["dog</w>"], vocab["cat</w>"]
    (tmp_path / "vocab.json").write_text(json.dumps(vocab, indent=2, sort_keys=True))
    (tmp_path / "merges.txt").write_text((FIXTURES / "merges.txt").read_text())
    bpe = ClipBPE.from_folder(tmp_path)
    assert bpe.encode("a photo") == [320, 1125]  # unaffected tokens keep derived ids
    assert bpe.encode("cat dog") == [vocab["cat</w>"], vocab["dog</w>"]] == [1929, 2368]
    assert bpe.vocab is not None and bpe.encode("a cat") == [320, 1929]
    vocab["in"] = 7  # the first merge moved: the spot check fails and the file is parsed up front
    (tmp_path / "vocab.json").write_text(json.dumps(vocab))
    assert ClipBPE.from_folder(tmp_path).vocab is not None


def test_sorted_and_indented_vocab_still_uses_derived_ids(tmp_path):
    vocab = json.loads((FIXTURES / "vocab.json").read_text())
    (tmp_path / "vocab.json").write_text(json.dumps(vocab, indent=2, sort_keys=True))  # transformers' save format
    (tmp_path / "merges.txt").write_text((FIXTURES / "merges.txt").read_text())
    bpe = ClipBPE.from_folder(tmp_path)
    assert bpe.vocab is None and bpe.encode("a photo of a cat") == [320, 1125, 539, 320, 2368]


def test_added_tokens_that_do_not_match_the_grid_are_rejected(tokenizer_folder):
    with pytest.raises(ValueError, match="location tokens"):
        LocationTokenizer.from_pretrained(tokenizer_folder, 9)  # the folder holds 16
    with pytest.raises(ValueError, match="<l24>"):
        LocationTokenizer.from_pretrained(tokenizer_folder, 25)


def big_grid_tokenizer(config: GenerationConfig) -> LocationTokenizer:
    return LocationTokenizer(ClipBPE.from_folder(FIXTURES), config.num_location_tokens)


def test_77_token_budget_at_the_official_box_limits():
    # Fact sheet: nuImages 256 with 22 boxes and "front left" fits exactly (77); time-weather with 22 overflows.
    nu = KNOWN_CONFIGS["nuimages-256x256"]
    boxes = [[NUIMAGES_CLASSES[i % 10], 0.1, 0.1, 0.9, 0.9] for i in range(22)]
    layout = parse_layout({"camera": "front left", "bbox": boxes}, nu)
    tok = big_grid_tokenizer(nu)
    assert len(tok.content_ids(encode_prompt(layout, nu))) + 2 == 77
    assert truncated_boxes(layout, nu, tok) == []
    tw = KNOWN_CONFIGS["nuimages-time-weather-512x512"]
    layout = parse_layout({"camera": "front left", "bbox": boxes}, tw)
    tok = big_grid_tokenizer(tw)
    assert len(tok.content_ids(encode_prompt(layout, tw))) + 2 == 79
    assert truncated_boxes(layout, tw, tok) == [21]  # the last box loses both corner tokens


def test_truncated_boxes_follow_prompt_order_under_shuffle():
    tw = KNOWN_CONFIGS["nuimages-time-weather-512x512"]
    boxes = [[NUIMAGES_CLASSES[i % 10], 0.1, 0.1, 0.9, 0.9] for i in range(22)]
    layout = parse_layout({"camera": "front left", "bbox": boxes}, tw)
    from apps.geodiffusion.layout import box_order

    assert truncated_boxes(layout, tw, big_grid_tokenizer(tw), shuffle_seed=1) == [box_order(22, 1)[-1]]


def test_coco_long_labels_overflow_and_lose_the_last_boxes():
    coco = KNOWN_CONFIGS["coco-stuff-256x256"]
    layout = parse_layout({"bbox": [["fire hydrant", 0, 0, 1, 1]] * 18}, coco)  # 2 words, 3 BPE tokens each
    dropped = truncated_boxes(layout, coco, big_grid_tokenizer(coco))
    # 3 template + 18 * 5 = 93 content tokens > 75: boxes from the 15th on lose tokens (3 + 14*5 = 73 fits).
    assert dropped == list(range(14, 18))
