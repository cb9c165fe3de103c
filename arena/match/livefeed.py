"""A match in progress as a spectator may follow it: a small file beside its log that the referee appends each
engine event's public part to as it happens (issue 43, "watch live").

The log itself is gzip, written in blocks and renamed only when the match is over, so nobody can read it in play;
this file is plain JSON lines, written a turn at a time: a first line with the seats' names, then one public event
a line (:func:`arena.match.spectator.public_event`: no hand, no card drawn from the deck, so what it shows is what
every player at the table was told, which the deal group's secrecy allows).

When the match is over the feed gets its last events and a last line ``{"over": true}``, and is renamed to
:func:`ended_path` (so :func:`in_play` no longer lists it, and a spectator polling still gets the last moves); the
runner removes ended feeds once they are :data:`GRACE_S` old, and all but the newest :data:`KEEP_ENDED`
(:func:`sweep`, after it has stored matches), so what they take on disk is bounded whatever the run's length. A
match that does not end (a stop, a crash) will be played again: its feed is removed at once. :func:`read_feed`
reads a feed back from an event on, in play or ended, for a server's poll or ``arena watch``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.match.spectator import public_event

SUFFIX = ".live"
ENDED = ".over"
"""An ended feed is named its feed's name and this: ``000007.jsonl.gz.live.over``."""
GRACE_S = 120.0
"""An ended feed is kept this long: a spectator polling every second or so, or a page in a tab the browser slowed
down, still gets the last moves and the end; after that the match's page is the place to look."""
OVER = b'{"over":true}'
"""An ended feed's last line."""
KEEP_ENDED = 64
"""At most this many ended feeds are kept in a log directory, the newest (64 matches of a few KiB each)."""
EVERY_S = 0.05
"""The feed is written at most this often: 20 times a second, smoother than a replay's fastest speed."""


FEEDS = "live"
"""The feeds of a log directory are in this directory of it, not beside the logs: a league's log directory holds a
log for every match it ever played, and listing it for the few in play (each spectator's poll of what is in play,
each sweep) took time and memory that grew with the league (issue 44)."""


def feed_path(log_path: Path | str) -> Path:
    """Where the live feed of the match logged at ``log_path`` is, while it plays."""
    log = Path(log_path)
    return log.parent / FEEDS / (log.name + SUFFIX)


def feeds(log_dir: Path, ending: str) -> Iterator[Path]:
    """The feeds of ``log_dir`` whose names end with ``ending``, one directory entry at a time."""
    try:
        with os.scandir(log_dir / FEEDS) as entries:
            for entry in entries:
                if entry.name.endswith(ending):
                    yield Path(entry.path)
    except (FileNotFoundError, NotADirectoryError):
        return


def ended_path(path: Path) -> Path:
    """Where the feed at ``path`` is once its match is over."""
    return path.with_name(path.name + ENDED)


class LiveFeed:
    """Appends a match's public events to its feed file, and ends or removes the file at the end."""

    def __init__(self, path: Path, names: Sequence[str], every_s: float = EVERY_S) -> None:
        self.path = path
        self.every_s = every_s
        path.parent.mkdir(exist_ok=True)
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

    def close(self, events: Sequence[dict[str, Any]] | None = None) -> None:
        """The match is over with ``events`` (all of them): the feed gets those it lacks and its end, and moves to
        :func:`ended_path`. None: the match did not end (it will be played again), and the feed goes."""
        if events is None:
            self._file.close()
            self.path.unlink(missing_ok=True)
            return
        self._write([public_event(event) for event in events[self._sent:]])
        self._file.write(OVER.decode() + "\n")
        self._sent = len(events)
        self._file.close()
        self.path.replace(ended_path(self.path))


@dataclass(frozen=True)
class Feed:
    """What a read of a feed found."""

    names: tuple[str, ...]
    events: tuple[dict[str, Any], ...]
    """The public events from the one asked for on."""
    over: bool
    """The match is over: ``events`` ends with its last."""


def read_feed(path: Path, start: int = 0) -> Feed | None:
    """The public events from the ``start``-th on of the feed at ``path`` (or of its ended feed); None when there
    is neither (the match is not in play, and ended long enough ago or not at all). A last line still being
    written is left for the next read."""
    lines: list[bytes] = []
    for where in (path, ended_path(path)):  # in this order: a feed that ends between the two reads is found
        try:
            lines = where.read_bytes().split(b"\n")[:-1]  # whole lines only
            break
        except OSError:
            continue
    if not lines:
        return None
    over = len(lines) > 1 and lines[-1] == OVER
    body = lines[1:-1] if over else lines[1:]
    try:
        names = tuple(str(name) for name in json.loads(lines[0])["names"])
        events = tuple(json.loads(line) for line in body[max(0, start):])  # only those asked for are parsed
    except (ValueError, KeyError, TypeError):
        return None
    return Feed(names, events, over)


def follow(path: Path, every_s: float = 0.2) -> Iterator[Feed]:
    """The feed at ``path`` as it grows: each read that brought new events (``events`` only the new ones), read
    every ``every_s``, up to the one that says the match is over. It stops early, without that one, when the feed
    goes (the run was stopped: the match will be played again)."""
    seen = 0
    while (found := read_feed(path, seen)) is not None:
        if found.events or found.over:
            seen += len(found.events)
            yield found
        if found.over:
            return
        time.sleep(every_s)


def in_play(log_dir: Path) -> list[int]:
    """The schedule indexes of the matches of a run's log directory that are in play (have a feed), in order."""
    found = []
    for path in feeds(log_dir, f".jsonl.gz{SUFFIX}"):
        number = path.name.split(".", 1)[0]
        if number.isdigit():
            found.append(int(number))
    return sorted(found)


def sweep(log_dir: Path, grace_s: float = GRACE_S, keep: int = KEEP_ENDED, now: float | None = None) -> int:
    """Remove the ended feeds of ``log_dir`` older than ``grace_s`` (by their last write), and all but the newest
    ``keep``; how many went."""
    now = time.time() if now is None else now
    ended: list[tuple[float, Path]] = []
    for path in feeds(log_dir, f"{SUFFIX}{ENDED}"):
        try:
            ended.append((path.stat().st_mtime, path))
        except OSError:  # removed meanwhile
            continue
    ended.sort(reverse=True)
    gone = [path for rank, (mtime, path) in enumerate(ended) if rank >= keep or now - mtime > grace_s]
    for path in gone:
        path.unlink(missing_ok=True)
    return len(gone)


class Sweeper:
    """:func:`sweep` of one log directory, called after each stored match but run at most every ``every_s``: a
    directory of many logs takes a few milliseconds to list."""

    def __init__(self, log_dir: Path, every_s: float = 5.0) -> None:
        self.log_dir = log_dir
        self.every_s = every_s
        self._last = -every_s

    def __call__(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._last >= self.every_s:
            self._last = now
            sweep(self.log_dir)
