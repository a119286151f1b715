"""The whole pipeline on the tiny snapshot, through the same loader and shared.weights.resolve as the real one."""

from __future__ import annotations

import inspect
import shutil

import pytest
import torch
from transformers import RepetitionPenaltyLogitsProcessor

from apps.molm3d import DEMO
from apps.molm3d.conformer import featurize
from apps.molm3d.pipeline import UNIMOL_FILE, MoLM3DOutput, MoLM3DPipeline
from apps.molm3d.tasks import MAX_DESCRIPTION_INSTRUCTION, parse_number
from apps.molm3d.unimol import UNUSED_PREFIXES, load_unimol
from shared import weights
from shared.context import DemoContext
from shared.errors import UserInputError, WeightsUnavailable
from shared.pool import ModelPool

ASPIRIN, CAFFEINE = "CC(=O)Oc1ccccc1C(=O)O", "CN1C=NC2=C1C(=O)N(C(=O)N2C)C"
FAST = {"num_beams": 1, "max_new_tokens": 6, "min_new_tokens": 0}


def test_loader_reports_unused_unimol_keys(tiny_pipe, tiny_snapshot):
    _, unused = load_unimol(tiny_snapshot / UNIMOL_FILE)
    assert {k.rsplit(".", 2)[0] + "." for k in unused} == set(UNUSED_PREFIXES)
    assert tiny_pipe.llm.get_input_embeddings().weight.shape[0] == len(tiny_pipe.tokenizer)


def test_eight_mol_embeddings_are_replaced(tiny_pipe):
    conf = featurize(ASPIRIN)
    prompt = "Instruction: x\nInput molecule: C " + "<mol>" * 8 + ".\nResponse: "
    embeds, mask = tiny_pipe._inputs([conf], [prompt])
    ids = torch.tensor(tiny_pipe.tokenizer.encode(prompt))
    is_mol = ids.eq(tiny_pipe.tokenizer.mol_token_id)
    assert int(is_mol.sum()) == 8 and bool(mask.all())
    from apps.molm3d.unimol import collate

    with torch.no_grad():
        projected = tiny_pipe.encoder(**collate([conf]))[0]
        table = tiny_pipe.llm.get_input_embeddings()(ids)
    assert torch.allclose(embeds[0, is_mol], projected, atol=1e-6)
    assert torch.equal(embeds[0, ~is_mol], table[~is_mol])
    assert not torch.allclose(embeds[0, is_mol], table[is_mol])


def test_single_molecule_passes_no_qformer_mask(tiny_pipe):
    seen = []
    hook = tiny_pipe.encoder.Qformer.register_forward_pre_hook(lambda m, args: seen.append(args[2]))
    try:
        tiny_pipe(ASPIRIN, task="logp", **FAST)
        tiny_pipe.answer_batch([ASPIRIN, "CCO"], task="logp", **FAST)
    finally:
        hook.remove()
    assert seen[0] is None
    keep = seen[1]
    assert keep.dtype == torch.bool and keep[0].all() and int(keep[1].sum()) == 3 + 2  # CCO + [CLS]/[SEP]


def test_batch_gives_the_same_answers_as_one_at_a_time(tiny_pipe):
    molecules = [ASPIRIN, "CCO", CAFFEINE]
    settings = {"num_beams": 1, "max_new_tokens": 10, "min_new_tokens": 10}
    batch = tiny_pipe.answer_batch(molecules, "What is the solubility of this molecule?", **settings)
    single = [tiny_pipe(m, "What is the solubility of this molecule?", **settings) for m in molecules]
    assert [a.text for a in batch] == [a.text for a in single]
    assert batch == tuple(single)  # every field, not only the text (``seconds`` is not compared)
    assert len({a.text for a in single}) > 1  # the molecules really differ in what the model sees


