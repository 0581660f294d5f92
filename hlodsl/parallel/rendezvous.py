"""The processes of a group meet in plain Python before PJRT's runtime joins them.

jax's distributed client ends the process (``LOG(FATAL)``: exit 134, no Python
exception) when a peer never joins: the coordination service reports
``DEADLINE_EXCEEDED`` to a callback that aborts. So ``hd.distributed.initialize``
first meets its peers itself, with sockets, on the coordinator's own port:
process 0 listens there and waits until every other process has said hello
(the group's size and its distinct id), then tells them all to go, closes the
port and starts jax's coordination service on it; the others connect (again
and again until process 0 listens) and wait for the word. Only then does any
of them call jax. A process that never comes makes every process that did
raise within the timeout, naming the missing ones: ``TimeoutError`` in
process 0 and in a process that found no coordinator, ``RuntimeError`` in one
process 0 sent away.

What this cannot cover is a process that dies after the meeting (between it
and jax's join, or at any later time): jax's runtime then stops the others as
it does (docs/sharding.md).

>>> meet("127.0.0.1", 1, 1, 0, deadline=0.0)   # a group of one meets no one
"""

from __future__ import annotations

import json
import socket
import time

__all__ = ["meet"]

_LINE = 1024  # the longest hello or answer
_VERDICT_S = 2.0  # how long past its deadline a process that met process 0 waits for its word


def meet(host: str, port: int, n: int, pid: int, deadline: float) -> None:
    """Return once all ``n`` processes reached ``host:port`` (``time.monotonic`` before
    ``deadline``), else raise naming who is missing."""
    if n == 1:
        return
    if pid == 0:
        _serve(host, port, n, deadline)
    else:
        _join(host, port, n, pid, deadline)


def _address(host: str, port: int) -> str:
    return f"{host}:{port}"


def _send(conn: socket.socket, message: dict) -> None:
    try:
        conn.sendall(json.dumps(message).encode() + b"\n")
    except OSError:
        pass  # a peer that went away hears nothing


def _read_line(conn: socket.socket, deadline: float) -> dict | None:
    """One JSON object, or None (closed, garbage, or past the deadline)."""
    data = b""
    while not data.endswith(b"\n") and len(data) < _LINE:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        conn.settimeout(left)
        try:
            chunk = conn.recv(_LINE)
        except (TimeoutError, OSError):
            return None
        if not chunk:
            return None
        data += chunk
    try:
        message = json.loads(data)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


def _serve(host: str, port: int, n: int, deadline: float) -> None:
    family = socket.AF_INET6 if host.startswith("[") else socket.AF_INET
    server = socket.socket(family, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        server.bind(("::" if family == socket.AF_INET6 else "", port))
    except OSError as e:
        server.close()
        raise RuntimeError(f"distributed.initialize: process 0 cannot listen on port {port} "
                           f"of the coordinator {_address(host, port)}: {e}") from None
    server.listen(n)
    peers: dict[int, socket.socket] = {}
    try:
        while len(peers) < n - 1:
            left = deadline - time.monotonic()
            if left <= 0:
                missing = sorted(set(range(1, n)) - set(peers))
                for conn in peers.values():
                    _send(conn, {"error": f"processes {missing} never joined"})
                raise TimeoutError(f"distributed.initialize: processes {missing} of {n} did not "
                                   f"reach the coordinator {_address(host, port)} within the "
                                   "timeout")
            server.settimeout(left)
            try:
                conn, _ = server.accept()
            except (TimeoutError, OSError):
                continue
            hello = _read_line(conn, min(deadline, time.monotonic() + 5.0))
            other = hello.get("pid") if hello else None
            if hello is None or hello.get("n") != n or type(other) is not int or \
                    not 0 < other < n or other in peers:
                why = "not a process of this group" if hello is None else \
                    (f"process 0 has a group of {n}, this process one of {hello.get('n')!r}"
                     if hello.get("n") != n else
                     f"process id {other!r} is not in [1, {n}) or joined already")
                _send(conn, {"error": why})
                conn.close()
                continue
            peers[other] = conn
        for conn in peers.values():
            _send(conn, {"go": True})
        # The peers close first (so the port is free of this side's closed connections
        # when jax's service binds it).
        for conn in peers.values():
            _read_line(conn, time.monotonic() + 2.0)
    finally:
        for conn in peers.values():
            conn.close()
        server.close()


def _join(host: str, port: int, n: int, pid: int, deadline: float) -> None:
    target = host[1:-1] if host.startswith("[") else host
    last_error = "no answer"
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"distributed.initialize: process {pid} of {n} found no "
                               f"coordinator at {_address(host, port)} within the timeout "
                               f"({last_error}); process 0 serves it")
        try:
            conn = socket.create_connection((target, port), timeout=min(left, 2.0))
        except OSError as e:
            last_error = str(e) or type(e).__name__
            time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
            continue
        with conn:
            _send(conn, {"n": n, "pid": pid})
            # A little past the deadline: process 0's own deadline (its clock started a
            # little earlier or later) may end the meeting, and its verdict names who is
            # missing.
            answer = _read_line(conn, deadline + _VERDICT_S)
        if answer is None:
            last_error = "the coordinator closed the connection"
            time.sleep(0.2)
            continue
        if answer.get("go") is True:
            return
        raise RuntimeError(f"distributed.initialize: process {pid} of {n}: the coordinator "
                           f"{_address(host, port)} refused the group: "
                           f"{answer.get('error', answer)!s:.300}")
