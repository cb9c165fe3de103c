"""What is kept of a bot's stderr, and what is shown of it.

A bot's stderr is its author's only view of a crash, and languages put the useful part in different places: Python
ends with the exception's message, while Node and Java begin with it (``file.js:12``, the source line, then
``TypeError: ...`` and the frames, Node's internal ones last), and a bot that logs as it plays may bury its first
error under later lines. So the referee keeps the head and the tail of the stream within one byte cap
(:class:`StderrKeeper`), and a terminal or a page shows the first error block and the last lines of that
(:func:`error_view`). Besides, the log keeps a bounded part of it as lines, each with the replay step it arrived
during (:class:`DebugLines`, :class:`DebugLine`), for the author's view of each move. Pure: bytes and text in, text
out.
"""

from __future__ import annotations

import re
from collections.abc import Container, Sequence
from dataclasses import dataclass
from typing import Any

HEAD_BYTES = 8 * 1024
"""Of the byte cap, how much the start of the stream keeps: room for the first error and its frames."""
FAULT_BYTES = 64 * 1024
"""What a seat that faulted keeps of its stderr: its author's view of the crash, so generous."""
CLEAN_BYTES = 4 * 1024
"""What a seat that ended without a fault keeps: rarely read, and the store keeps one per seat per match, so a bot
that spams stderr on every move grows the store by this much per match, not by :data:`FAULT_BYTES`."""
CUT = "[... {count} bytes of stderr cut ...]"

ERROR_LINE = re.compile(
    r"^(?:Traceback \(most recent call last\)|Exception in thread |panic: |terminate called|fatal error: |"
    r"(?:Uncaught )?(?:[\w$]+\.)*[\w$]*(?:Error|Exception)\b)")
"""The first line of an error, in the languages bots are written in: Python's traceback, Java's and Node's
exception line (``TypeError: ...``, ``java.lang.NullPointerException``), Go's panic, C++'s terminate."""
BEFORE = 4
"""Lines shown before the error line: Node's ``bot.js:12``, the source line, the caret and a blank line."""
AFTER = 8
"""Lines shown from the error line on: the message and the first frames (the bot's own come first)."""


