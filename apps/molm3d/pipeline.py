"""3D-MoLM inference: molecules + question -> answers, UI-free, in the shape of ``shared.pipeline``.

``MoLM3DPipeline.from_pretrained(path, device=..., dtype=...)`` reads the official snapshot layout::

    path/uni-mol/mol_pre_no_h_220816.pt        Uni-Mol encoder (key ``model``)
    path/generalist/generalist.ckpt            Lightning ckpt: ``state_dict`` with ``blip2opt.`` keys
    path/llama-2-7b-hf/                        config.json, tokenizer.model, pytorch_model-0000{1,2}-of-00002.bin

Every size comes from those files (Uni-Mol and Q-Former sizes from tensor shapes, Llama from its config.json),
so the tiny test snapshot (tests/fixtures/tiny_molm3d.py) loads through the same code.

``MoLM3DPipeline.check_inputs`` holds every check of a request and needs no weights. ``pipe(molecule, question, task,
callback=...)`` runs it first and returns one frozen ``MoLM3DOutput`` (the one pipeline contract);
``pipe.answer_batch(molecules, question, task, callback=...)`` asks the same about up to ``MAX_BATCH`` molecules in
one padded ``generate`` and returns a tuple of them, one per molecule, each the answer ``pipe`` gives for it alone.
"""

from __future__ import annotations

import copy
import inspect
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from apps.molm3d import checks
from apps.molm3d import conformer as conf
from apps.molm3d.checks import MoLM3DInputs
from apps.molm3d.llm import load_llama
from apps.molm3d.properties import PropertyReference, reference
from apps.molm3d.tasks import (
    EVAL_DECODING,
    NUM_MOL_TOKENS,
    PROMPT_TEMPLATE,
    QUANTIZED_NOTE,
    build_prompt,
    calibration_requests,
    parse_number,
)
from shared import pool
from shared.checkpoints import load_torch_checkpoint, tensors_digest
from shared.errors import CheckpointError, named_argument
from shared.pipeline import Callback, Pipeline, PipelineOutput, to_json

UNIMOL_FILE = "uni-mol/mol_pre_no_h_220816.pt"
GENERALIST_FILE = "generalist/generalist.ckpt"
LLAMA_DIR = "llama-2-7b-hf"
PREFIX = "blip2opt."
MAX_SEED = conf.MAX_SEED  # RDKit's randomSeed limit (conformer.py)


@dataclass(frozen=True)
class MoLM3DOutput(PipelineOutput):
    """One molecule's answer. ``to_dict()`` (what the ``/ask`` endpoint returns) adds ``difference`` and leaves out
    ``seconds``, so the same request gives the same dictionary."""

    smiles: str
    task: str
    instruction: str
    prompt: str
    text: str  # the model's answer
    value: float | None = None  # first decimal number in the answer, for property tasks
    unit: str = ""
    reference: PropertyReference | None = None  # RDKit value where RDKit can compute it
    notes: tuple[str, ...] = ()  # conformer and prompt warnings
    seconds: float = field(default=0.0, compare=False, metadata={"json": False})

    @property
    def difference(self) -> float | None:
        """model - RDKit, or None when either side has no number."""
        return self.reference.difference(self.value) if self.reference else None

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "difference": to_json(self.difference)}


def load_checkpoint(path: Path) -> dict[str, torch.Tensor]:
    """The ``state_dict`` of a Lightning checkpoint, ``blip2opt.`` stripped as the official loaders do."""
    ckpt = load_torch_checkpoint(path)
    sd = ckpt.get("state_dict", ckpt)
    return {k.split(PREFIX, 1)[1]: v for k, v in sd.items() if PREFIX in k}


class _StepCounter:
    """A logits processor that only counts: transformers calls it once per generated token (all beams at once)."""

    def __init__(self, on_token):
        self.on_token = on_token

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        self.on_token()
        return scores


class _PartialText:
    """A logits processor that reads: every ``every`` new tokens it decodes each molecule's best running sequence so
    far (the first of its ``beams`` rows: transformers keeps a molecule's running beams sorted by score) and gives
    ``on_text`` the text (``single``) or a tuple of texts, one per molecule, so a reader sees the answers grow."""

    def __init__(self, tokenizer, on_text: Callable[[Any], None], every: int, beams: int, single: bool):
        self.tokenizer, self.on_text, self.every, self.beams, self.single = tokenizer, on_text, every, beams, single
        self.steps = 0

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        self.steps += 1
        if input_ids.shape[1] and self.steps % self.every == 0:  # the prompt is embeddings: ids are the answer
            texts = tuple(self.tokenizer.decode(row.tolist()) for row in input_ids[::self.beams])
            self.on_text(texts[0] if self.single else texts)
        return scores


