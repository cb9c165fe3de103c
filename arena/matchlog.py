"""Match event logs: gzip-compressed JSON lines with the seed, rules, bots, every message exchanged, every engine
event and fault, and the result; plus reading them back, printing a replay and verifying it against the engine.

A log is written to ``NAME.tmp`` and renamed when complete, so a log at its final path is never half written.
"""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from arena.cards import hand_total
from arena.game import IllegalMoveError, actions_from_events, deal_version_of, replay
from arena.rules import Rules, RulesError

FORMAT = 2
"""Format 2 (this one): faults carry a reason code and structured details, results carry per-seat statistics."""
READABLE_FORMATS = (1, 2)
"""Format 1 logs replay and verify as they are: their engine events are the same; only fault records differ."""


class LogError(ValueError):
    """A log that cannot be read: the message names the file, the line and what was expected."""


class MatchLog:
    """Appends records to a new log file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        # A per-process name: a runner killed mid-match may leave an orphan still writing its own partial file.
        self._partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        self._file: gzip.GzipFile | None = gzip.GzipFile(self._partial, "wb", compresslevel=5)
        self._buffer = bytearray()  # gzip's write has a per-call cost worth avoiding on every message

    def write(self, record: dict[str, Any]) -> None:
        self._append(json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode() + b"\n")

    def _append(self, line: bytes) -> None:
        self._buffer += line
        if len(self._buffer) > 1 << 18:
            self.flush()

    def flush(self) -> None:
        assert self._file is not None
        self._file.write(self._buffer)
        self._buffer.clear()

    def write_message(self, kind: str, seat: int, at_ms: int, line: bytes) -> None:
        """A protocol line sent or received, stored without decoding and re-encoding it (it is on the hot path)."""
        if kind == "send":  # our own encoding: a valid JSON object without its newline
            self._append(b'{"t":"send","seat":%d,"at":%d,"msg":%s}\n' % (seat, at_ms, line.rstrip(b"\n")))
        else:  # a bot's bytes: anything at all, so it goes in as a JSON string
            text = line.decode("utf-8", errors="backslashreplace")
            self.write({"t": kind, "seat": seat, "at": at_ms, "line": text})

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
    faults: list[dict[str, Any]] = field(default_factory=list)
    messages: int = 0
    result: dict[str, Any] | None = None


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


def load(path: Path) -> LoadedLog:
    records = read_records(path)
    try:
        _, header = next(records)
    except StopIteration:
        raise LogError(f"{path}: empty log (expected a header line first)") from None
    if header.get("t") != "header" or header.get("format") not in READABLE_FORMATS:
        raise LogError(f"{path}: line 1: expected a header of format "
                       f"{' or '.join(map(str, READABLE_FORMATS))}, got {str(header)[:120]}")
    log = LoadedLog(path, header)
    for _, record in records:
        kind = record["t"]
        if kind == "event":
            log.events.append(record["event"])
        elif kind == "fault":
            log.faults.append(record)
        elif kind in ("send", "recv"):
            log.messages += 1
        elif kind == "result":
            log.result = record["result"]
    return log


def verify(log: LoadedLog) -> list[str]:
    """Re-run the engine from the seed and the recorded moves; return every mismatch (empty when it agrees)."""
    header = log.header
    try:
        rules = Rules.from_dict(header["rules"])
        # Logs of the engine before deal version 2 (no deal_version in match_start) replay with the draw they used.
        match = replay(header["players"], header["seed"], rules, actions_from_events(log.events),
                       deal_version_of(log.events))
    except (IllegalMoveError, RulesError, KeyError, TypeError, ValueError) as error:
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


def describe(log: LoadedLog) -> Iterator[str]:
    """The match turn by turn, for people."""
    names = [bot["name"] for bot in log.header["bots"]]
    yield f"match seed {log.header['seed']}: " + ", ".join(f"seat {i} {name}" for i, name in enumerate(names))
    faults = {record["seat"]: record for record in log.faults}
    for event in log.events:
        kind = event["type"]
        if kind == "round_start":
            yield ""
            yield f"== round {event['round']}: {names[event['starter']]} starts; floor {' '.join(event['floor'])}"
            for seat, hand in enumerate(event["hands"]):
                if hand:
                    yield f"   {names[seat]:<16} {' '.join(hand):<16} total {hand_total(hand):>2}  score {event['scores'][seat]}"
        elif kind == "play":
            took = f"deck ({event['drew']})" if event["take"] == "deck" else event["take"]
            yield f"   {names[event['seat']]:<16} throws {' '.join(event['discard']):<16} takes {took}"
        elif kind == "declare":
            yield f"   {names[event['seat']]:<16} DECLARES"
        elif kind == "reshuffle":
            yield f"   (deck empty: {event['deck_size']} dead cards reshuffled)"
        elif kind == "forfeit":
            fault = faults.get(event["seat"])
            detail = f"{fault.get('reason', fault['kind'])}: {fault['detail']}" if fault else event["reason"]
            yield f"   {names[event['seat']]:<16} FORFEITS ({detail})"
        elif kind == "round_end":
            who = "nobody (turn cap)" if event["declarer"] is None else names[event["declarer"]]
            yield f"-- round {event['round']} ends: {event['reason']}, declared by {who}"
            for seat, hand in enumerate(event["hands"]):
                if hand:
                    yield (f"   {names[seat]:<16} {' '.join(hand):<16} total {event['totals'][seat]:>2}"
                           f"  +{event['points'][seat]:<3} score {event['scores'][seat]}")
            if event["eliminated"]:
                yield "   eliminated: " + ", ".join(names[seat] for seat in event["eliminated"])
        elif kind == "match_end":
            yield ""
            yield f"== match over ({event['termination']})"
            for seat in sorted(range(len(names)), key=lambda s: event["places"][s]):
                yield f"   {event['places'][seat]}. {names[seat]:<16} score {event['scores'][seat]}"
