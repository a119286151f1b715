"""Rational Speech Acts over a programs x examples consistency matrix, vectorised with numpy.

``M[h, u] = 1`` when program h agrees with example u (its full match equals u's label). Conventions: rows are
programs (hypotheses), columns are examples (utterances); every division by an empty row or column gives 0, never
NaN, so an empty version space or an example no program fits is harmless.

Two variants (fact sheet, "RSA as implemented" and "Exact RSA"):
* incremental (PraX, used to choose training examples): L0(h|u) = M/colsum, S1(u|h) = L0/rowsum, and the next
  example is argmax_u S1(u | h*) with h* the last row; ``choose_examples`` repeats this, narrowing H to the
  programs consistent with the examples chosen so far;
* exact (Pu et al. 2020): L1(h|D) proportional to prod_i S1(u_i | h, u_<i) with S1 proportional to 1/|VS(u_<=i)|.
"""

from __future__ import annotations

import numpy as np


def _safe_divide(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros(np.broadcast_shapes(num.shape, den.shape), dtype=np.float64)
    np.divide(num, den, out=out, where=den != 0)
    return out


def literal_listener(M: np.ndarray) -> np.ndarray:
    """L0(h|u) = M[h,u] / sum_h' M[h',u] (each column a distribution over programs, or all zeros)."""
    M = np.asarray(M, dtype=np.float64)
    return _safe_divide(M, M.sum(axis=0, keepdims=True))


def speaker(L0: np.ndarray) -> np.ndarray:
    """S1(u|h) = L0(h|u) / sum_u' L0(h|u') (each row a distribution over examples, or all zeros)."""
    L0 = np.asarray(L0, dtype=np.float64)
    return _safe_divide(L0, L0.sum(axis=1, keepdims=True))


def pragmatic_listener(S1: np.ndarray) -> np.ndarray:
    """L1(h|u) = S1(u|h) / sum_h' S1(u|h') (each column a distribution over programs, or all zeros)."""
    S1 = np.asarray(S1, dtype=np.float64)
    return _safe_divide(S1, S1.sum(axis=0, keepdims=True))


def choose_next(M: np.ndarray, target: int = -1) -> int | None:
    """PraX's next example: argmax_u S1(u | h*) with h* = row ``target``; None when there is no example.

    An empty H (only the target row) takes the first example, as upstream does: every S1 is then equal and
    argmax picks index 0. Only columns the target agrees with can win (the others have L0(h*|u) = 0).
    """
    M = np.asarray(M)
    if M.ndim != 2 or M.shape[1] == 0 or M.shape[0] == 0:
        return None
    s1 = speaker(literal_listener(M))[target]
    if not s1.any():
        return None
    return int(np.argmax(s1))


def choose_examples(M: np.ndarray, target: int, k: int) -> list[int]:
    """Choose ``k`` examples (column indices) one after another for program ``target`` (incremental RSA).

    At each step H is the programs consistent with every chosen example (always including the target), U the
    unused examples that the target agrees with. Each step is one matrix-vector product: O(|H| |U|).
    """
    M = np.asarray(M, dtype=np.float32)
    alive = np.ones(M.shape[0], dtype=np.float32)
    unused = M[target] > 0
    chosen: list[int] = []
    for _ in range(k):
        if not unused.any():
            break
        counts = alive @ M  # |{h in H : h agrees with u}| for every u
        l0_target = _safe_divide(np.where(unused, M[target], 0.0), counts)  # L0(h*|u)
        s1_target = _safe_divide(l0_target, l0_target.sum())  # S1(u|h*)
        u = int(np.argmax(s1_target))
        chosen.append(u)
        unused[u] = False
        alive *= M[:, u]
    return chosen


def choose_examples_loop(M: list[list[int]], target: int, k: int) -> list[int]:
    """The same computation as ``choose_examples`` in plain Python loops (the benchmark's baseline)."""
    n_h, n_u = len(M), len(M[0]) if M else 0
    alive = [True] * n_h
    unused = [bool(M[target][u]) for u in range(n_u)]
    chosen: list[int] = []
    for _ in range(k):
        if not any(unused):
            break
        l0 = [0.0] * n_u
        for u in range(n_u):
            if not unused[u]:
                continue
            count = 0
            for h in range(n_h):
                if alive[h] and M[h][u]:
                    count += 1
            l0[u] = M[target][u] / count if count else 0.0
        total = sum(l0)
        best, best_value = 0, -1.0
        for u in range(n_u):
            value = l0[u] / total if total else 0.0
            if value > best_value:
                best, best_value = u, value
        chosen.append(best)
        unused[best] = False
        for h in range(n_h):
            alive[h] = alive[h] and bool(M[h][best])
    return chosen


def exact_pragmatic_listener(M: np.ndarray, examples: list[int]) -> np.ndarray:
    """Pu et al. 2020: L1(h|D) proportional to prod_i S1(u_i | h, u_<i), restricted to h consistent with D.

    S1(u_i | h, u_<i) = (1/|VS(u_<i + u_i)|) / sum over unused u consistent with h of 1/|VS(u_<i + u)|.
    Returns a distribution over rows (all zeros when no program fits D). Computed in log space.
    """
    M = np.asarray(M, dtype=np.float64)
    n_h, n_u = M.shape
    vs = np.ones(n_h)  # version space of the examples so far
    unused = np.ones(n_u, dtype=bool)
    log_score = np.zeros(n_h)
    for u_i in examples:
        sizes = vs @ M  # |VS(u_<i + u)| for every u
        inv = _safe_divide(np.ones(n_u), sizes) * unused
        norm = M @ inv  # per h: sum over unused u that h agrees with
        with np.errstate(divide="ignore"):
            log_score += np.log(_safe_divide(np.full(n_h, inv[u_i]), norm))
        unused[u_i] = False
        vs = vs * M[:, u_i]
    consistent = vs > 0
    if not consistent.any():
        return np.zeros(n_h)
    log_score = np.where(consistent, log_score, -np.inf)
    log_score -= log_score[consistent].max()
    p = np.exp(log_score)
    return p / p.sum()


def exact_literal_listener(M: np.ndarray, examples: list[int]) -> np.ndarray:
    """L0(h|D): uniform over the programs consistent with every example in D (zeros if none)."""
    M = np.asarray(M, dtype=np.float64)
    vs = M[:, examples].prod(axis=1) if examples else np.ones(M.shape[0])
    total = vs.sum()
    return vs / total if total else vs
