"""CodeSage on CPU: the paper's evaluation path (the official remote code) and ours side by side, on the same
full-size random weights and the same token ids (issue #39).

Run by hand (not in CI): the official side needs transformers 4.x (its ``modeling_codesage.py`` imports ``Conv1D``
from ``transformers.modeling_utils``, which transformers 5 no longer has), in an environment of its own:

    python3 -m venv /tmp/codesage-official
    /tmp/codesage-official/bin/pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
    /tmp/codesage-official/bin/pip install transformers==4.46.3 numpy
    # the remote code of codesage/codesage-small, modeling_codesage.py and config_codesage.py, in one folder
    # (e.g. /tmp/codesage-official/code; tests/codesage/README.md gives their sha256)
    python benchmarks/codesage_official.py --official-python /tmp/codesage-official/bin/python \\
        --official /tmp/codesage-official/code

What it does: writes codesage-small at its released size (config.json in the official layout: vocab 49,154, width
1,024, 6 layers, 8 heads, MLP 4,096, 1,024 positions; model.safetensors with seeded random weights drawn as the
official ``_init_weights`` does, N(0, 0.02), under the official key names) and 1,000 snippets of token ids whose
lengths are drawn with a fixed seed from a log-normal with median 120 tokens (sigma 0.75, capped at 1,024), plus a
query of 20 tokens. No tokenizer: both sides get the same ids, each sequence ``ids[: code_length - 1] + [eos]`` as
the evaluation's ``convert_*_examples_to_features``. Then, ``--repeats`` rounds, ours and the official side (a
process of its own, started anew each round) one after the other:

- (a) embedding the snippets at ``code_length`` 1,024 (what scripts/run_code2code_search.sh and
  run_nl2code_search.sh pass) and 256 (the evaluation scripts' argparse default). Official: as its evaluation does,
  every snippet padded to ``code_length``, ``attention_mask = ids != pad_token_id``, ``pooler_output``
  L2-normalised, in batches of ``--official-batch`` (the scripts pass 128 to 256 on GPUs: on 2 cores the attention
  weights of 128 x 8 heads x 1,024² fp32 alone are 4.3 GB, so 8). Ours: ``embed_sequences`` (length-sorted batches of
  at most 8,192 padded tokens, the pipeline's call). The official path's cost does not depend on a snippet's tokens
  (each is padded to ``code_length``), so it is measured on the first ``--official-subset`` snippets and scaled to
  all of them: the table says so. Ours is measured on all of them.
- (b) one query against the 1,000 snippets' embeddings: official, the query padded to ``nl_length`` 128, its
  normalised ``pooler_output``, then ``np.matmul`` with the code matrix (as nl2code_search.py); ours,
  ``embed_sequences`` on the query then a dot product. The median of ``--query-calls`` calls after a warm-up.

fp32, ``--threads`` threads both sides. The first round also compares both sides' embeddings of the same snippets
and the query (max abs difference printed).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RELEASED = {"vocab_size": 49154, "hidden_size": 1024, "num_hidden_layers": 6, "num_attention_heads": 8,
            "intermediate_size": 4096, "max_position_embeddings": 1024}  # codesage-small's config.json
SNIPPETS, MEDIAN_TOKENS, SIGMA, QUERY_TOKENS = 1000, 120, 0.75, 20
CODE_LENGTHS, NL_LENGTH = (1024, 256), 128
FIRST_PLAIN_ID = 5  # ids 0-4 are StarCoder's special tokens; the two added tokens are the last two ids


def sequence(tokens: np.ndarray, length: int, eos: int) -> list[int]:
    """The evaluation's sequence: at most ``length - 1`` tokens, then the end-of-sequence token."""
    return [*tokens[: length - 1].tolist(), eos]


def snippets(work: Path) -> tuple[list[np.ndarray], np.ndarray]:
    data = np.load(work / "snippets.npz")
    return np.split(data["tokens"], np.cumsum(data["lengths"])[:-1]), data["query"]


def official_side(work: Path, official: Path, args) -> dict:
    """One round of the official path (runs in the official environment; imports nothing of this project but the
    recorder of its parity fixture, which needs only numpy and the official code)."""
    import torch

    torch.set_num_threads(args.threads)
    sys.path.insert(0, str(ROOT))
    from tests.codesage.record_official import official_embed, official_model

    model, _ = official_model(work, official)
    pad, eos = model.config.pad_token_id, model.config.eos_token_id
    codes, query = snippets(work)

    def padded(tokens: np.ndarray, length: int) -> list[int]:
        ids = sequence(tokens, length, eos)
        return ids + [pad] * (length - len(ids))

    def embed(rows: list[list[int]]) -> np.ndarray:
        out = [official_embed(model, torch.tensor(rows[a:a + args.official_batch]), pad)[1].numpy()
               for a in range(0, len(rows), args.official_batch)]
        return np.concatenate(out)

    embed([padded(codes[0], CODE_LENGTHS[-1])])  # warm-up
    seconds, cpu = {}, {}
    for length in CODE_LENGTHS:
        rows = [padded(tokens, length) for tokens in codes[: args.official_subset]]
        start, start_cpu = time.perf_counter(), time.process_time()
        vectors = embed(rows)
        seconds[str(length)], cpu[str(length)] = time.perf_counter() - start, time.process_time() - start_cpu
        np.save(work / f"official_{length}.npy", vectors)
    code_vecs = np.load(work / f"ours_{CODE_LENGTHS[0]}.npy")  # the whole code matrix (ours: the same values)
    calls = []
    for _ in range(args.query_calls + 1):
        start, start_cpu = time.perf_counter(), time.process_time()
        nl_vec = embed([padded(query, NL_LENGTH)])
        scores = np.matmul(nl_vec, code_vecs.T)
        calls.append((time.perf_counter() - start, time.process_time() - start_cpu))
    np.save(work / "official_query.npy", nl_vec)
    return {"codes": seconds, "codes_cpu": cpu, "query": statistics.median(c[0] for c in calls[1:]),
            "query_cpu": statistics.median(c[1] for c in calls[1:]), "scores_shape": list(scores.shape)}


