"""The league server's log lines: text for a person at a terminal, or one JSON object per line for a log shipper
(``arena serve --log-format json``).

In JSON, every record of the process (the server's, the league's, uvicorn's, its access lines included) goes to
one handler on stderr. Each line is an object with ``time`` (UTC, ISO 8601), ``level``, ``logger`` and
``message``, plus ``exception`` when the record carries one; an access line also has ``client``, ``method``,
``path``, ``http_version`` and ``status`` as fields, so nothing has to parse the message back.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

TEXT_FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"
ACCESS_LOGGER = "uvicorn.access"
ACCESS_FIELDS = ("client", "method", "path", "http_version", "status")
"""The arguments of uvicorn's access line (``'%s - "%s %s HTTP/%s" %d'``), in its order."""


class JsonLines(logging.Formatter):
    """A record as one line of JSON."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname, "logger": record.name, "message": record.getMessage()}
        args = record.args
        if record.name == ACCESS_LOGGER and isinstance(args, tuple) and len(args) == len(ACCESS_FIELDS):
            line.update(zip(ACCESS_FIELDS, args, strict=True))
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        # default=str: a record's arguments may be any object; a log line must never raise
        return json.dumps(line, ensure_ascii=False, default=str)


def configure(json_lines: bool) -> None:
    """The root logger's one handler on stderr, in the chosen format, at INFO."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonLines() if json_lines else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.INFO)
