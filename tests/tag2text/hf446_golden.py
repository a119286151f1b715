"""Golden beam-search outputs from transformers 4.46.3, the version the official Tag2Text code runs on.

Regenerate (needs transformers 4.46.3 importable, e.g. ``pip install --target /tmp/tf446 --no-deps
transformers==4.46.3 tokenizers==0.20.3 huggingface_hub==0.26.5``):

    PYTHONPATH=/tmp/tf446 python -m tests.tag2text.hf446_golden

It runs Hugging Face ``generate(num_beams=3, min_length=8, max_length=20)`` on our tiny random caption decoder
(no cache, full prefix each step) and stores the token ids. ``test_pipeline`` checks that our own beam search
gives the same ids. transformers 5.x's rewritten beam search stops differently in some of these cases.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import torch

from apps.tag2text.checkpoint import load_model
from tests.fixtures.tiny_tag2text import write_tiny_checkpoint

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "tag2text_hf446_beams.json"
PROMPT = [30522, 1037, 3861, 1997]
SETTINGS = dict(num_beams=3, max_length=20, min_length=8, eos_token_id=102)
SEP_BIASES = [None, 3.4, 4.2, 5.0, 5.8, 6.6]  # None: random decoder; higher: [SEP] ends captions sooner


def cases():
    """(decoder, encoder_states) pairs, the same on every run."""
    with tempfile.TemporaryDirectory() as tmp:
        write_tiny_checkpoint(tmp, seed=0)
        model, _ = load_model(tmp)
    decoder = model.text_decoder
    gen = torch.Generator().manual_seed(0)
    for bias in SEP_BIASES:
        states = torch.randn(2, 40, model.config.text.hidden_size, generator=gen)
        if bias is not None:
            with torch.no_grad():
                decoder.cls.predictions.bias[102] = bias
        yield decoder, states


def hf_generate(decoder, states) -> list[list[int]]:
    from transformers import GenerationMixin, PretrainedConfig, PreTrainedModel
    from transformers.modeling_outputs import CausalLMOutput

    class Config(PretrainedConfig):
        model_type = "tag2text-caption-decoder"

    class Wrapped(PreTrainedModel, GenerationMixin):
        config_class = Config

        def __init__(self):
            super().__init__(Config())
            self.decoder = decoder

        def forward(self, input_ids, **kwargs):
            rows = states.repeat_interleave(input_ids.shape[0] // states.shape[0], 0)
            logits, _ = self.decoder(input_ids, None, None, rows)
            return CausalLMOutput(logits=logits[:, None, :])

        def prepare_inputs_for_generation(self, input_ids, **kwargs):
            return {"input_ids": input_ids}

    out = Wrapped().eval().generate(torch.tensor([PROMPT] * states.shape[0]), do_sample=False, use_cache=False,
                                    pad_token_id=0, bos_token_id=30522, **SETTINGS)
    return [[t for t in row.tolist() if t not in (0, 102)] for row in out]


if __name__ == "__main__":
    import transformers

    assert transformers.__version__ == "4.46.3", transformers.__version__
    torch.set_num_threads(1)
    golden = [hf_generate(decoder, states) for decoder, states in cases()]
    GOLDEN.write_text(json.dumps({"transformers": transformers.__version__, "settings": SETTINGS,
                                  "sequences": golden}) + "\n")
    print([[len(s) for s in pair] for pair in golden])