PREFIX_CACHE_SIZE = 4  # instructions whose prompt start is kept (Llama-2-7B: ~0.5 MB a token, ~35 MB each)
STREAM_EVERY = 4  # new tokens between two partial texts: a few words, a redraw a CPU second or so


class MoLM3DPipeline(Pipeline):
    """Uni-Mol -> Q-Former -> 8 ``<mol>`` embeddings in a Llama-2 prompt (LoRA merged) -> 5-beam answer."""

    output_class = MoLM3DOutput
    components = ("encoder", "llm")

    def __init__(self, encoder, llm, tokenizer, device: str = "cpu", dtype: torch.dtype = torch.float32,
                 quantization: str | None = None, static_cache: bool | None = None):
        self.encoder, self.llm, self.tokenizer = encoder, llm, tokenizer  # MolQFormer, LlamaForCausalLM, MoLMTokenizer
        self.device, self.dtype, self.quantization = device, dtype, quantization  # "int8"/"int4": every answer says
        # On a GPU the answer decodes with a static KV cache, which transformers' generate compiles with CUDA graphs
        # (issue #40: one kernel launch a step instead of hundreds); on a CPU (None: by the device) the stored prompt
        # starts serve instead (_prefill). Both give the same tokens (tests/molm3d/test_pipeline.py, on the CPU).
        self.static_cache = str(device).startswith("cuda") if static_cache is None else static_cache
        self._prefixes: OrderedDict[tuple[int, ...], Any] = OrderedDict()  # prompt starts -> KV cache (_prefill)
        self._prefix_lock = threading.Lock()
        self._preamble: tuple[tuple[int, ...], Any] | None = None  # the template's preamble, every prompt's start

    @classmethod
    def from_pretrained(cls, path: str | Path, *, device: str = "cpu", dtype: torch.dtype = torch.float32,
                        quantization: str | None = None, seed: int = 0) -> MoLM3DPipeline:
        """Load from a snapshot folder. ``dtype`` is the LLM's (Uni-Mol, the Q-Former and llm_proj stay fp32);
        ``quantization`` "int8"/"int4" quantises the LLM's Linear weights on a CPU after the LoRA merge
        (``shared.quantize``; ``DEMOHUB_QUANTIZE`` through ``load_pipeline``); ``seed`` draws the two new embedding
        rows."""
        from apps.molm3d.qformer import MolQFormer, QFormerConfig
        from apps.molm3d.tokenizer import MoLMTokenizer
        from apps.molm3d.unimol import load_unimol

        path = Path(path)
        for rel in (UNIMOL_FILE, GENERALIST_FILE, f"{LLAMA_DIR}/config.json", f"{LLAMA_DIR}/tokenizer.model"):
            if not (path / rel).is_file():
                raise CheckpointError(f"The 3D-MoLM weights folder is incomplete: {rel} is missing. "
                                      "Run `demohub download molm3d` to fetch the official files.")
        unimol, _ = load_unimol(path / UNIMOL_FILE)  # and the keys it skips (pretraining heads)
        sd = load_checkpoint(path / GENERALIST_FILE)
        lora = {k[len("llm_model."):]: v for k, v in sd.items() if k.startswith("llm_model.")}
        rest = {k: v.float() for k, v in sd.items() if not k.startswith("llm_model.")}
        encoder = MolQFormer(unimol.config, QFormerConfig.from_state_dict(rest))
        encoder.graph_encoder = unimol
        missing, unexpected = encoder.load_state_dict(rest, strict=False)
        missing = [k for k in missing if not k.startswith("graph_encoder.") and not k.endswith("position_ids")]
        if missing or unexpected:
            raise ValueError(f"{GENERALIST_FILE} does not match the 3D-MoLM model: missing {missing[:5]}, "
                             f"unexpected {unexpected[:5]}")
        tokenizer = MoLMTokenizer(path / LLAMA_DIR / "tokenizer.model")
        llm = load_language_model(path / LLAMA_DIR, lora, tokenizer, encoder.eval(), device, dtype, quantization, seed)
        if llm.config.hidden_size != encoder.llm_proj.out_features:
            raise ValueError(f"llm_proj gives {encoder.llm_proj.out_features} features, the LLM takes "
                             f"{llm.config.hidden_size}")
        return cls(encoder.to(device).eval(), llm, tokenizer, device, dtype, quantization)

    check_inputs = staticmethod(checks.check_inputs)  # torch-free: apps/molm3d/checks.py

    @torch.inference_mode()
    def input_statistics(self) -> dict[str, torch.Tensor]:
        """What each Linear of the language model sees over every task's prompt about a few molecules (their
        ``<mol>`` rows the encoder's, as in an answer): int4's calibration (``shared.quantize.input_statistics``)."""
        from shared.quantize import input_statistics

        requests = [(instruction, conf.featurize(smiles, seed=conf.DEFAULT_SEED))
                    for instruction, smiles in calibration_requests()]

        def run(llm) -> None:  # one prompt at a time, nothing kept (ten prompts' KV caches: about 1 GB at 7B)
            for instruction, c in requests:
                embeds, mask = self._inputs([c], [build_prompt(instruction, c.smiles)])
                llm(inputs_embeds=embeds, attention_mask=mask, use_cache=False)

        return input_statistics(self.llm, run)

    def __call__(self, molecule, question: str | None = None, task: str | None = None, *,
                 seed: int | None = conf.DEFAULT_SEED, decoding: str = "official", num_beams: int | None = None,
                 max_new_tokens: int | None = None, min_new_tokens: int | None = None,
                 callback: Callback | None = None, on_text: Callable[[str], None] | None = None) -> MoLM3DOutput:
        """Answer ``question`` (or the ``task``'s instruction) about one molecule; ``answer_batch`` for a list.

        Decoding follows the official evaluation (5 beams, repetition penalty 1.2, length penalty 0.8, per-task
        token limits) unless overridden; ``decoding="fast"`` is greedy (one beam), the rest unchanged.
        ``callback(step, total)``: one step for the conformer, then one per generated token; ``total`` = 1 +
        ``max_new_tokens``, and the last call is ``(total, total)`` even when the
        answer ends early. ``on_text(text)``: the best answer so far, every ``STREAM_EVERY`` new tokens (the
        returned output holds the final one).
        """
        inputs = self.check_inputs(molecule, question, task, seed=seed, decoding=decoding, num_beams=num_beams,
                                   max_new_tokens=max_new_tokens, min_new_tokens=min_new_tokens)
        return self._answer(inputs, callback, on_text)[0]

    def answer_batch(self, molecules, question: str | None = None, task: str | None = None, *,
                     seed: int | None = conf.DEFAULT_SEED, decoding: str = "official", num_beams: int | None = None,
                     max_new_tokens: int | None = None, min_new_tokens: int | None = None,
                     callback: Callback | None = None, on_text: Callable[[Any], None] | None = None,
                     ) -> tuple[MoLM3DOutput, ...]:
        """``__call__`` for a list of 1 to ``MAX_BATCH`` molecules, one padded ``generate`` for all: one
        ``MoLM3DOutput`` per molecule, in order, each what ``__call__`` gives for that molecule alone.
        ``callback``: one step per conformer built, then one per generated token; ``total`` = molecules +
        ``max_new_tokens``. ``on_text``: a tuple of the answers so far, one per molecule."""
        inputs = self.check_inputs(molecules, question, task, seed=seed, decoding=decoding, num_beams=num_beams,
                                   max_new_tokens=max_new_tokens, min_new_tokens=min_new_tokens, batch=True)
        return self._answer(inputs, callback, on_text)

    @torch.no_grad()
    def _answer(self, inputs: MoLM3DInputs, callback: Callback | None,
                on_text: Callable[[Any], None] | None = None) -> tuple[MoLM3DOutput, ...]:
        """The model's answers for checked inputs, one per molecule (``__call__`` and ``answer_batch``)."""
        from transformers import LogitsProcessorList, RepetitionPenaltyLogitsProcessor

        total = len(inputs.molecules) + inputs.max_new_tokens
        step = 0

        def advance() -> None:
            nonlocal step
            step += 1
            if callback is not None:
                callback(step, total)

        start = time.perf_counter()
        confs = []
        for m in inputs.molecules:
            with named_argument(inputs.argument):  # RDKit may still fail to embed a molecule it could parse
                confs.append(m if isinstance(m, conf.Conformer) else conf.featurize(m, seed=inputs.seed))
            advance()
        prompts = [build_prompt(inputs.instruction, c.smiles) for c in confs]
        embeds, mask = self._inputs(confs, prompts)
        # The plain penalty over generated ids, as a processor: the prompt is embeddings, so it is not penalised (as
        # upstream), and transformers 5's own ``repetition_penalty`` would skip as many ids as a row has left
        # padding, wrongly exempting a padded row's first generated tokens (batch != single).
        processors = [RepetitionPenaltyLogitsProcessor(EVAL_DECODING["repetition_penalty"]), _StepCounter(advance)]
        if on_text is not None:
            processors.append(_PartialText(self.tokenizer, on_text, STREAM_EVERY, inputs.num_beams, inputs.single))
        beams = {"num_beams": inputs.num_beams, "length_penalty": EVAL_DECODING["length_penalty"]} \
            if inputs.num_beams > 1 else {"num_beams": 1}  # greedy: no length penalty to apply
        prefilled = {"cache_implementation": "static"} if self.static_cache else self._prefill(
            embeds, mask, inputs.num_beams, inputs.instruction, [self.tokenizer.encode(p) for p in prompts])
        out = self.llm.generate(
            inputs_embeds=embeds, attention_mask=mask, do_sample=False, **beams, **prefilled,
            logits_processor=LogitsProcessorList(processors),
            max_new_tokens=inputs.max_new_tokens, min_new_tokens=inputs.min_new_tokens,
            eos_token_id=self.tokenizer.eos_token_id, pad_token_id=self.tokenizer.pad_token_id,
        )
        del prefilled  # the KV cache (five beams of a 7B Llama: about 0.5 MB a token each)
        pool.trim_heap()  # its pages back to the system: the next answer's peak starts from the model's
        if step < total and callback is not None:  # every answer ended before max_new_tokens
            callback(total, total)
        seconds = (time.perf_counter() - start) / len(confs)
        spec = inputs.task
        quantized = (QUANTIZED_NOTE.format(mode=self.quantization),) if self.quantization else ()
        answers = []
        for c, prompt, ids in zip(confs, prompts, out, strict=True):
            text = self.tokenizer.decode(ids.tolist())
            answers.append(MoLM3DOutput(
                smiles=c.smiles, task=spec.key, instruction=inputs.instruction, prompt=prompt, text=text,
                value=parse_number(text) if spec.numeric else None, unit=spec.unit,
                reference=reference(spec.key, c.mol) if spec.numeric else None,
                notes=(*c.warnings, *inputs.notes, *quantized), seconds=seconds,
            ))
        return tuple(answers)

    def _prefill(self, embeds: torch.Tensor, mask: torch.Tensor, num_beams: int, instruction: str,
                 ids: list[list[int]]) -> dict[str, Any]:
        """``generate``'s cache argument: the KV cache of every prompt but its last token, computed once per molecule
        and copied to its ``num_beams`` beams (``generate`` alone would copy the prompt to the beams first and run it
        ``num_beams`` times, for the same values: issue #28, 5x the prefill before the first token). One molecule's
        prompt starts from the stored cache of its first tokens (the preamble and the instruction, the same for every
        molecule asked the same): only its molecule and what follows run. The answers are those of ``generate``
        alone, token for token (tests/molm3d/test_pipeline.py)."""
        positions = (mask.long().cumsum(-1) - 1).clamp(min=0)  # as generate numbers left-padded rows
        name = _cache_argument(self.llm.model)
        cache, start = self._shared_prefix(embeds, mask, positions, instruction, ids[0]) if len(ids) == 1 \
            else (None, 0)
        cache = self._extend(cache, embeds, mask, positions, start, embeds.shape[1] - 1)
        if num_beams > 1:
            cache.batch_repeat_interleave(num_beams)
        return {name: cache}

    def _shared_prefix(self, embeds: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor, instruction: str,
                       ids: list[int]) -> tuple[Any, int]:
        """A copy of the KV cache of the prompt's tokens up to its molecule, and how many tokens it holds: computed
        once per instruction (the last ``PREFIX_CACHE_SIZE`` kept) from the preamble's, which every prompt shares
        and which is computed once and kept, so a question the server has not seen runs only its own tokens."""
        before, between, _ = PROMPT_TEMPLATE.split("{}")
        length = _common_length(self.tokenizer.encode(before + instruction + between.rstrip()), ids)
        key = tuple(ids[:length])  # the very tokens, so an instruction never reuses another's cache
        with self._prefix_lock:
            stored = self._prefixes.get(key)
            if stored is not None:
                self._prefixes.move_to_end(key)
            preamble = self._preamble
        if stored is None:
            shared = _common_length(self.tokenizer.encode(before.rstrip()), ids[:length + 1])
            if shared and (preamble is None or preamble[0] != tuple(ids[:shared])):
                preamble = (tuple(ids[:shared]), self._extend(None, embeds, mask, positions, 0, shared))
                with self._prefix_lock:
                    self._preamble = preamble
            stored = copy.deepcopy(preamble[1]) if shared else None
            if length > shared:
                stored = self._extend(stored, embeds, mask, positions, shared, length)
            with self._prefix_lock:
                self._prefixes[key] = stored
                while len(self._prefixes) > PREFIX_CACHE_SIZE:
                    self._prefixes.popitem(last=False)
        return copy.deepcopy(stored), length  # generate appends to the cache it is given

    def _extend(self, cache, embeds: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor, start: int,
                end: int):
        """``cache`` (the KV cache of the prompt's first ``start`` tokens, or None) run on to ``end`` tokens."""
        name = _cache_argument(self.llm.model)
        return self.llm.model(inputs_embeds=embeds[:, start:end], attention_mask=mask[:, :end],
                              position_ids=positions[:, start:end], use_cache=True, **{name: cache})[name]

    def _inputs(self, confs, prompts) -> tuple[torch.Tensor, torch.Tensor]:
        """Left-padded prompt embeddings with the 8 ``<mol>`` rows replaced by the projected Q-Former output."""
        from apps.molm3d.unimol import collate

        graph = collate(confs, self.device)
        mol_embeds = self.encoder(**graph).to(self.dtype)  # [B, 8, H]
        ids = [self.tokenizer.encode(p) for p in prompts]
        if any(row.count(self.tokenizer.mol_token_id) != NUM_MOL_TOKENS for row in ids):
            # check_inputs refuses <mol> in questions and SMILES cannot spell it: this is a bug, not the input
            raise RuntimeError(f"a prompt does not hold exactly {NUM_MOL_TOKENS} molecule tokens")
        width = max(len(r) for r in ids)
        pad = self.tokenizer.pad_token_id
        tokens = torch.tensor([[pad] * (width - len(r)) + r for r in ids], device=self.device)  # [B, T]
        mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in ids], device=self.device)  # [B, T]
        embeds = self.llm.get_input_embeddings()(tokens)  # [B, T, H]
        is_mol = tokens.eq(self.tokenizer.mol_token_id)  # [B, T], 8 per row
        embeds[is_mol] = mol_embeds.reshape(-1, mol_embeds.shape[-1])
        return embeds, mask


