"""Match event logs: gzip-compressed JSON lines with the seed, rules, bots, every message exchanged, every engine
event and fault, and the result; plus reading them back, printing a replay and verifying it against the engine.

A log is written to ``NAME.tmp`` and renamed when complete, so a log at its final path is never half written.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.game.engine import IllegalMoveError, actions_from_events, deal_version_of, replay
from arena.game.narrate import MalformedEvent, narrate
from arena.game.results import Fault
from arena.game.rules import Rules, RulesError
from arena.match.stderr import DebugLine, debug_by_step

FORMAT = 2
"""Format 2 (this one): faults carry a reason code and structured details, results carry per-seat statistics."""
READABLE_FORMATS = (1, 2)
"""Format 1 logs replay and verify as they are: their engine events are the same; only fault records differ."""


_PLAIN_ASCII = re.compile(rb"[^\x20-\x7f]")
"""A byte that json.dumps would escape (a control character) or that is not ASCII."""


_QUOTED: dict[bytes, bytes] = {}
"""Printable ASCII lines received, escaped as JSON string contents: a bot sends the same few hundred lines over and
over (as :data:`arena.match.protocol._MOVES` counts on), and a dictionary hit costs less than the escaping's tests."""
_QUOTED_CACHED = 4096
_QUOTED_LINE_MAX = 512
"""Longer lines are escaped each time: the cache holds at most 2 MiB of a hostile bot's unique lines."""

_TOLD: dict[int, bytes] = {}
"""By the number of seats: :meth:`MatchLog.write_sent`'s records for every seat at once, to be filled with the time
and each message."""

_FLUSH_AT = 1 << 18
"""Bytes of records held before they go to gzip, whose write has a per-call cost worth avoiding on every message."""


class LogError(ValueError):
    """A log that cannot be read: the message names the file, the line and what was expected."""