def write_work(work: Path) -> None:
    """codesage-small at full size in the official layout (config.json, model.safetensors) and the token ids."""
    import torch
    from safetensors.torch import save_file

    from apps.codesage.model import CodeSageConfig, CodeSageEncoder
    from tests.fixtures.tiny_codesage import official_config

    work.mkdir(parents=True, exist_ok=True)
    config = official_config(**RELEASED)  # pad_token_id: the last id, 49153 as released
    (work / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    generator = torch.Generator().manual_seed(0)
    with torch.device("meta"):
        model = CodeSageEncoder(CodeSageConfig.from_file(work / "config.json"))
    state = {}
    for name, value in model.state_dict().items():  # the official _init_weights: N(0, 0.02); LayerNorms 1 and 0
        if "ln_" in name:
            state[name] = torch.ones(value.shape) if name.endswith("weight") else torch.zeros(value.shape)
        elif name.endswith("bias"):
            state[name] = torch.zeros(value.shape)
        else:
            state[name] = torch.randn(value.shape, generator=generator) * config["initializer_range"]
    save_file(state, str(work / "model.safetensors"), metadata={"format": "pt"})
    rng = np.random.default_rng(0)
    lengths = np.clip(np.rint(rng.lognormal(np.log(MEDIAN_TOKENS), SIGMA, SNIPPETS)), 1, 1024).astype(np.int64)
    high = RELEASED["vocab_size"] - 2  # below the added tokens (<mask>, <pad>)
    np.savez(work / "snippets.npz", lengths=lengths, tokens=rng.integers(FIRST_PLAIN_ID, high, int(lengths.sum())),
             query=rng.integers(FIRST_PLAIN_ID, high, QUERY_TOKENS))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--official", type=Path, required=True, help="folder with the official modeling_codesage.py "
                                                                     "and config_codesage.py")
    parser.add_argument("--official-python", default=sys.executable, help="the official environment's python")
    parser.add_argument("--work", type=Path, default=Path("/tmp/codesage-official-bench"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--official-batch", type=int, default=8)
    parser.add_argument("--official-subset", type=int, default=32, help="snippets the official side embeds per "
                                                                        "code_length (its time is scaled to all)")
    parser.add_argument("--query-calls", type=int, default=20)
    parser.add_argument("--side", choices=["official"], help=argparse.SUPPRESS)  # the official process
    args = parser.parse_args(argv)
    if args.side == "official":
        print(json.dumps(official_side(args.work, args.official, args)))
        return 0

    sys.path.insert(0, str(ROOT))
    import torch

    from apps.codesage.model import embed_sequences, load_encoder
    from benchmarks.common import print_table

    torch.set_num_threads(args.threads)
    if not (args.work / "snippets.npz").is_file():
        write_work(args.work)
    encoder = load_encoder(args.work)
    pad, eos = encoder.config.pad_token_id, encoder.config.eos_token_id
    codes, query = snippets(args.work)
    sequences = {length: [tuple(sequence(t, length, eos)) for t in codes] for length in CODE_LENGTHS}
    query_ids = tuple(sequence(query, NL_LENGTH, eos))
    embed_sequences(encoder, sequences[CODE_LENGTHS[-1]][:8], pad)  # warm-up

    def ours_query(code_vecs: torch.Tensor) -> tuple[float, float, torch.Tensor]:
        start, start_cpu = time.perf_counter(), time.process_time()
        vector = embed_sequences(encoder, [query_ids], pad)
        code_vecs @ vector[0]
        return time.perf_counter() - start, time.process_time() - start_cpu, vector

    load = [os.getloadavg()[0]]
    started = time.perf_counter()
    rounds: dict[str, list[float]] = {}
    notes = []
    for round_ in range(args.repeats):
        for length in CODE_LENGTHS:
            start, start_cpu = time.perf_counter(), time.process_time()
            vectors = embed_sequences(encoder, sequences[length], pad)
            rounds.setdefault(f"ours {length}", []).append(time.perf_counter() - start)
            rounds.setdefault(f"ours {length} cpu", []).append(time.process_time() - start_cpu)
            np.save(args.work / f"ours_{length}.npy", vectors.numpy())
        code_vecs = torch.from_numpy(np.load(args.work / f"ours_{CODE_LENGTHS[0]}.npy"))
        ours_query(code_vecs)  # warm-up
        calls = [ours_query(code_vecs) for _ in range(args.query_calls)]
        rounds.setdefault("ours query", []).append(statistics.median(c[0] for c in calls))
        rounds.setdefault("ours query cpu", []).append(statistics.median(c[1] for c in calls))
        result = subprocess.run([args.official_python, __file__, "--side", "official", "--official",
                                 str(args.official), "--work", str(args.work), "--threads", str(args.threads),
                                 "--official-batch", str(args.official_batch), "--official-subset",
                                 str(args.official_subset), "--query-calls", str(args.query_calls)],
                                capture_output=True, text=True, check=False)
        if result.returncode:
            raise SystemExit(f"the official side failed:\n{result.stderr[-3000:]}")
        official = json.loads(result.stdout.strip().splitlines()[-1])
        for length in CODE_LENGTHS:
            for key, part in ((f"official {length}", "codes"), (f"official {length} cpu", "codes_cpu")):
                rounds.setdefault(key, []).append(official[part][str(length)] * len(codes) / args.official_subset)
        rounds.setdefault("official query", []).append(official["query"])
        rounds.setdefault("official query cpu", []).append(official["query_cpu"])
        if round_ == 0:
            diffs = [float(np.abs(np.load(args.work / f"official_{length}.npy")
                                  - np.load(args.work / f"ours_{length}.npy")[: args.official_subset]).max())
                     for length in CODE_LENGTHS]
            query_diff = float(np.abs(np.load(args.work / "official_query.npy") - calls[0][2].numpy()).max())
            notes.append(f"both sides' unit embeddings of the same {args.official_subset} snippets differ by at most "
                         f"{max(diffs):.1e} (max abs; code_length 1024: {diffs[0]:.1e}, 256: {diffs[1]:.1e}); the "
                         f"query's by {query_diff:.1e}.")
        load.append(os.getloadavg()[0])
    m = {k: float(np.median(v)) for k, v in rounds.items()}
    lengths = np.asarray([len(t) for t in codes])
    tokens = {length: sum(len(s) for s in sequences[length]) for length in CODE_LENGTHS}
    print(f"Note: codesage-small full size ({sum(p.numel() for p in encoder.parameters()) / 1e6:.1f}M parameters), "
          f"random weights, fp32, torch {torch.__version__}, {args.threads} thread(s), {args.repeats} round(s) "
          f"(median), {time.perf_counter() - started:.0f} s in all; load average "
          f"{' -> '.join(f'{x:.2f}' for x in load)}. {len(codes):,} snippets of {lengths.min()}-{lengths.max()} tokens "
          f"(median {int(np.median(lengths))}, mean {lengths.mean():.0f}); with the end token, "
          f"{tokens[1024]:,} tokens read at code_length 1024 and {tokens[256]:,} at 256 "
          f"({int((lengths > 255).sum())} of them cut), where the official path runs "
          f"{len(codes) * 1024:,} and {len(codes) * 256:,} positions. Official: batches of {args.official_batch}, "
          f"measured on the first {args.official_subset} snippets and scaled by {len(codes)}/{args.official_subset} "
          f"(its cost per snippet does not depend on the snippet: each is padded to code_length).")
    notes.append("the machine is shared, so wall time depends on what else runs; in CPU seconds of each side's "
                 "process (both threads) the snippets cost " + "; ".join(
                     f"at code_length {length} {m[f'official {length} cpu']:.0f} s official (scaled the same way) "
                     f"against {m[f'ours {length} cpu']:.0f} s ours, "
                     f"{m[f'official {length} cpu'] / m[f'ours {length} cpu']:.2f}×" for length in CODE_LENGTHS)
                 + f"; the query {m['official query cpu'] * 1000:.0f} ms against {m['ours query cpu'] * 1000:.0f} ms, "
                 f"{m['official query cpu'] / m['ours query cpu']:.2f}×.")
    for note in notes:
        print(f"Note: {note}")
    print()
    subset = f"measured on {args.official_subset}, × {len(codes) / args.official_subset:g}"
    print_table(["request", "official path", "ours", "official / ours"], [
        *[[f"embed {len(codes):,} snippets, code_length {length} (official: each padded to {length}, "
           f"{subset}; ours: length-sorted batches, all {len(codes):,} measured)",
           f"{m[f'official {length}']:.1f} s", f"{m[f'ours {length}']:.1f} s",
           f"{m[f'official {length}'] / m[f'ours {length}']:.2f}×"] for length in CODE_LENGTHS],
        [f"one query of {QUERY_TOKENS} tokens against the {len(codes):,} embeddings (official: padded to nl_length "
         f"{NL_LENGTH}, np.matmul; ours: embed_sequences, a dot product)", f"{m['official query'] * 1000:.0f} ms",
         f"{m['ours query'] * 1000:.0f} ms", f"{m['official query'] / m['ours query']:.2f}×"],
    ])
    return 0


if __name__ == "__main__":
    sys.exit(main())