def load_language_model(folder: Path, lora: dict[str, torch.Tensor], tokenizer, encoder, device: str,
                        dtype: torch.dtype, quantization: str | None = None, seed: int = 0):
    """3D-MoLM's Llama (``load_llama``); int4 calibrated on every task's prompt, its molecule rows from ``encoder``
    (``MoLM3DPipeline.input_statistics``), the quantised model cached under what the calibration reads: the
    encoder's weights and the prompts' tokens."""
    def calibrate(llm) -> dict[str, torch.Tensor]:
        return MoLM3DPipeline(encoder, llm, tokenizer, device, dtype).input_statistics()

    calibration = ""  # what the calibration reads, the quantised model's cache key (int8 calibrates nothing)
    if quantization == "int4":
        prompts = [tokenizer.encode(build_prompt(i, s)) for i, s in calibration_requests()]
        calibration = f"{tensors_digest(encoder.state_dict())}|{calibration_requests()}|{prompts}"
    return load_llama(folder, lora, len(tokenizer), device, dtype, quantization, seed, calibrate, calibration)


def _common_length(head: list[int], ids: list[int]) -> int:
    """How many first tokens ``head`` and ``ids`` share, never ``ids``' last (a text boundary may merge tokens, and
    the prompt's last token is ``generate``'s to run)."""
    length = 0
    for a, b in zip(head, ids[:-1], strict=False):
        if a != b:
            break
        length += 1
    return length


def _cache_argument(model) -> str:
    """The name a transformers model takes its KV cache by: ``cache`` from transformers 5.25, ``past_key_values``
    before."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