def test_property_answer_uses_official_decoding_and_rdkit_reference(tiny_pipe):
    calls = []
    generate = tiny_pipe.llm.generate

    def recording_generate(**kwargs):
        calls.append(kwargs)
        return generate(**kwargs)

    tiny_pipe.llm.generate = recording_generate
    try:
        answer = tiny_pipe(CAFFEINE, task="molecular_weight")
    finally:
        del tiny_pipe.llm.generate
    assert isinstance(answer, MoLM3DOutput) and answer.task == "molecular_weight" and answer.unit == "g/mol"
    kw = calls[0]
    penalties = [p.penalty for p in kw["logits_processor"] if isinstance(p, RepetitionPenaltyLogitsProcessor)]
    assert (kw["num_beams"], penalties, kw["length_penalty"]) == (5, [1.2], 0.8)
    assert (kw["max_new_tokens"], kw["min_new_tokens"], kw["do_sample"]) == (64, 16, False)
    assert answer.instruction == ("What is the Molecular Weight of this molecule? If uncertain, provide an "
                                  "estimate. Respond with the numerical value only.")
    assert answer.prompt.endswith(f"Input molecule: {CAFFEINE} " + "<mol>" * 8 + ".\nResponse: ")
    assert answer.reference.value == pytest.approx(194.19, abs=0.01)
    assert answer.value == parse_number(answer.text)


def without_prefill(kwargs: dict) -> dict:
    """``generate``'s arguments less the prompt's KV cache the pipeline computed once for its beams."""
    return {k: v for k, v in kwargs.items() if k not in ("cache", "past_key_values")}


def test_official_beams_run_each_prompt_once_for_the_same_answers(tiny_pipe):
    """5 beams: the prompt runs once per molecule (not once per beam, as ``generate`` alone runs it), and the answers
    are token for token those of ``generate`` given the prompt alone, for molecules of different lengths (padding)."""
    calls, rows = [], []
    generate = tiny_pipe.llm.generate
    tiny_pipe.llm.generate = lambda **kw: calls.append(kw) or generate(**kw)
    hook = tiny_pipe.llm.model.layers[0].register_forward_pre_hook(lambda m, args: rows.append(tuple(args[0].shape)))
    try:
        answers = tiny_pipe.answer_batch([ASPIRIN, "CCO"], task="logp", max_new_tokens=8, min_new_tokens=8)
    finally:
        hook.remove()
        del tiny_pipe.llm.generate
    prompt = calls[0]["inputs_embeds"].shape[1]
    assert rows[0] == (2, prompt - 1, tiny_pipe.llm.config.hidden_size)  # one row per molecule
    assert all(shape[:2] == (2 * 5, 1) for shape in rows[1:]) and len(rows) == 1 + 8  # then one token per step
    with torch.no_grad():
        alone = generate(**without_prefill(calls[0]))
    assert [a.text for a in answers] == [tiny_pipe.tokenizer.decode(ids.tolist()) for ids in alone]
    assert answers[0].text != answers[1].text


def test_one_molecule_starts_from_the_stored_start_of_its_prompt_for_the_same_answers(tiny_pipe):
    """One molecule: the prompt's start (the preamble and the instruction) runs once per instruction and is kept, the
    preamble, which every prompt shares, once in all; the next molecule asked the same runs only its own part, and
    every answer is, token for token, that of ``generate`` given the whole prompt; an instruction never reuses
    another's start; at most PREFIX_CACHE_SIZE are kept."""
    from apps.molm3d.pipeline import PREFIX_CACHE_SIZE

    tiny_pipe._prefixes.clear()
    tiny_pipe._preamble = None
    calls, rows = [], []
    generate = tiny_pipe.llm.generate
    tiny_pipe.llm.generate = lambda **kw: calls.append(kw) or generate(**kw)
    hook = tiny_pipe.llm.model.layers[0].register_forward_pre_hook(lambda m, args: rows.append(args[0].shape[1]))
    answers = []
    try:
        for i, (molecule, task, beams) in enumerate(((ASPIRIN, "logp", 5), ("CCO", "logp", 5), (ASPIRIN, "caption", 1),
                                                     (CAFFEINE, "caption", 1))):
            rows.clear()
            answers.append(tiny_pipe(molecule, task=task, num_beams=beams, max_new_tokens=6, min_new_tokens=6))
            prompt = calls[-1]["inputs_embeds"].shape[1]
            prefill = [r for r in rows if r > 1]
            stored = max(len(k) for k in tiny_pipe._prefixes if k == tuple(tiny_pipe.tokenizer.encode(
                answers[-1].prompt)[:len(k)]))
            preamble = len(tiny_pipe._preamble[0])
            first = molecule == ASPIRIN  # each instruction's first molecule: its start from the preamble's
            assert prefill == [preamble] * (i == 0) + [stored - preamble] * first + [prompt - 1 - stored]
            assert 0 < preamble < stored < prompt - 1
    finally:
        hook.remove()
        del tiny_pipe.llm.generate
    assert len(tiny_pipe._prefixes) == 2  # logp's start and caption's
    with torch.no_grad():
        alone = [tiny_pipe.tokenizer.decode(generate(**without_prefill(kw))[0].tolist()) for kw in calls]
    assert [a.text for a in answers] == alone
    for i in range(PREFIX_CACHE_SIZE + 2):
        tiny_pipe("CCO", f"Is this molecule number {i} toxic?", num_beams=1, max_new_tokens=1, min_new_tokens=1)
    assert len(tiny_pipe._prefixes) == PREFIX_CACHE_SIZE


