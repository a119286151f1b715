import numpy as np
import pytest

from apps.prax import rsa

# Fact sheet: H = {h1, h2, h*}, U = {u1, u2}; rows h1 = [1,0], h2 = [1,1], h* = [1,1].
M = np.array([[1, 0], [1, 1], [1, 1]])


def test_worked_example_literal_listener():
    L0 = rsa.literal_listener(M)
    np.testing.assert_allclose(L0[:, 0], [1 / 3, 1 / 3, 1 / 3])
    np.testing.assert_allclose(L0[:, 1], [0, 0.5, 0.5])


def test_worked_example_speaker_chooses_u2():
    S1 = rsa.speaker(rsa.literal_listener(M))
    np.testing.assert_allclose(S1[-1], [0.4, 0.6])
    assert rsa.choose_next(M) == 1
    assert rsa.choose_examples(M, target=2, k=1) == [1]


def test_empty_hypotheses_take_the_first_example_and_empty_utterances_skip():
    only_target = np.ones((1, 3))
    assert rsa.choose_next(only_target) == 0
    assert rsa.choose_next(np.ones((2, 0))) is None


def test_empty_rows_and_columns_give_zeros_not_nan():
    A = np.array([[0, 0, 1], [0, 0, 0], [0, 1, 1]])
    for matrix in (rsa.literal_listener(A), rsa.speaker(rsa.literal_listener(A)),
                   rsa.pragmatic_listener(rsa.speaker(rsa.literal_listener(A)))):
        assert np.isfinite(matrix).all()
    L1 = rsa.pragmatic_listener(rsa.speaker(rsa.literal_listener(A)))
    np.testing.assert_allclose(L1.sum(axis=0), [0, 1, 1])
    assert rsa.exact_pragmatic_listener(np.zeros((3, 2)), [0]).sum() == 0


def test_pragmatic_listener_prefers_the_specific_program():
    # S1(u1|h1) = 1 and S1(u1|h2) = S1(u1|h*) = 0.4, so hearing u1 points to h1.
    L1 = rsa.pragmatic_listener(rsa.speaker(rsa.literal_listener(M)))
    assert L1[0, 0] > L1[1, 0]
    np.testing.assert_allclose(L1[0, 0], 1 / (1 + 0.4 + 0.4))


@pytest.mark.parametrize("seed", range(5))
def test_vectorised_choice_equals_the_python_loop(seed):
    rng = np.random.default_rng(seed)
    A = (rng.random((200, 60)) < 0.5).astype(np.int8)
    A[-1] = 1
    fast = rsa.choose_examples(A, target=199, k=8)
    assert fast == rsa.choose_examples_loop(A.tolist(), target=199, k=8)
    assert len(set(fast)) == len(fast) == 8


def test_choose_examples_only_uses_examples_the_target_agrees_with():
    A = np.array([[1, 1, 0, 1], [0, 1, 1, 0], [1, 0, 0, 1]])
    chosen = rsa.choose_examples(A, target=2, k=5)
    assert set(chosen) == {0, 3}


def test_exact_rsa_matches_hand_computation():
    # Pu et al. 2020 with D = [u1]: S1(u1|h1) = (1/3)/(1/3) = 1, S1(u1|h2) = S1(u1|h*) = (1/3)/(1/3+1/2) = 0.4.
    L1 = rsa.exact_pragmatic_listener(M, [0])
    np.testing.assert_allclose(L1, np.array([1, 0.4, 0.4]) / 1.8)
    np.testing.assert_allclose(rsa.exact_literal_listener(M, [1]), [0, 0.5, 0.5])
    # D = [u1, u2] rules out h1; h2 and h* tie.
    np.testing.assert_allclose(rsa.exact_pragmatic_listener(M, [0, 1]), [0, 0.5, 0.5])