class MatchLog:
    """Appends records to a new log file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        # A per-process name: a runner killed mid-match may leave an orphan still writing its own partial file.
        self._partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        self._file: gzip.GzipFile | None = gzip.GzipFile(self._partial, "wb", compresslevel=3)
        self._buffer = bytearray()  # up to _FLUSH_AT

    def write(self, record: dict[str, Any]) -> None:
        self._append(json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode() + b"\n")

    def _append(self, line: bytes) -> None:
        buffer = self._buffer
        buffer += line
        if len(buffer) > _FLUSH_AT:
            self.flush()

    def flush(self) -> None:
        assert self._file is not None
        self._file.write(self._buffer)
        self._buffer.clear()

    def write_encoded(self, line: bytes) -> None:
        """A record already encoded as one JSON line (newline included), as :meth:`write` would have."""
        self._append(line)

    def write_message(self, kind: str, seat: int, at_ms: int, line: bytes) -> None:
        """A protocol line sent (``kind`` "send") or received ("recv")."""
        if kind == "send":
            self.write_sent(seat, at_ms, line)
        else:
            self.write_received(seat, at_ms, line)

    def write_sent(self, seat: int, at_ms: int, line: bytes) -> None:
        """A message sent, as encoded (a JSON object and its newline): stored as it is, on the hot path."""
        # _append's body, inline: four of these a turn.
        buffer = self._buffer
        buffer += b'{"t":"send","seat":%d,"at":%d,"msg":%s}\n' % (seat, at_ms, line[:-1])
        if len(buffer) > _FLUSH_AT:
            self.flush()

    def write_told(self, at_ms: int, told: list[bytes | None], then: bytes) -> None:
        """The messages sent at one time, by seat (None: nothing to that seat), each without its newline, as
        :meth:`write_sent` logs them; then ``then``, an encoded record or ``b""``. One append for a move, which
        every seat is told, every turn."""
        buffer = self._buffer
        if None in told:
            buffer += b"".join([b'{"t":"send","seat":%d,"at":%d,"msg":%s}\n' % (seat, at_ms, message)
                                for seat, message in enumerate(told) if message is not None]) + then
        else:
            template = _TOLD.get(len(told))
            if template is None:
                template = _TOLD[len(told)] = b"".join(b'{"t":"send","seat":%d,"at":%%d,"msg":%%s}\n' % seat
                                                       for seat in range(len(told)))
            fields: list[int | bytes | None] = [at_ms] * (2 * len(told))
            fields[1::2] = told
            buffer += template % tuple(fields) + then
        if len(buffer) > _FLUSH_AT:
            self.flush()

    def write_received(self, seat: int, at_ms: int, line: bytes) -> None:
        """A line a bot sent (without its newline): anything at all, so it goes in as a JSON string."""
        quoted = _QUOTED.get(line)
        if quoted is None and _PLAIN_ASCII.search(line) is None:
            # Printable ASCII (every well-behaved reply) needs only quotes and backslashes escaped: the same bytes
            # json.dumps writes, without decoding and encoding.
            quoted = line.replace(b"\\", b"\\\\").replace(b'"', b'\\"')
            if len(line) <= _QUOTED_LINE_MAX:
                if len(_QUOTED) >= _QUOTED_CACHED:
                    _QUOTED.clear()
                _QUOTED[bytes(line)] = quoted
        if quoted is not None:
            self._append(b'{"t":"recv","seat":%d,"at":%d,"line":"%s"}\n' % (seat, at_ms, quoted))
        else:
            text = line.decode("utf-8", errors="backslashreplace")
            self.write({"t": "recv", "seat": seat, "at": at_ms, "line": text})

    def write_stderr(self, seat: int, at_ms: int, step: int, line: str) -> None:
        """A line the bot wrote on stderr, during replay step ``step`` (a format 2 reader that knows no such
        record skips it: old arenas read new logs, and old logs simply have none)."""
        self.write({"t": "stderr", "seat": seat, "at": at_ms, "step": step, "line": line})

    def close(self, complete: bool = True) -> None:
        """Finish the log; an incomplete one (the match was stopped or void) is deleted: it is played again."""
        if self._file is None:
            return
        self.flush()
        self._file.close()
        self._file = None
        if complete:
            os.replace(self._partial, self.path)
        else:
            self._partial.unlink(missing_ok=True)


@dataclass
class LoadedLog:
    """A log read back: the header, the engine events, the faults and the result."""

    path: Path
    header: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)
    faults: dict[int, Fault] = field(default_factory=dict)
    """By seat, in the result model (a format 1 record, with a kind and no reason, gets the kind's generic code)."""
    messages: int = 0
    result: dict[str, Any] | None = None
    event_texts: list[bytes] = field(default_factory=list, repr=False)
    """Each event as the JSON text the log holds (for a page that embeds the events without encoding them again)."""
    text: bytes = field(default=b"", repr=False)
    """The whole log as read (JSON lines): where :mod:`arena.match.thinktime` finds the turns' times."""
    debug: list[DebugLine] = field(default_factory=list)
    """What the bots wrote on stderr, line by line with its step (none in a log before issue 43)."""


def read_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        with gzip.open(path, "rb") as handle:
            for number, raw in enumerate(handle, 1):
                try:
                    record = json.loads(raw)
                except json.JSONDecodeError as error:
                    raise LogError(f"{path}: line {number}: not JSON ({error.msg})") from None
                if not isinstance(record, dict) or "t" not in record:
                    raise LogError(f'{path}: line {number}: expected an object with a "t" field')
                yield number, record
    except FileNotFoundError:
        raise LogError(f"{path}: no such log file") from None
    except (OSError, EOFError) as error:  # gzip.BadGzipFile is an OSError; a cut-off file raises EOFError
        raise LogError(f"{path}: not a complete gzip match log ({error})") from None


parse_json: Callable[[bytes], Any] = json.loads
"""How :func:`load` parses a log's events: orjson when it is installed (a dependency, so it normally is), which
reads them in less than half the time of the json module (a site build parses a log per match page), else json
(an install that had no orjson wheel): the same values, as a log holds only objects, lists, strings and ints."""
try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency
    pass
else:
    parse_json = orjson.loads

MESSAGE_PREFIXES = (b'{"t":"send"', b'{"t":"recv"')
"""How :meth:`MatchLog.write_message` starts a protocol line: :func:`load` counts those without parsing them (they
are most of a real match's log)."""
EVENT_PREFIX = b'{"t":"event","event":'
"""How :meth:`MatchLog.write` starts an event record (compact JSON, keys in order): the event's own JSON follows,
then one ``}``. :func:`load` parses all of a log's events in one call."""


def load(path: Path) -> LoadedLog:
    """Read a whole log: what ``arena replay`` and the site use (:func:`read_records` yields every record, the
    protocol lines included, for the checker)."""
    try:
        raw = gzip.decompress(path.read_bytes())
    except FileNotFoundError:
        raise LogError(f"{path}: no such log file") from None
    except (OSError, EOFError) as error:  # gzip.BadGzipFile is an OSError; a cut-off file raises EOFError
        raise LogError(f"{path}: not a complete gzip match log ({error})") from None
    lines = raw.splitlines()
    if not lines:
        raise LogError(f"{path}: empty log (expected a header line first)")
    header = _record(path, 1, lines[0])
    if header["t"] != "header" or header.get("format") not in READABLE_FORMATS:
        raise LogError(f"{path}: line 1: expected a header of format "
                       f"{' or '.join(map(str, READABLE_FORMATS))}, got {str(header)[:120]}")
    log = LoadedLog(path, header, text=raw)
    texts = []
    messages = 0
    start = len(EVENT_PREFIX)
    # The header read first, the loop tests nothing but each line's start: a real log has thousands of lines.
    for number, line in enumerate(lines[1:], 2):
        if line.startswith(MESSAGE_PREFIXES):
            messages += 1
            continue
        if line.startswith(EVENT_PREFIX) and line.endswith(b"}"):
            texts.append(line[start:-1])
            continue
        record = _record(path, number, line)
        kind = record["t"]
        if kind == "event":  # not in our writer's layout (spaces, say): encoded again, the same value
            if not isinstance(record.get("event"), dict):
                raise LogError(f'{path}: line {number}: an event record without its "event" object')
            texts.append(json.dumps(record["event"], separators=(",", ":"), ensure_ascii=False).encode())
        elif kind == "fault":
            try:
                log.faults[record["seat"]] = Fault.from_dict(record)
            except (KeyError, ValueError, TypeError):
                raise LogError(f"{path}: line {number}: a fault record without a seat, a kind or a detail") from None
        elif kind in ("send", "recv"):
            messages += 1
        elif kind == "result":
            log.result = record["result"]
        elif kind == "stderr":
            try:
                log.debug.append(DebugLine(int(record["seat"]), int(record["step"]), str(record["line"])))
            except (KeyError, TypeError, ValueError):
                raise LogError(f"{path}: line {number}: a stderr record without a seat, a step or a line") from None
    log.messages = messages
    try:
        # One parse of all the events: hundreds of json.loads calls cost several times more.
        log.events = parse_json(b"[" + b",".join(texts) + b"]")
    except ValueError as error:
        raise LogError(f"{path}: an event line is not JSON ({error})") from None
    log.event_texts = texts
    return log


def _record(path: Path, number: int, line: bytes) -> dict[str, Any]:
    """Line ``number`` of a log, parsed: an object with a "t" field, or a LogError saying what is wrong."""
    try:
        record = json.loads(line)
    except ValueError as error:
        raise LogError(f"{path}: line {number}: not JSON ({error})") from None
    if not isinstance(record, dict) or "t" not in record:
        raise LogError(f'{path}: line {number}: expected an object with a "t" field')
    return record


def log_dir_for(store_dir: Path, tournament: str) -> Path:
    """Where a tournament's runner writes its match logs: ``logs/NAME/`` beside the store."""
    return store_dir / "logs" / tournament


def log_path_for(log_dir: Path, index: int) -> Path:
    """Where the runner writes the log of match ``index`` of the tournament whose :func:`log_dir_for` is
    ``log_dir``."""
    return log_dir / f"{index:06d}.jsonl.gz"


def find_log(stored: Path | str | None, store_dir: Path, tournament: str, index: int) -> Path | None:
    """A match's log: where the store says (a relative path as given, then beside the store), else where the
    runner puts it (a store moved with its logs), or None when there is none."""
    found = locate_log(stored, store_dir, tournament, index)
    return None if found is None else Path(found[0])


def locate_log(stored: Path | str | None, store_dir: Path, tournament: str,
               index: int) -> tuple[str, os.stat_result] | None:
    """Where :func:`find_log` finds the log, with its ``stat`` (its size and time say whether it changed): one
    system call a place looked at, and strings rather than Path objects, as a site rebuild asks this of every
    match."""
    text = "" if stored is None else os.fspath(stored)
    for candidate in _log_candidates(text, store_dir, tournament, index):
        try:
            status = os.stat(candidate)
        except OSError:
            continue
        if stat.S_ISREG(status.st_mode):
            return candidate, status
    return None


def _log_candidates(stored: str, store_dir: Path, tournament: str, index: int) -> Iterator[str]:
    # A generator: the runner's place is made only when the store's is not there (most logs are where it says).
    if stored:
        yield stored
        if not os.path.isabs(stored):
            yield os.path.join(store_dir, stored)
    # The same path as log_path_for(log_dir_for(...)), joined as strings: Path objects were most of the cost of
    # asking this of each of a big league's 100,000 matches.
    yield os.path.join(store_dir, "logs", tournament, f"{index:06d}.jsonl.gz")


def verify(log: LoadedLog) -> list[str]:
    """Re-run the engine from the seed and the recorded moves; return every mismatch (empty when it agrees)."""
    header = log.header
    try:
        rules = Rules.from_dict(header["rules"])
        # Logs of the engine before deal version 2 (no deal_version in match_start) replay with the draw they used.
        match = replay(header["players"], header["seed"], rules, actions_from_events(log.events),
                       deal_version_of(log.events))
    except KeyError as error:
        return [f"the recorded moves do not replay: the header or an event lacks its {error.args[0]!r} field"]
    except (IllegalMoveError, RulesError, TypeError, ValueError) as error:
        return [f"the recorded moves do not replay: {error}"]
    problems = []
    if match.events != log.events:
        first = next(
            (i for i, (a, b) in enumerate(zip(match.events, log.events)) if a != b),
            min(len(match.events), len(log.events)),
        )
        problems.append(f"engine events differ from event {first} on (replayed {len(match.events)}, "
                        f"recorded {len(log.events)})")
    if log.result is None:
        problems.append("the log has no result record (the match did not finish writing)")
    elif match.outcome is None:
        problems.append("the replayed match did not finish, but the log records a result")
    else:
        places = [player["place"] for player in log.result["players"]]
        scores = [player["score"] for player in log.result["players"]]
        if places != list(match.outcome.places):
            problems.append(f"places differ: replayed {list(match.outcome.places)}, recorded {places}")
        if scores != list(match.outcome.scores):
            problems.append(f"scores differ: replayed {list(match.outcome.scores)}, recorded {scores}")
    return problems


def describe(log: LoadedLog, stderr: bool = False) -> Iterator[str]:
    """The match turn by turn, for a terminal (``arena replay``): the narration, with the hands at each round's
    start and end; a :class:`LogError` naming the event when one lacks its fields (checked before the first line).
    With ``stderr``, what each bot wrote on stderr during a step follows that step's line (``| name: line``)."""
    try:
        names = [str(bot["name"]) for bot in log.header["bots"]]
        seed = int(log.header["seed"])
    except (KeyError, TypeError, ValueError):
        raise LogError(f"{log.path}: line 1: a header without its seed or its bots' names") from None
    try:
        narrated = narrate(log.events, names, log.faults)
    except MalformedEvent as error:
        raise LogError(f"{log.path}: a malformed event in the log: {error}") from None
    yield f"match seed {seed}: " + ", ".join(f"seat {i} {name}" for i, name in enumerate(names))
    debug = debug_by_step(log.debug, range(len(names)), len(narrated) - 1) if stderr else {}
    for step, line in enumerate(narrated):
        if line.kind == "round_start":
            yield ""
        yield ("" if line.kind in ("round_start", "round_end", "match_start", "match_end") else "   ") + line.text
        yield from (f"      {hand}" for hand in line.hands)
        yield from (f"      | {names[said.seat]}: {said.text}" for said in debug.get(step, ()))
