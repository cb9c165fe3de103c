"""The upload page's form (``POST /upload``), read as it streams: the CSRF field and the token are checked before a
byte of the archive is kept.

Starlette's form parser spools every file part to a temporary file before the handler sees any field: an
unauthenticated client could hold ``max_upload_kb`` of the server's ``/tmp`` per connection (20 connections held
99 MB). Here the multipart body is parsed chunk by chunk (python-multipart's parser, the one Starlette uses), the
small fields are kept in memory (at most :data:`MAX_FIELD` bytes each), each checked by the caller's
``check(name, value)`` the moment it ends (a forged CSRF field ends the request before the token is even read), and
when the ``archive`` part begins the caller's ``authorize(fields)`` decides on the fields sent before it: a refusal
ends the request before the archive is read, and the scratch file is opened only after it (500 held forms once
held 500 open files). The page sends ``csrf`` and ``token`` first, as browsers send fields in the form's order.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import anyio
from anyio import AsyncFile
from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header

MAX_FIELD = 4096
MAX_PARTS = 4
ARCHIVE = "archive"


class FormRefused(Exception):
    """The form cannot be taken: an HTTP status and a message for the page."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(status, message)
        self.status = status
        self.message = message


class _Parts:
    """The parser's callbacks: each part's name, the fields' bytes, and the archive's bytes not yet written."""

    def __init__(self, check: Callable[[str, str], None]) -> None:
        self.check = check
        self.fields: dict[str, bytes] = {}
        self.parts = 0
        self.name: str | None = None
        self.header_field = b""
        self.header_value = b""
        self.headers: dict[bytes, bytes] = {}
        self.archive_started = False
        self.archive_ended = False
        self.pending: list[bytes] = []

    def on_part_begin(self) -> None:
        self.parts += 1
        if self.parts > MAX_PARTS:
            raise FormRefused(400, f"a malformed form: more than {MAX_PARTS} parts")
        self.headers = {}
        self.name = None

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self.header_field += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self.header_value += data[start:end]

    def on_header_end(self) -> None:
        if len(self.header_field) + len(self.header_value) > MAX_FIELD:
            raise FormRefused(400, "a malformed form: a part's header is too long")
        self.headers[self.header_field.lower()] = self.header_value
        self.header_field = self.header_value = b""

    def on_headers_finished(self) -> None:
        _, options = parse_options_header(self.headers.get(b"content-disposition", b""))
        raw = options.get(b"name", b"")
        self.name = raw.decode("latin-1") if isinstance(raw, bytes) else str(raw)
        if self.name == ARCHIVE:
            if self.archive_started:
                raise FormRefused(400, "a malformed form: two archives")
            self.archive_started = True
        else:
            self.fields[self.name] = b""

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        if self.name == ARCHIVE:
            self.pending.append(data[start:end])
            return
        assert self.name is not None
        value = self.fields[self.name] + data[start:end]
        if len(value) > MAX_FIELD:
            raise FormRefused(400, f"a malformed form: the field {self.name[:40]!r} is too long")
        self.fields[self.name] = value

    def on_part_end(self) -> None:
        if self.name == ARCHIVE:
            self.archive_ended = True
        elif self.name is not None:
            self.check(self.name, self.fields[self.name].decode("utf-8", errors="replace"))


async def read_form(chunks: AsyncIterator[bytes], content_type: str, sink: Path, cap: int,
                    authorize: Callable[[dict[str, str]], Awaitable[None]],
                    check: Callable[[str, str], None] = lambda name, value: None) -> tuple[dict[str, str], int]:
    """Parse the form from ``chunks``: its small fields, and its archive written to ``sink`` (a new file, at most
    ``cap`` bytes). ``check(name, value)`` runs as each small field ends, ``authorize(fields)`` once, when the
    archive begins (or at the end, without one); both refuse by raising :class:`FormRefused`, and ``sink`` is not
    opened before ``authorize`` returns. Returns (fields, archive bytes)."""
    kind, options = parse_options_header(content_type)
    boundary = options.get(b"boundary")
    if kind != b"multipart/form-data" or not boundary:
        raise FormRefused(400, "a malformed form: expected multipart/form-data with a boundary")
    parts = _Parts(check)
    parser = MultipartParser(boundary, {
        "on_part_begin": parts.on_part_begin, "on_part_data": parts.on_part_data, "on_part_end": parts.on_part_end,
        "on_header_field": parts.on_header_field, "on_header_value": parts.on_header_value,
        "on_header_end": parts.on_header_end, "on_headers_finished": parts.on_headers_finished})
    out: AsyncFile[bytes] | None = None
    size = 0

    def text() -> dict[str, str]:
        return {name: value.decode("utf-8", errors="replace") for name, value in parts.fields.items()}

    try:
        async for chunk in chunks:
            parser.write(chunk)
            if parts.archive_started and out is None:
                await authorize(text())
                out = await anyio.open_file(sink, "xb")
            for block in parts.pending:
                size += len(block)
                if size > cap:
                    raise FormRefused(413, f"the upload is larger than {cap} bytes (at most {cap >> 10} KiB)")
                assert out is not None
                await out.write(block)
            parts.pending.clear()
        parser.finalize()
    except FormParserError as error:
        raise FormRefused(400, f"a malformed form: {error}") from None
    finally:
        if out is not None:
            await out.aclose()
    if out is None:
        await authorize(text())
    if not parts.archive_started:
        raise FormRefused(400, "choose an archive to upload")
    return text(), size