class StderrKeeper:
    """A bot's stderr as it arrives, within ``cap`` bytes: the first :data:`HEAD_BYTES` and the latest rest."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.head_cap = min(HEAD_BYTES, cap // 2)
        self.head = bytearray()
        self.tail = bytearray()
        self.cut = 0
        """Bytes dropped between the head and the tail."""

    def add(self, data: bytes) -> None:
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        self.tail += data
        over = len(self.tail) - (self.cap - self.head_cap)
        if over > 0:
            del self.tail[:over]
            self.cut += over

    def text(self, cap: int | None = None) -> str:
        """The stream as text; where bytes were dropped, a line that says how many (lines cut at its edges are
        dropped whole, when there are lines). With a ``cap`` below the keeper's, the head and the tail within that
        smaller cap (its head the first ``min(HEAD_BYTES, cap // 2)`` bytes, as a keeper of that cap keeps)."""
        if cap is None or cap >= self.cap:
            return _render(bytes(self.head), bytes(self.tail), self.cut)
        head_cap = min(HEAD_BYTES, cap // 2)
        head = bytes(self.head[:head_cap])
        # the rest of the head joins the tail when nothing was dropped between; else the gap is unknown bytes
        rest = bytes(self.head[head_cap:]) + bytes(self.tail) if not self.cut else bytes(self.tail)
        tail = rest[len(rest) - (cap - head_cap):] if len(rest) > cap - head_cap else rest
        total = len(self.head) + self.cut + len(self.tail)
        return _render(head, tail, total - len(head) - len(tail))


def _render(head: bytes, tail: bytes, cut: int) -> str:
    """``head``, a line saying ``cut`` bytes (and the partial lines at the cut's edges) were dropped, ``tail``."""
    if not cut:
        return (head + tail).decode("utf-8", errors="replace")
    whole_head = head[:head.rindex(b"\n")] if b"\n" in head else head
    whole_tail = tail[tail.index(b"\n") + 1:] if b"\n" in tail else tail
    dropped = cut + len(head) - len(whole_head) + len(tail) - len(whole_tail)
    return (whole_head.decode("utf-8", errors="replace") + "\n" + CUT.format(count=dropped) + "\n"
            + whole_tail.decode("utf-8", errors="replace"))

def error_view(text: str, lines: int = 24, width: int = 240) -> str:
    """What a terminal or a page shows of a kept stderr: all of it when it is short, else the first error's block
    (a few lines before its first line, for Node's ``file:line``, and its message and first frames) and the last
    lines, with a line saying how many were left out between; each line at most ``width`` characters.

    >>> print(error_view("\\n".join(["/b/bot.js:3", "  x.y", "   ^", "", "TypeError: no", "    at f (/b/bot.js:3:5)"]
    ...                          + [f"    at node:internal/{i}" for i in range(40)] + ["Node.js v20"]), lines=12))
    /b/bot.js:3
      x.y
       ^
    <BLANKLINE>
    TypeError: no
        at f (/b/bot.js:3:5)
        at node:internal/0
        at node:internal/1
    [... 35 lines ...]
        at node:internal/37
        at node:internal/38
        at node:internal/39
    Node.js v20
    """
    found = text.rstrip().splitlines()
    shown = [line if len(line) <= width else line[:width] + "..." for line in found]
    if len(shown) <= lines:
        return "\n".join(shown)
    first = next((i for i, line in enumerate(found) if ERROR_LINE.match(line)), None)
    keep = min(BEFORE + AFTER, lines // 2 + BEFORE // 2)
    if first is None or first >= len(found) - (lines - keep):  # no error, or it is among the last lines anyway
        return "\n".join(shown[-lines:])
    start = max(0, first - BEFORE)
    block = shown[start:start + keep]
    tail_start = len(shown) - (lines - len(block))
    skipped = [f"[... {start} lines ...]"] if start else []
    if tail_start <= start + len(block):  # the block runs into the last lines
        return "\n".join(skipped + shown[start:])
    return "\n".join(skipped + block + [f"[... {tail_start - start - len(block)} lines ...]"] + shown[tail_start:])


DEBUG_BYTES = 16 * 1024
"""Of a seat's stderr, how many bytes a match's log keeps as lines by step (:class:`DebugLines`): a bot that logs
a line a move keeps all of a normal match's; one that floods is cut, like the tail it also keeps."""
DEBUG_LINE = 400
"""A debug line longer than this many bytes is kept cut to it (a page shows each beside its step)."""
DEBUG_CUT = "[... later stderr lines not kept by step: over {cap} bytes this match ...]"


class DebugLines:
    """A bot's stderr cut into lines as it arrives, each with the step it arrived during, within
    :data:`DEBUG_BYTES` a match: what an author reads beside each move of the replay (issue 43). The last line
    kept says so when later lines were dropped."""

    def __init__(self, cap: int = DEBUG_BYTES) -> None:
        self.cap = cap
        self.kept = 0
        self.partial = bytearray()
        self.full = False

    def add(self, data: bytes) -> list[str]:
        """The lines ``data`` completes (with the start held from before), as text; after the cap, the one line
        saying so and then nothing."""
        if self.full:
            return []
        self.partial += data
        if b"\n" not in data:
            if len(self.partial) <= DEBUG_LINE:
                return []
            # a line with no end in sight: what the cap allows of it now, so a flood of one line is bounded too
            data_lines, self.partial = [bytes(self.partial)], bytearray()
        else:
            *data_lines, rest = bytes(self.partial).split(b"\n")
            self.partial = bytearray(rest)
        return self._keep(data_lines)

    def flush(self) -> list[str]:
        """The line without its newline that the bot left when it ended."""
        if self.full or not self.partial:
            return []
        line, self.partial = bytes(self.partial), bytearray()
        return self._keep([line])

    def _keep(self, lines: list[bytes]) -> list[str]:
        kept = []
        for line in lines:
            line = line.rstrip(b"\r")[:DEBUG_LINE]
            if self.kept + len(line) + 1 > self.cap:
                self.full = True
                kept.append(DEBUG_CUT.format(cap=self.cap))
                break
            self.kept += len(line) + 1
            kept.append(line.decode("utf-8", errors="replace"))
        return kept


@dataclass(frozen=True)
class DebugLine:
    """A line a bot wrote on stderr, and the replay step (an engine event's index) it arrived during."""

    seat: int
    step: int
    text: str

    def to_json(self) -> list[int | str]:
        return [self.seat, self.step, self.text]

    @classmethod
    def from_json(cls, value: Any) -> DebugLine:
        """The line :meth:`to_json` gave (TypeError or ValueError for anything else)."""
        seat, step, text = value
        if type(seat) is not int or type(step) is not int or not isinstance(text, str):
            raise TypeError(value)
        return cls(seat, step, text)


def debug_by_step(lines: Sequence[DebugLine], seats: Container[int], last: int) -> dict[int, list[DebugLine]]:
    """The lines of ``seats``, by step; a line that arrived after the last event (as the bot was told the end) is
    the last step's (``last``)."""
    found: dict[int, list[DebugLine]] = {}
    for line in lines:
        if line.seat in seats:
            found.setdefault(min(line.step, last), []).append(line)
    return found
