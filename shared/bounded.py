"""Work on a visitor's input that can run long (RDKit's conformer embedding, say) in a worker process that is killed
at its deadline, not a thread that is asked to stop.

RDKit's own ``timeout`` does not bound an embedding (8,000 fragments ran 86 s against timeout=20) and holds the
interpreter lock meanwhile, so in the hub's process such work would stall every other visitor. Here it runs in one of
a few warm worker processes with an address-space limit; past its deadline the worker is killed and replaced, and the
caller gets the sentence it gave. A worker's exceptions come back as themselves (a ``UserInputError`` keeps its
sentence and argument); running out of memory is a sentence.

A worker is a fresh interpreter started from this module (``python -c "from shared.bounded import serve ..."``), not
a ``multiprocessing`` child: ``spawn`` and ``forkserver`` children import the caller's ``__main__`` again, which
runs a script without a main guard a second time and fails outright for ``python -`` (stdin), so the library would
work inside the hub and pytest but not from a user's first script. It gets no copy of the caller's threads or models
(as ``fork`` would), only its import path, and talks over a socket pair as ``multiprocessing.Pipe`` does.
"""

from __future__ import annotations

import functools
import logging
import os
import queue
import resource
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from shared.errors import UserInputError

log = logging.getLogger("demohub")

REQUEST_MEMORY = 1_000_000_000  # default working memory of one request, beside the model's weights
WORKERS = int(os.environ.get("DEMOHUB_WORK_PROCESSES", "2"))  # bounded work running at once, hub-wide
MEMORY_BYTES = int(os.environ.get("DEMOHUB_WORK_MEMORY", str(2**30)))  # address space of one worker
BUSY = ("The hub is busy with other visitors' work right now (all {workers} workers were taken for {seconds:g} s); "
        "please try again in a minute.")
TOO_MUCH_MEMORY = "This input needs more memory than one request may use here; give a smaller one."


def request_memory_bytes() -> int:
    """The working memory one request may take beside its model's weights (``DEMOHUB_REQUEST_MEMORY``): pipelines
    size their batches by it, and refuse with a sentence what does not fit even one at a time."""
    from shared.errors import DemoHubError

    value = os.environ.get("DEMOHUB_REQUEST_MEMORY", "")
    if not value:
        return REQUEST_MEMORY
    if not value.isdigit() or int(value) < 1:
        raise DemoHubError(f"DEMOHUB_REQUEST_MEMORY must be a number of bytes, not {value!r}.")
    return int(value)


STARTED = "started"  # a worker's word that it holds the work and begins it
START_SECONDS = 120  # for a fresh worker to start and import the work's module (busy cores included)


def serve(fd: int, memory_bytes: int) -> None:
    """A worker's loop (the worker process's whole program): take the caller's import path from the connection on
    ``fd``, then run each ``(fn, args)`` it sends and send back ``(True, result)`` or ``(False, exception)``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the hub, which stops its workers
    if memory_bytes:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    conn = Connection(fd)
    try:
        sys.path[:] = [*conn.recv(), *(p for p in sys.path if p)]  # the caller's modules import here as there
    except (EOFError, OSError):
        return
    while True:
        try:
            fn, args = conn.recv()  # unpickling ``fn`` imports its module: a fresh worker's start-up ends here
        except (EOFError, OSError):
            return
        conn.send(STARTED)  # the caller's deadline counts from here
        try:
            reply = (True, fn(*args))
        except BaseException as error:  # noqa: BLE001 - every failure goes back to the caller
            reply = (False, error)
        try:
            conn.send(reply)
        except Exception as error:  # an exception or result that does not pickle
            conn.send((False, RuntimeError(f"the worker's reply could not be sent: {type(error).__name__}")))


PROJECT_ROOT = str(Path(__file__).resolve().parents[1])  # where ``shared`` is found, whoever the caller is


class Worker:
    """One worker process: a fresh interpreter running ``serve``, connected by a socket pair."""

    def __init__(self, memory_bytes: int):
        ours, theirs = socket.socketpair()
        env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
               "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS", "1"),
               "PYTHONPATH": os.pathsep.join(filter(None, [PROJECT_ROOT, os.environ.get("PYTHONPATH")]))}
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", f"from shared.bounded import serve; serve({theirs.fileno()}, {memory_bytes})"],
                pass_fds=(theirs.fileno(),), env=env, stdin=subprocess.DEVNULL)
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())
        here = [os.getcwd() if not p else p for p in sys.path]  # "" (python -c, stdin, a REPL): the caller's folder
        self.conn.send([p for p in here if os.path.isdir(p)])

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(5)
        self.conn.close()

    @property
    def alive(self) -> bool:
        return self.process.poll() is None


class WorkerPool:
    """At most ``size`` workers, started on first use and replaced after a kill."""

    def __init__(self, size: int = WORKERS, memory_bytes: int = MEMORY_BYTES):
        self.size, self.memory_bytes = size, memory_bytes
        self._idle: queue.LifoQueue[Worker | None] = queue.LifoQueue()
        for _ in range(size):
            self._idle.put(None)  # a slot whose worker starts when first taken
        self.kills = 0

    def run(self, fn: Callable[..., Any], *args: Any, seconds: float, too_long: str) -> Any:
        """``fn(*args)`` in a worker; past ``seconds`` the worker is killed and ``UserInputError(too_long)`` raised.
        ``seconds`` count from when the worker has the work, so a fresh worker's start-up (spawning, importing the
        work's module: seconds on busy cores) is not charged to the visitor. ``fn`` and its arguments must pickle (a
        module-level function)."""
        try:
            worker = self._idle.get(timeout=seconds)
        except queue.Empty:
            raise UserInputError(BUSY.format(workers=self.size, seconds=seconds)) from None
        try:
            if worker is None or not worker.alive:
                worker = Worker(self.memory_bytes)
            worker.conn.send((fn, args))
            if not worker.conn.poll(START_SECONDS) or worker.conn.recv() != STARTED:
                raise OSError(f"the worker did not start within {START_SECONDS} s")
            if not worker.conn.poll(seconds):
                log.warning("killed a worker: %s ran over %g s", getattr(fn, "__name__", fn), seconds)
                worker.kill()
                worker = None
                self.kills += 1
                raise UserInputError(too_long)
            ok, value = worker.conn.recv()
        except (EOFError, OSError) as error:  # the worker died (killed from outside, or crashed inside a library)
            if worker is not None:
                worker.kill()
            worker = None
            raise RuntimeError(f"a bounded-work process died while running {getattr(fn, '__name__', fn)}") from error
        finally:
            self._idle.put(worker)
        if ok:
            return value
        if isinstance(value, MemoryError):
            raise UserInputError(TOO_MUCH_MEMORY) from None
        raise value

    def close(self) -> None:
        while True:
            try:
                worker = self._idle.get_nowait()
            except queue.Empty:
                return
            if worker is not None:
                worker.kill()


@functools.cache
def pool() -> WorkerPool:
    """The process's one pool of bounded-work workers (its workers start on first use)."""
    return WorkerPool()


def run_bounded(fn: Callable[..., Any], *args: Any, seconds: float, too_long: str) -> Any:
    """``fn(*args)`` in a worker process of the shared pool, killed after ``seconds`` (``WorkerPool.run``)."""
    return pool().run(fn, *args, seconds=seconds, too_long=too_long)
