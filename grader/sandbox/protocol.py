"""Messages between the trusted parent and the worker: length-prefixed JSON over a socket.

JSON, not pickle: the worker runs untrusted code, and unpickling what it sends could run code in
the parent. Every message is a dict with an ``op`` (requests) or ``ok`` (replies).
"""
from __future__ import annotations

import json
import socket
import struct
import time
from typing import Any

MAX_MESSAGE = 64 * 1024 * 1024
_HEADER = struct.Struct("<Q")
# Lines the worker writes to its log (stderr) during ``preload``, before any submission code runs:
# one when the preload starts, then one naming each .cu file (as a JSON string: one line whatever
# the name holds) just before NVRTC compiles it.
PRELOAD_START = "grader-preload: start"
PRELOAD_NOTE = "grader-preload: compiling "


def compiling_when_crashed(log_tail: str) -> str:
    """The .cu file (relative to the submission folder) the worker was compiling when it died in
    ``preload``: the last :data:`PRELOAD_NOTE` after the last :data:`PRELOAD_START` of ``log_tail``
    (the worker's log, most recent line last); "" when it had not started compiling a file."""
    lines = log_tail.splitlines()
    starts = [i for i, line in enumerate(lines) if line == PRELOAD_START]
    if not starts:
        return ""
    notes = [line[len(PRELOAD_NOTE):] for line in lines[starts[-1] + 1:] if line.startswith(PRELOAD_NOTE)]
    try:
        name = json.loads(notes[-1]) if notes else ""
    except ValueError:
        return ""
    return name if isinstance(name, str) else ""


class ProtocolError(RuntimeError):
    """The other side closed the connection or sent something that is not a message."""


def send(sock: socket.socket, message: dict[str, Any]) -> None:
    data = json.dumps(message, separators=(",", ":")).encode()
    sock.sendall(_HEADER.pack(len(data)) + data)


def _recv_exact(sock: socket.socket, n: int, deadline: float | None = None) -> bytes:
    chunks, got = [], 0
    while got < n:
        if deadline is not None:  # one deadline for the whole message, not one per chunk
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout("message not complete before the deadline")
            sock.settimeout(left)
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise ProtocolError("connection closed")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def recv(sock: socket.socket, deadline: float | None = None) -> dict[str, Any]:
    """The next message. ``deadline`` (time.monotonic()) bounds the whole message: a sender that
    trickles bytes cannot stretch a time limit (raises socket.timeout)."""
    (size,) = _HEADER.unpack(_recv_exact(sock, _HEADER.size, deadline))
    if size > MAX_MESSAGE:
        raise ProtocolError(f"message of {size} bytes exceeds {MAX_MESSAGE}")
    try:
        message = json.loads(_recv_exact(sock, size, deadline))
    except (ValueError, RecursionError) as exc:   # RecursionError: arrays or objects nested deeper than
        raise ProtocolError(f"malformed message: {exc}") from None   # the decoder's recursion limit
    if not isinstance(message, dict):
        raise ProtocolError("message is not an object")
    return message
