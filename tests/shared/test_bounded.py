"""shared.bounded: work in a worker process that is killed at its deadline, with a memory cap, its exceptions
returned as themselves, and a fresh worker for the next call."""

from __future__ import annotations

import os
import threading
import time

import pytest

from shared.bounded import BUSY, TOO_MUCH_MEMORY, WorkerPool, request_memory_bytes
from shared.errors import DemoHubError, UserInputError


def spin(seconds: float) -> int:
    """Busy work that ignores every request to stop, as RDKit's embedding does."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
    return os.getpid()


def allocate(n_bytes: int) -> int:
    return len(bytearray(n_bytes))


def refuse(text: str) -> None:
    raise UserInputError(text, argument="smiles")


@pytest.fixture
def pool():
    workers = WorkerPool(size=1, memory_bytes=600_000_000)
    yield workers
    workers.close()


def test_the_result_comes_back_from_another_process(pool):
    assert pool.run(spin, 0.0, seconds=30, too_long="x") != os.getpid()


def test_work_past_its_deadline_is_killed_and_the_next_call_gets_a_fresh_worker(pool):
    first = pool.run(spin, 0.0, seconds=30, too_long="x")
    started = time.monotonic()
    with pytest.raises(UserInputError, match="^stopped: too long$"):
        pool.run(spin, 60.0, seconds=0.5, too_long="stopped: too long")
    assert time.monotonic() - started < 10 and pool.kills == 1
    assert not _alive(first), "the killed worker is gone"
    assert pool.run(spin, 0.0, seconds=30, too_long="x") not in (first, os.getpid())


def test_an_exception_comes_back_as_itself(pool):
    with pytest.raises(UserInputError, match="not a SMILES") as info:
        pool.run(refuse, "not a SMILES", seconds=30, too_long="x")
    assert info.value.argument == "smiles"
    with pytest.raises(ZeroDivisionError):
        pool.run(divmod, 1, 0, seconds=30, too_long="x")


def test_running_out_of_the_worker_memory_is_a_sentence(pool):
    with pytest.raises(UserInputError, match=f"^{TOO_MUCH_MEMORY}$"):
        pool.run(allocate, 2_000_000_000, seconds=30, too_long="x")
    assert pool.run(allocate, 1000, seconds=30, too_long="x") == 1000, "the worker keeps serving"


def test_a_caller_waits_for_a_free_worker_no_longer_than_its_deadline(pool):
    busy = threading.Thread(target=lambda: pool.run(spin, 3.0, seconds=30, too_long="x"))
    busy.start()
    time.sleep(0.5)
    with pytest.raises(UserInputError, match="busy with other visitors' work"):
        pool.run(spin, 0.0, seconds=0.5, too_long="x")
    busy.join()
    assert BUSY.format(workers=1, seconds=0.5).startswith("The hub is busy")


def test_the_request_memory_budget_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv("DEMOHUB_REQUEST_MEMORY", raising=False)
    assert request_memory_bytes() == 1_000_000_000
    monkeypatch.setenv("DEMOHUB_REQUEST_MEMORY", "1000000")
    assert request_memory_bytes() == 1_000_000
    monkeypatch.setenv("DEMOHUB_REQUEST_MEMORY", "1GB")
    with pytest.raises(DemoHubError, match="DEMOHUB_REQUEST_MEMORY must be a number of bytes"):
        request_memory_bytes()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
