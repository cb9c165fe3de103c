"""The client side of ``arena submit --server URL``: pack a bot directory and upload it to a league server.

Standard library only (urllib, tarfile), so authors need nothing beyond arena itself. The files packed are exactly
those the registry would take (:func:`arena.bots.files.scan`: no links, no special files, within the limits), so most
refusals happen here, before anything is sent; the server applies every guard again anyway.
"""

from __future__ import annotations

import io
import json
import ssl
import tarfile
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.bots.files import scan
from arena.bots.manifest import load_bot

TOKEN_VARIABLE = "ARENA_TOKEN"
TIMEOUT_S = 600.0
"""The server runs the admission check before it answers: tens of seconds for a slow bot."""


@dataclass(frozen=True)
class UploadReply:
    status: int
    body: dict[str, Any]


class UploadError(RuntimeError):
    """The server could not be reached or did not answer with JSON."""


class ServerURLError(UploadError):
    """``--server`` is not the server's URL: a path after it, or https:// to a plain-HTTP server (bad input)."""


def pack(directory: Path) -> bytes:
    """The bot in ``directory`` as a .tar.gz with its files at the root (raises ManifestError,
    SubmissionRejected)."""
    root = load_bot(directory).directory
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for entry in scan(root):
            info = tarfile.TarInfo(entry.relative)
            info.size = entry.size
            info.mode = 0o755 if entry.executable else 0o644
            with open(root / entry.relative, "rb") as handle:
                tar.addfile(info, handle)
    return buffer.getvalue()


def upload(server: str, token: str, body: bytes) -> UploadReply:
    """POST the archive to ``SERVER/api/bots``; any HTTP status comes back as a reply, not an exception."""
    url = server.rstrip("/") + "/api/bots"
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/gzip"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            return UploadReply(response.status, _json(response.read(), url))
    except urllib.error.HTTPError as failure:
        if failure.code == 404 and urllib.parse.urlsplit(server).path.strip("/"):
            raise ServerURLError(f"--server {server}: the server has no {url} (HTTP 404): --server is the server's "
                              f"root URL, without a path, such as {_root(server)}") from None
        return UploadReply(failure.code, _json(failure.read(), url))
    except (urllib.error.URLError, OSError) as failure:
        reason = getattr(failure, "reason", failure)
        if isinstance(reason, ssl.SSLError) and reason.reason == "WRONG_VERSION_NUMBER":
            # the TLS hello was answered by something that is not TLS: a plain-HTTP server, as arena serve is
            plain = "http://" + server.split("://", 1)[1]
            raise ServerURLError(f"--server {server}: the server answered in plain HTTP, not HTTPS: use {plain} (or "
                              "put a TLS proxy in front of it, docs/SERVER.md)") from None
        raise UploadError(f"{url}: cannot reach the server: {reason}") from None


def _root(server: str) -> str:
    parts = urllib.parse.urlsplit(server)
    return f"{parts.scheme}://{parts.netloc}"


def _json(raw: bytes, url: str) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except ValueError:
        raise UploadError(f"{url}: the answer is not JSON: {raw[:200]!r}") from None
    if not isinstance(data, dict):
        raise UploadError(f"{url}: expected a JSON object, got {type(data).__name__}")
    return data
