"""3D-MoLM inference: molecules + question -> answers, UI-free.

``MoLM3DPipeline.from_pretrained(path)`` reads the official snapshot layout::

    path/uni-mol/mol_pre_no_h_220816.pt        Uni-Mol encoder (key ``model``)
    path/generalist/generalist.ckpt            Lightning ckpt: ``state_dict`` with ``blip2opt.`` keys
    path/llama-2-7b-hf/                        config.json, tokenizer.model, pytorch_model-0000{1,2}-of-00002.bin

Every size comes from those files (Uni-Mol and Q-Former sizes from tensor shapes, Llama from its config.json),
so the tiny test snapshot loads through the same code.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from transformers import LogitsProcessorList, RepetitionPenaltyLogitsProcessor

from apps.molm3d import conformer as conf
from apps.molm3d.llm import load_llama
from apps.molm3d.properties import PropertyReference, reference
from apps.molm3d.qformer import MolQFormer, QFormerConfig
from apps.molm3d.tasks import EVAL_DECODING, NUM_MOL_TOKENS, build_prompt, get_task, instruction_for, parse_number
from apps.molm3d.tokenizer import MoLMTokenizer
from apps.molm3d.unimol import collate, load_unimol
from shared.checkpoints import load_torch_checkpoint
from shared.errors import CheckpointError, UserInputError

UNIMOL_FILE = "uni-mol/mol_pre_no_h_220816.pt"
GENERALIST_FILE = "generalist/generalist.ckpt"
LLAMA_DIR = "llama-2-7b-hf"
PREFIX = "blip2opt."
MAX_BATCH = 16


@dataclass
class MoLMAnswer:
    smiles: str
    task: str
    instruction: str
    prompt: str
    text: str  # the model's answer
    value: float | None = None  # first decimal number in the answer, for property tasks
    unit: str = ""
    reference: PropertyReference | None = None  # RDKit value where RDKit can compute it
    notes: list[str] = field(default_factory=list)  # conformer and prompt warnings
    seconds: float = 0.0

    @property
    def difference(self) -> float | None:
        return self.reference.difference(self.value) if self.reference else None


def load_checkpoint(path: Path) -> dict[str, torch.Tensor]:
    """The ``state_dict`` of a Lightning checkpoint, ``blip2opt.`` stripped as the official loaders do."""
    ckpt = load_torch_checkpoint(path)
    sd = ckpt.get("state_dict", ckpt)
    return {k.split(PREFIX, 1)[1]: v for k, v in sd.items() if PREFIX in k}


class RepetitionPenalty(RepetitionPenaltyLogitsProcessor):
    """The plain penalty over generated ids (the prompt is embeddings, so it is not penalised, as upstream).

    Passed as a processor because transformers 5's own ``repetition_penalty`` skips as many ids as a row has left
    padding, which with ``inputs_embeds`` wrongly exempts a padded row's first generated tokens (batch != single).
    """


class MoLM3DPipeline:
    def __init__(self, encoder: MolQFormer, llm, tokenizer: MoLMTokenizer, device: str = "cpu",
                 dtype: torch.dtype = torch.float32, unused_unimol_keys: list[str] | None = None):
        self.encoder, self.llm, self.tokenizer = encoder, llm, tokenizer
        self.device, self.dtype = device, dtype
        self.unused_unimol_keys = unused_unimol_keys or []

    @classmethod
    def from_pretrained(cls, path: str | Path, device: str | None = None, dtype: torch.dtype | None = None,
                        quantization: str | None = None, seed: int = 0) -> MoLM3DPipeline:
        """Load from a snapshot folder; ``quantization`` '8bit'/'4bit' needs CUDA + bitsandbytes (untested here)."""
        from shared.device import pick_device, pick_dtype

        path = Path(path)
        for rel in (UNIMOL_FILE, GENERALIST_FILE, f"{LLAMA_DIR}/config.json", f"{LLAMA_DIR}/tokenizer.model"):
            if not (path / rel).is_file():
                raise CheckpointError(f"The 3D-MoLM weights folder is incomplete: {rel} is missing. "
                                      "Run `demohub download molm3d` to fetch the official files.")
        device = device or pick_device()
        dtype = dtype or pick_dtype(device)
        unimol, unused = load_unimol(path / UNIMOL_FILE)
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
        llm = load_llama(path / LLAMA_DIR, lora, len(tokenizer), device, dtype, quantization, seed)
        if llm.config.hidden_size != encoder.llm_proj.out_features:
            raise ValueError(f"llm_proj gives {encoder.llm_proj.out_features} features, the LLM takes "
                             f"{llm.config.hidden_size}")
        return cls(encoder.to(device).eval(), llm, tokenizer, device, dtype, unused)

    def memory_bytes(self) -> int:
        return sum(t.numel() * t.element_size() for m in (self.encoder, self.llm)
                   for t in [*m.parameters(), *m.buffers()])

    def __call__(self, molecules, question: str | None = None, task: str | None = None, **kwargs):
        return self.ask(molecules, question, task, **kwargs)

    @torch.no_grad()
    def ask(self, molecules, question: str | None = None, task: str | None = None, *, seed: int = 42,
            num_beams: int | None = None, max_new_tokens: int | None = None, min_new_tokens: int | None = None):
        """Answer ``question`` (or the ``task``'s instruction) about one molecule or a list of them.

        ``molecules``: SMILES, MOL/SDF text or ``conformer.Conformer`` objects. Decoding follows the official
        evaluation (5 beams, repetition penalty 1.2, length penalty 0.8, per-task token limits) unless overridden.
        Returns one ``MoLMAnswer`` for one molecule, a list for a list.
        """
        single = not isinstance(molecules, (list, tuple))
        items = [molecules] if single else list(molecules)
        if not items:
            raise UserInputError("No molecule given: pass a SMILES string or an SDF/MOL block.")
        if len(items) > MAX_BATCH:
            raise UserInputError(f"{len(items)} molecules in one call; send at most {MAX_BATCH} at a time.")
        spec = get_task(task, question)
        instruction, notes = instruction_for(spec, question)
        start = time.perf_counter()
        confs = [m if isinstance(m, conf.Conformer) else conf.featurize(m, seed=seed) for m in items]
        prompts = [build_prompt(instruction, c.smiles) for c in confs]
        embeds, mask = self._inputs(confs, prompts)
        out = self.llm.generate(
            inputs_embeds=embeds, attention_mask=mask, do_sample=False,
            num_beams=num_beams or EVAL_DECODING["num_beams"], length_penalty=EVAL_DECODING["length_penalty"],
            logits_processor=LogitsProcessorList([RepetitionPenalty(EVAL_DECODING["repetition_penalty"])]),
            max_new_tokens=max_new_tokens or spec.max_new_tokens,
            min_new_tokens=spec.min_new_tokens if min_new_tokens is None else min_new_tokens,
            eos_token_id=self.tokenizer.eos_token_id, pad_token_id=self.tokenizer.pad_token_id,
        )
        seconds = (time.perf_counter() - start) / len(confs)
        answers = []
        for c, prompt, ids in zip(confs, prompts, out, strict=True):
            text = self.tokenizer.decode(ids.tolist())
            value = parse_number(text) if spec.numeric else None
            ref = reference(spec.key, c.mol) if spec.numeric else None
            answers.append(MoLMAnswer(c.smiles, spec.key, instruction, prompt, text, value, spec.unit, ref,
                                      [*c.warnings, *notes], seconds))
        return answers[0] if single else answers

    def _inputs(self, confs, prompts) -> tuple[torch.Tensor, torch.Tensor]:
        """Left-padded prompt embeddings with the 8 ``<mol>`` rows replaced by the projected Q-Former output."""
        graph = collate(confs, self.device)
        mol_embeds = self.encoder(**graph).to(self.dtype)  # [B, 8, H]
        ids = [self.tokenizer.encode(p) for p in prompts]
        for row in ids:
            if row.count(self.tokenizer.mol_token_id) != NUM_MOL_TOKENS:
                raise UserInputError(f"The prompt must hold exactly {NUM_MOL_TOKENS} molecule tokens; remove "
                                     "special tokens such as <mol> or [PAD] from the input.")
        width = max(len(r) for r in ids)
        pad = self.tokenizer.pad_token_id
        tokens = torch.tensor([[pad] * (width - len(r)) + r for r in ids], device=self.device)
        mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in ids], device=self.device)
        embeds = self.llm.get_input_embeddings()(tokens)
        is_mol = tokens.eq(self.tokenizer.mol_token_id)
        embeds[is_mol] = mol_embeds.reshape(-1, mol_embeds.shape[-1])
        return embeds, mask
