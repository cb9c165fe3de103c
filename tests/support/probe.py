"""Talking to a probe program in a sandbox one JSON line at a time (tests/channels.py's driver): for the channel
tests and bench/pagecache_channel.py."""

from __future__ import annotations

import json
import select
import time
from typing import Any

from arena.sandbox import BotProcess

ANSWER_WAIT_S = 120.0
"""Only a broken sandbox waits this long: the answer takes a Python start-up (well under a second when quiet)."""


def ask(process: BotProcess, request: dict[str, Any]) -> dict[str, Any]:
    """Send one request line to the driver and read its one answer line."""
    data = json.dumps(request).encode() + b"\n"
    while data:
        written = process.write(data)
        data = data[written:]
        if data:
            select.select([], [process.write_fd()], [], 1.0)
    out, err = b"", b""
    deadline = time.monotonic() + ANSWER_WAIT_S
    while b"\n" not in out:
        fds = process.read_fds()
        assert fds and time.monotonic() < deadline, f"no answer to {request}: stdout {out!r}, stderr {err[-2000:]!r}"
        ready, _, _ = select.select(fds, [], [], 1.0)
        for fd in ready:
            for stream, chunk in process.read(fd):
                if stream == "stdout":
                    out += chunk
                else:
                    err += chunk
    answer: dict[str, Any] = json.loads(out.split(b"\n", 1)[0])
    return answer
