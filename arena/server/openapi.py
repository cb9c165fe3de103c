"""The OpenAPI document of the league server's JSON API, and its versioned paths.

The document is written by hand (``arena/schemas/openapi.yaml``, package data), under ``/api/v1``: the API is a
handful of routes whose answers are shaped by the store and the league, so a hand-written description checked
against a running server (tests/server/test_server_api.py runs schemathesis on it) says more than one generated from
signatures. :func:`document` adds each path's unversioned twin (``/api/bots`` for ``/api/v1/bots``), since the old
paths are kept and answer the same; :data:`API` and :data:`API_V1` are the two prefixes the routes are mounted at.
"""

from __future__ import annotations

import copy
import functools
import json
from importlib import resources
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from arena.yamlfile import load_yaml

API = "/api"
API_V1 = "/api/v1"


@functools.cache
def document() -> dict[str, Any]:
    """The document: the written ``/api/v1`` paths and their ``/api`` twins (same operations, their own ids)."""
    text = resources.files("arena").joinpath("schemas", "openapi.yaml").read_text(encoding="utf-8")
    written: dict[str, Any] = load_yaml(text)
    paths: dict[str, Any] = {}
    for path, operations in written["paths"].items():
        assert path.startswith(API_V1 + "/"), f"openapi.yaml: {path}: every path is written under {API_V1}"
        paths[path] = operations
        twin = copy.deepcopy(operations)
        for operation in twin.values():
            operation["operationId"] += "Unversioned"
        paths[API + path[len(API_V1):]] = twin
    return {**written, "paths": paths}


@functools.cache
def document_body() -> bytes:
    return json.dumps(document(), ensure_ascii=False, separators=(",", ":")).encode()


async def get_openapi(request: Request) -> Response:
    return Response(document_body(), media_type="application/json")
