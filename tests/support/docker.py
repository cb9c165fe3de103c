"""The Docker engine for the tests that need one: they skip without it, saying why, or fail under
``ARENA_REQUIRE_DOCKER=1`` (as in CI, where .ci/start-docker starts one)."""

from __future__ import annotations

import os

import pytest


def require_docker() -> None:
    """Return if a Docker engine answers here; else skip the test, or fail it when CI requires the engine."""
    from arena.sandbox.docker import engine_status  # the docker SDK only for the tests that use it

    works, reason = engine_status()
    if works:
        return
    if os.environ.get("ARENA_REQUIRE_DOCKER") == "1":
        pytest.fail(f"ARENA_REQUIRE_DOCKER=1 but no Docker engine is reachable: {reason}")
    pytest.skip(f"no Docker engine reachable (start one with .ci/start-docker): {reason}")
