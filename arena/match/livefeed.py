"""A match in progress as a spectator may follow it: a small file beside its log that the referee appends each
engine event's public part to as it happens (issue 43, "watch live").

The log itself is gzip, written in blocks and renamed only when the match is over, so nobody can read it in play;
this file is plain JSON lines, written a turn at a time: a first line with the seats' names, then one public event
a line (:func:`arena.match.spectator.public_event`: no hand, no card drawn from the deck, so what it shows is what
every player at the table was told, which the deal group's secrecy allows). It is removed when the match ends,
however it ends: the match's replay takes over once its deal group is over. :func:`read_feed` reads it back from
an event on, for a server's poll.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from arena.match.spectator import public_event

SUFFIX = ".live"
EVERY_S = 0.05
"""The feed is written at most this often: 20 times a second, smoother than a replay's fastest speed."""


def feed_path(log_path: Path | str) -> Path:
    """Where the live feed of the match logged at ``log_path`` is, while it plays."""
    return Path(os.fspath(log_path) + SUFFIX)


class LiveFeed:
    """Appends a match's public events to its feed file, and removes the file at the end."""

    def __init__(self, path: Path, names: Sequence[str], every_s: float = EVERY_S) -> None:
        self.path = path
        self.every_s = every_s
        self._file = path.open("w", encoding="utf-8")
        self._sent = 0
        self._written = -every_s
        self._write([{"names": list(names)}])

    def add(self, events: Sequence[dict[str, Any]]) -> None:
        """The engine events so far: those not yet in the feed go in, in one write, at most every
        ``every_s`` (:data:`EVERY_S`: a turn of fast bots takes a fraction of a millisecond, and a write a turn cost the
        referee a third more CPU a turn; a person watching sees no difference)."""
        now = time.monotonic()
        if len(events) > self._sent and now - self._written >= self.every_s:
            fresh, self._sent, self._written = events[self._sent:], len(events), now
            self._write([public_event(event) for event in fresh])

    def _write(self, records: list[dict[str, Any]]) -> None:
        self._file.write("".join(json.dumps(record, separators=(",", ":")) + "\n" for record in records))
        self._file.flush()  # a reader polls the file: each turn is there once this returns

    def close(self) -> None:
        self._file.close()
        self.path.unlink(missing_ok=True)


def read_feed(path: Path, start: int = 0) -> tuple[list[str], list[dict[str, Any]]] | None:
    """The names and the public events from the ``start``-th on of the feed at ``path``; None when there is none
    (the match is not in play). A last line still being written is left for the next read."""
    try:
        text = path.read_bytes()
    except OSError:
        return None
    lines = text.split(b"\n")[:-1]  # whole lines only
    if not lines:
        return None
    try:
        names = [str(name) for name in json.loads(lines[0])["names"]]
        events = [json.loads(line) for line in lines[1 + max(0, start):]]
    except (ValueError, KeyError, TypeError):
        return None
    return names, events


def in_play(log_dir: Path) -> list[int]:
    """The schedule indexes of the matches of a run's log directory that are in play (have a feed), in order."""
    if not log_dir.is_dir():
        return []
    found = []
    for path in log_dir.glob(f"*.jsonl.gz{SUFFIX}"):
        number = path.name.split(".", 1)[0]
        if number.isdigit():
            found.append(int(number))
    return sorted(found)
