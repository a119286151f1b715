"""Train our small PraX listeners on CPU: ``demohub train prax literal|pragmatic|specs ...``.

* ``literal``: a listener trained from scratch on random specs from our sampler (upstream: 1 epoch of 300k
  random specs, lr 5e-5, linear schedule, warmup 0.1, batch 32).
* ``pragmatic``: PraX self-play. Each round samples target programs and builds 10-example specs one example at a
  time with RSA (H: the listeners' consistent samples + the target, U: candidate examples consistent with the
  target), then retrains the listener from the literal weights on the prefixes of all rounds' specs.
  We have no speaker model, so U comes from our example sampler over the target (positives from the regex,
  random negatives): a substitute for upstream's sampled speaker utterances. ``--replay F`` (not upstream; 0 by
  default) mixes F fresh random-spec rows per self-play row into each round's training pass.
* ``specs``: held-out spec files (programs from the held-out split) with random or RSA-chosen examples.

Everything is logged to ``<out>/train_log.jsonl``: the config first, then loss points, then a summary.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import torch

from apps.prax import dsl
from apps.prax.dsl import Example
from apps.prax.tokens import PAD_ID, PROGRAM_ID, encode_listener_input, encode_program

MAX_PROGRAM_CHARS = 30


def collate(rows: list[tuple[list[Example], str]]) -> dict[str, torch.Tensor]:
    """Encoder ids, decoder ids (``<extra_id_124>`` + target[:-1]) and labels (target, -100 on padding)."""
    inputs = [encode_listener_input(ctx) for ctx, _ in rows]
    targets = [encode_program(p) for _, p in rows]
    n_in, n_out = max(map(len, inputs)), max(map(len, targets))
    input_ids = torch.full((len(rows), n_in), PAD_ID)
    attention = torch.zeros((len(rows), n_in), dtype=torch.long)
    dec = torch.full((len(rows), n_out), PAD_ID)
    labels = torch.full((len(rows), n_out), -100)
    for i, (x, y) in enumerate(zip(inputs, targets, strict=True)):
        input_ids[i, :len(x)] = torch.tensor(x)
        attention[i, :len(x)] = 1
        dec[i, :len(y)] = torch.tensor([PROGRAM_ID] + y[:-1])
        labels[i, :len(y)] = torch.tensor(y)
    return {"input_ids": input_ids, "attention_mask": attention, "decoder_input_ids": dec, "labels": labels}


def random_rows(rng: random.Random, n: int, max_examples: int = 10) -> list[tuple[list[Example], str]]:
    """``n`` (spec, program) rows: training-split programs, random specs of 1..max_examples examples."""
    rows = []
    while len(rows) < n:
        program = dsl.sample_program(rng, max_chars=MAX_PROGRAM_CHARS).render()
        if dsl.program_split(program) != "train":
            continue
        spec = dsl.sample_spec(program, rng, max_size=max_examples)
        if spec:
            rows.append((spec, program))
    return rows


class JsonlLog:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("")

    def write(self, **record) -> None:
        with self.path.open("a") as f:
            f.write(json.dumps(record) + "\n")
        if record.get("event") != "loss":
            print(json.dumps(record), flush=True)


def _lr_at(step: int, total: int, lr: float, warmup: float, schedule: str) -> float:
    if schedule == "constant":
        return lr
    warm = max(1, int(total * warmup))
    if step < warm:
        return lr * (step + 1) / warm
    return lr * max(0.0, (total - step) / max(1, total - warm))


def train_steps(model, batches, total_steps: int, lr: float, log: JsonlLog, *, warmup: float = 0.1,
                schedule: str = "linear", deadline: float | None = None, log_every: int = 25, phase: str = "") -> dict:
    """One optimiser pass over ``batches`` (an iterator of row lists) with AdamW; stops early at ``deadline``."""
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    start, running, done = time.time(), [], 0
    for step, rows in enumerate(batches):
        if step >= total_steps or (deadline is not None and time.time() > deadline):
            break
        for group in opt.param_groups:
            group["lr"] = _lr_at(step, total_steps, lr, warmup, schedule)
        loss = model(**collate(rows)).loss
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        running.append(loss.item())
        done = step + 1
        if done % log_every == 0:
            log.write(event="loss", phase=phase, step=done, loss=sum(running) / len(running),
                      lr=opt.param_groups[0]["lr"], elapsed_s=round(time.time() - start, 1))
            running = []
    model.eval()
    return {"steps": done, "seconds": round(time.time() - start, 1)}


def train_literal(args) -> None:
    from transformers import T5ForConditionalGeneration

    from apps.prax.model import save_bundled, tiny_config, untied

    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    config = tiny_config(d_model=args.d_model, d_ff=args.d_ff, num_layers=args.layers,
                         num_decoder_layers=args.decoder_layers, num_heads=args.heads, d_kv=args.d_model // args.heads)
    model = untied(T5ForConditionalGeneration(config))
    out = Path(args.out)
    log = JsonlLog(out / "train_log.jsonl")
    n_params = sum(p.numel() for p in model.parameters())
    log.write(event="config", kind="literal", argv=vars(args), parameters=n_params, threads=torch.get_num_threads(),
              model=config.to_diff_dict())

    def batches():
        while True:
            yield random_rows(rng, args.batch_size, args.max_examples)

    deadline = time.time() + args.minutes * 60
    stats = train_steps(model, batches(), args.steps, args.lr, log, warmup=0.1, schedule="linear",
                        deadline=deadline, phase="literal")
    save_bundled(model, out, MAX_PROGRAM_CHARS)
    log.write(event="done", **stats, examples_seen=stats["steps"] * args.batch_size)


# ---------------------------------------------------------------- self-play


def rsa_specs(targets: list[str], listeners: list, rng: random.Random, n_examples: int = 10, samples: int = 16,
              n_pos: int = 10, n_neg: int = 10) -> list[list[Example]]:
    """For each target, choose ``n_examples`` examples one at a time by incremental RSA (all targets batched).

    H = the listeners' consistent samples for the current context plus the target (last row, all ones);
    U = unused candidate examples consistent with the target; u* = argmax_u S1(u | target).
    """
    import numpy as np

    from apps.prax.rsa import choose_next

    specs: list[list[Example]] = [[] for _ in targets]
    for _ in range(n_examples):
        hypotheses: list[list[str]] = [[] for _ in targets]
        for listener in listeners:
            for i, samples_i in enumerate(listener.sample_programs(specs, samples)):
                hypotheses[i].extend(p for p, _ in samples_i if p not in hypotheses[i])
        for i, target in enumerate(targets):
            used = {ex.string for ex in specs[i]}
            utterances = [u for u in dsl.candidate_examples(target, rng, n_pos, n_neg) if u.string not in used]
            rng.shuffle(utterances)  # like upstream's sampled U: with an empty H the first one is a random pick
            if not utterances:
                continue
            hyps = [h for h in hypotheses[i] if h != target and dsl.consistent(h, specs[i])]
            matrix = np.array([[dsl.matches(h, u.string) == u.positive for u in utterances] for h in hyps]
                              + [[True] * len(utterances)], dtype=bool).reshape(len(hyps) + 1, len(utterances))
            choice = choose_next(matrix)
            if choice is not None:
                specs[i].append(utterances[choice])
    return specs


def train_pragmatic(args) -> None:
    from apps.prax.model import save_bundled
    from apps.prax.pipeline import PraxPipeline

    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    out = Path(args.out)
    log = JsonlLog(out / "train_log.jsonl")
    literal = PraxPipeline.from_pretrained(args.init, device="cpu")
    learner = PraxPipeline.from_pretrained(args.init, device="cpu")
    for listener in (literal, learner):
        listener.max_new_tokens = MAX_PROGRAM_CHARS + 10
    init_state = {k: v.clone() for k, v in learner.model.state_dict().items()}
    log.write(event="config", kind="pragmatic", argv=vars(args), threads=torch.get_num_threads(),
              parameters=sum(p.numel() for p in learner.model.parameters()))
    deadline = time.time() + args.minutes * 60
    data: list[tuple[list[Example], str]] = []
    for round_ in range(1, args.rounds + 1):
        t0 = time.time()
        targets = []
        while len(targets) < args.targets:
            p = dsl.sample_program(rng, max_chars=MAX_PROGRAM_CHARS).render()
            if dsl.program_split(p) == "train":
                targets.append(p)
        specs = rsa_specs(targets, [learner, literal], rng, n_examples=args.spec_size, samples=args.samples)
        data.extend((spec[:i], t) for spec, t in zip(specs, targets, strict=True) for i in range(1, len(spec) + 1))
        sampled_s = round(time.time() - t0, 1)
        learner.model.load_state_dict(init_state)  # train_from_init: every round restarts from the literal weights
        replay = random_rows(rng, int(len(data) * args.replay), args.replay_max_examples)
        order = data + replay
        rng.shuffle(order)
        batches = (order[i:i + args.batch_size] for i in range(0, len(order), args.batch_size))
        stats = train_steps(learner.model, batches, len(order) // args.batch_size + 1, args.lr, log,
                            schedule="constant", phase=f"round-{round_}")
        log.write(event="round", round=round_, targets=len(targets), rows=len(data), replay_rows=len(replay),
                  sampling_s=sampled_s, mean_spec_len=sum(map(len, specs)) / len(specs), **stats)
        save_bundled(learner.model, out, MAX_PROGRAM_CHARS)
        if time.time() > deadline:
            log.write(event="stopped", reason="time budget reached", after_round=round_)
            break
    log.write(event="done", rounds_completed=round_, rows=len(data))


def make_specs(args) -> None:
    """Held-out specs: programs from the held-out split; examples random, or chosen by RSA against a listener."""
    rng = random.Random(args.seed)
    programs = dsl.sample_programs(args.seed, args.n, split="heldout", max_chars=MAX_PROGRAM_CHARS)
    if args.mode == "random":
        specs = [dsl.sample_spec(p, rng, size=args.size) for p in programs]
    else:
        from apps.prax.pipeline import PraxPipeline

        listener = PraxPipeline.from_pretrained(args.listener, device="cpu")
        listener.max_new_tokens = MAX_PROGRAM_CHARS + 10
        specs = rsa_specs(programs, [listener], rng, n_examples=args.size, samples=args.samples)
    rows = [{"program": p, "examples": [ex.to_dict() for ex in spec]} for p, spec in zip(programs, specs, strict=True)]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rows, indent=1))
    print(json.dumps({"written": args.out, "specs": len(rows), "mode": args.mode}))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="demohub train prax", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    lit = sub.add_parser("literal", help="train a literal listener on random specs")
    lit.add_argument("--out", default="checkpoints/prax/tiny-literal")
    lit.add_argument("--steps", type=int, default=20000)
    lit.add_argument("--minutes", type=float, default=60.0)
    lit.add_argument("--lr", type=float, default=1e-3)
    lit.add_argument("--batch-size", type=int, default=32)
    lit.add_argument("--max-examples", type=int, default=10)
    lit.add_argument("--d-model", type=int, default=128)
    lit.add_argument("--d-ff", type=int, default=256)
    lit.add_argument("--layers", type=int, default=3)
    lit.add_argument("--decoder-layers", type=int, default=2)
    lit.add_argument("--heads", type=int, default=4)
    prag = sub.add_parser("pragmatic", help="PraX self-play from a literal listener")
    prag.add_argument("--init", default="checkpoints/prax/tiny-literal")
    prag.add_argument("--out", default="checkpoints/prax/tiny-pragmatic")
    prag.add_argument("--rounds", type=int, default=10)
    prag.add_argument("--targets", type=int, default=1024)
    prag.add_argument("--spec-size", type=int, default=10)
    prag.add_argument("--samples", type=int, default=250)
    prag.add_argument("--lr", type=float, default=5e-5)
    prag.add_argument("--batch-size", type=int, default=32)
    prag.add_argument("--minutes", type=float, default=60.0)
    prag.add_argument("--replay", type=float, default=0.0,
                      help="random-spec rows mixed in per self-play row each round (0: upstream's recipe)")
    prag.add_argument("--replay-max-examples", type=int, default=8)
    spec = sub.add_parser("specs", help="write a held-out spec file")
    spec.add_argument("--mode", choices=("random", "rsa"), required=True)
    spec.add_argument("--out", required=True)
    spec.add_argument("--n", type=int, default=200)
    spec.add_argument("--size", type=int, default=5)
    spec.add_argument("--listener", default="checkpoints/prax/tiny-literal")
    spec.add_argument("--samples", type=int, default=32)
    for p in (lit, prag, spec):
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    {"literal": train_literal, "pragmatic": train_pragmatic, "specs": make_specs}[args.command](args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