def test_an_answer_gives_its_kv_caches_memory_back_when_it_is_done(tiny_pipe, monkeypatch):
    """After each answer its KV cache is freed and glibc's free pages returned (``shared.pool.trim_heap``), so the next
    answer's peak starts from the model's (BENCHMARKS.md: the peak memory while answering)."""
    import weakref

    from shared import pool

    caches, trims = [], []
    prefill = tiny_pipe._prefill

    def kept(*args, **kwargs):
        prefilled = prefill(*args, **kwargs)
        caches.extend(weakref.ref(cache) for cache in prefilled.values())
        return prefilled

    monkeypatch.setattr(tiny_pipe, "_prefill", kept)
    monkeypatch.setattr(pool, "trim_heap", lambda: trims.append([ref() is None for ref in caches]))
    for decoding in ("official", "fast"):
        tiny_pipe("CCO", task="logp", decoding=decoding, max_new_tokens=2, min_new_tokens=2)
    assert trims == [[True], [True, True]]  # once an answer, its cache already gone


def test_caption_limits_and_long_questions(tiny_pipe):
    calls = []
    generate = tiny_pipe.llm.generate
    tiny_pipe.llm.generate = lambda **kw: calls.append(kw) or generate(**{**without_prefill(kw), "max_new_tokens": 2,
                                                                            "min_new_tokens": 0, "num_beams": 1})
    try:
        caption = tiny_pipe("CCO")
        long_q = tiny_pipe("CCO", "Which functional groups does this molecule have, and how do they react?")
    finally:
        del tiny_pipe.llm.generate
    assert caption.task == "caption" and caption.instruction == "Describe the input molecule."
    assert calls[0]["max_new_tokens"] == 128 and calls[1]["max_new_tokens"] == 64
    assert len(long_q.instruction) == MAX_DESCRIPTION_INSTRUCTION and "shortened" in long_q.notes[0]


def test_parse_number():
    assert parse_number("The LogP for the input molecule is -1.24.") == -1.24
    assert parse_number("The Molecular Weight for the input molecule is 180.16 g/mol. 12.5") == 180.16
    assert parse_number("about 3") is None


@pytest.mark.parametrize("molecules, kwargs, message", [
    ([], {}, "No molecule"),
    (["CCO"] * 17, {}, "at most 16"),
    (["CCO", "C1CC"], {"task": "logp"}, "not a valid SMILES"),
    ("CCO", {"question": "What is <mol>?"}, "may not contain"),
    ("CCO", {"task": "melting point"}, "Unknown task"),
    ("C1CC", {"task": "logp"}, "not a valid SMILES"),
])
def test_pipeline_bad_input(tiny_pipe, molecules, kwargs, message):
    ask = tiny_pipe.answer_batch if isinstance(molecules, list) else tiny_pipe
    with pytest.raises(UserInputError, match=message) as info:
        ask(molecules, **kwargs)
    assert info.value.argument in inspect.signature(ask).parameters


