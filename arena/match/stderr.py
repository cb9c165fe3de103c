"""What is kept of a bot's stderr, and what is shown of it.

A bot's stderr is its author's only view of a crash, and languages put the useful part in different places: Python
ends with the exception's message, while Node and Java begin with it (``file.js:12``, the source line, then
``TypeError: ...`` and the frames, Node's internal ones last), and a bot that logs as it plays may bury its first
error under later lines. So the referee keeps the head and the tail of the stream within one byte cap
(:class:`StderrKeeper`), and a terminal or a page shows the first error block and the last lines of that
(:func:`error_view`). Pure: bytes and text in, text out.
"""

from __future__ import annotations

import re

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
