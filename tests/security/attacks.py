"""What a hostile client does to a hub's shared resources, from several addresses of this machine (127.0.0.x), in loops
bounded in count and time that stop by themselves. Used by tests/security/test_shares.py and benchmarks/shares.py."""

from __future__ import annotations

import select
import socket
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class DripStats:
    opened: int = 0  # connections the hub took
    refused: int = 0  # connections the hub answered with a 503 line at once
    closed_by_hub: int = 0  # taken connections the hub closed (a 408, room made for another client, ...)
    lifetimes: list[float] = field(default_factory=list)  # seconds each taken connection lived until the hub closed it
    most_open: int = 0  # most taken connections open at once


class SlowDrips:
    """``per_address`` connections from each of ``addresses``, each declaring a ``declared``-byte body on ``path`` and
    sending ``chunk`` bytes of it every ``interval`` seconds (a pause far under any per-pause deadline), reopened as
    soon as the hub closes one, for at most ``duration`` seconds."""

    def __init__(self, url: str, addresses: list[str], per_address: int, *, interval: float = 1.0,
                 duration: float = 20.0, declared: int = 100_000, path: str = "/gradio_api/queue/join",
                 chunk: int = 1):
        host, port = url.split("//")[1].split(":")
        self.target = (host, int(port))
        self.addresses, self.per_address, self.interval = addresses, per_address, interval
        self.duration, self.declared, self.path, self.chunk = duration, declared, path, chunk
        self.stats = DripStats()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._open: dict[socket.socket, tuple[str, float]] = {}

    def __enter__(self) -> SlowDrips:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        for sock in self._open:
            sock.close()

    def wait_until_open(self, count: int, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while self.stats.most_open < count:
            assert time.monotonic() < deadline, f"only {self.stats.most_open} drips open after {timeout:g} s"
            time.sleep(0.2)

    def _connect(self, address: str) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind((address, 0))
            sock.settimeout(2)
            sock.connect(self.target)
            sock.sendall(f"POST {self.path} HTTP/1.1\r\nHost: hub\r\nContent-Type: application/json\r\n"
                         f"Content-Length: {self.declared}\r\n\r\n".encode())
            sock.setblocking(False)
        except OSError:
            sock.close()
            return
        self._open[sock] = (address, time.monotonic())

    def _run(self) -> None:
        end = time.monotonic() + self.duration
        while not self._stop.is_set() and time.monotonic() < end:
            held = {a: 0 for a in self.addresses}
            for address, _ in self._open.values():
                held[address] += 1
            for address, count in held.items():
                for _ in range(self.per_address - count):
                    self._connect(address)
            readable = select.select(list(self._open), [], [], 0)[0] if self._open else []
            for sock in readable:
                self._closed(sock)
            for sock in list(self._open):
                try:
                    sock.send(b"x" * self.chunk)
                except OSError:
                    self._closed(sock)
            self.stats.most_open = max(self.stats.most_open, len(self._open))
            self._stop.wait(self.interval)

    def _closed(self, sock: socket.socket) -> None:
        """The hub answered or closed ``sock``: a refusal at the door, or a taken connection it ended."""
        if sock not in self._open:
            return
        _, opened = self._open.pop(sock)
        try:
            reply = sock.recv(4096)
        except OSError:
            reply = b""
        sock.close()
        lifetime = time.monotonic() - opened
        if b" 503 " in reply[:20] and lifetime < 1.0 and b"make room" not in reply:
            self.stats.refused += 1
        else:
            self.stats.opened += 1
            self.stats.closed_by_hub += 1
            self.stats.lifetimes.append(lifetime)


def timed(calls: int, call: Callable[[], object]) -> list[float]:
    """Seconds each of ``calls`` calls of ``call`` took (one after another)."""
    times = []
    for _ in range(calls):
        start = time.monotonic()
        call()
        times.append(time.monotonic() - start)
    return times


def summary(times: list[float]) -> str:
    return f"median {statistics.median(times):.2f} s, worst {max(times):.2f} s"