@pytest.mark.parametrize("molecules", [[ASPIRIN, "CCO"], (ASPIRIN,), []], ids=["list", "tuple", "empty"])
def test_a_list_given_to_call_is_refused_naming_answer_batch(tiny_pipe, molecules):
    ran = []
    tiny_pipe.llm.generate = lambda **kw: ran.append(kw)
    try:
        with pytest.raises(UserInputError, match=r"for a list of molecules call pipe\.answer_batch\(molecules") as info:
            tiny_pipe(molecules, task="logp", **FAST)
    finally:
        del tiny_pipe.llm.generate
    assert info.value.argument == "molecule" and ran == []
    with pytest.raises(UserInputError, match="for one molecule call the pipeline itself") as info:
        tiny_pipe.answer_batch(ASPIRIN, task="logp", **FAST)
    assert info.value.argument == "molecules"


def test_incomplete_snapshot_says_how_to_download(tmp_path):
    with pytest.raises(WeightsUnavailable, match="demohub download molm3d"):
        MoLM3DPipeline.from_pretrained(tmp_path, device="cpu")


def test_resolve_from_hf_cache_layout_and_load_through_context(tiny_snapshot, tmp_path, monkeypatch):
    sha = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--Sihangli--3D-MoLM"
    shutil.copytree(tiny_snapshot, repo / "snapshots" / sha)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(sha)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("DEMOHUB_CHECKPOINTS", str(tmp_path / "no-bundled"))
    monkeypatch.setenv("DEMOHUB_DEVICE", "cpu")
    monkeypatch.setenv("DEMOHUB_DTYPE", "float32")
    ws = DEMO.weight_set("generalist")
    assert weights.state(DEMO.id, ws) is weights.WeightState.CACHED
    folder = weights.resolve(DEMO.id, ws, allow_download=False)
    assert folder == repo / "snapshots" / sha
    ctx = DemoContext(DEMO, ModelPool(budget_bytes=10**9))
    pipe = ctx.pipeline()
    assert ctx.pipeline() is pipe and (DEMO.id, "generalist") in ctx.pool
    answer = pipe("CCO", task="tpsa", **FAST)
    assert answer.reference.value == pytest.approx(20.23, abs=0.01)


def test_the_static_cache_path_a_gpu_decodes_with_gives_the_same_answers(tiny_pipe):
    """On a GPU the answer decodes with a static KV cache (transformers compiles its steps with CUDA graphs there);
    the same path run on the CPU gives, token for token, the answers of the CPU's own path (stored prompt starts, one
    prefill for the beams), with the official beams and the fast decoding, one molecule and a padded batch."""
    from apps.molm3d.pipeline import MoLM3DPipeline

    assert tiny_pipe.static_cache is False  # a CPU pipeline keeps its stored prompt starts
    static = MoLM3DPipeline(tiny_pipe.encoder, tiny_pipe.llm, tiny_pipe.tokenizer, "cpu", tiny_pipe.dtype,
                            static_cache=True)
    assert MoLM3DPipeline(None, None, None, "cuda:0").static_cache is True
    calls = []
    generate = tiny_pipe.llm.generate
    tiny_pipe.llm.generate = lambda **kw: calls.append(kw) or generate(**kw)
    try:
        for kwargs in ({"task": "logp", "max_new_tokens": 8, "min_new_tokens": 8},
                       {"task": "caption", "decoding": "fast", "max_new_tokens": 12}):
            calls.clear()
            expected = [a.text for a in tiny_pipe.answer_batch([ASPIRIN, "CCO"], **kwargs)]
            expected.append(tiny_pipe(CAFFEINE, **kwargs).text)
            found = [a.text for a in static.answer_batch([ASPIRIN, "CCO"], **kwargs)]
            found.append(static(CAFFEINE, **kwargs).text)
            assert found == expected
            cached = [kw for kw in calls if kw.get("cache_implementation") == "static"]
            assert len(cached) == 2 and all(kw == without_prefill(kw) for kw in cached)  # no cache of ours
    finally:
        del tiny_pipe.llm.generate
