"""Test helpers for the sample bots: load them in-process, or drive their real commands over pipes.

In-process loading goes by file path (the bots are scripts in ``sample_bots/``, not a package), with ``protocol/``
on ``sys.path`` so that their ``import arena_bot`` resolves as it does under the runner. :class:`PipeBot` runs a
bot's command from its ``bot.yaml`` behind pipes but answers like an in-process bot, so ``arena.match.local.play_local``
can play real programs without the referee or a sandbox.
"""

from __future__ import annotations

import importlib.util
import json
import os
import selectors
import shlex
import subprocess
import sys
import time
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import IO, Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
PROTOCOL_DIR = ROOT / "protocol"
SAMPLE_BOTS = ROOT / "sample_bots"
REPLY_TIMEOUT_S = 10.0
"""Generous: these tests check behaviour, not speed, and CI machines can be slow to start an interpreter."""


@cache
def load_sample_bot(name: str) -> ModuleType:
    """Import ``sample_bots/<name>/bot.py`` as a module (once per test session)."""
    if str(PROTOCOL_DIR) not in sys.path:
        sys.path.insert(0, str(PROTOCOL_DIR))
    module_name = "sample_bot_" + name.replace("-", "_")
    spec = importlib.util.spec_from_file_location(module_name, SAMPLE_BOTS / name / "bot.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def manifest(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((SAMPLE_BOTS / name / "bot.yaml").read_text(encoding="utf-8"))
    return data


def command(name: str) -> list[str]:
    """The bot's command from its manifest, split the way the runner splits a string command."""
    value = manifest(name)["command"]
    return shlex.split(value) if isinstance(value, str) else list(value)


def bot_env(**extra: str) -> dict[str, str]:
    """The environment the runner gives every bot, as far as the protocol promises: arena_bot on PYTHONPATH."""
    return {**os.environ, "PYTHONPATH": str(PROTOCOL_DIR), **extra}


class PipeBot:
    """A sample bot's real program behind pipes, with the in-process ``reply(message)`` interface.

    It writes every message to the program's stdin and reads one line back only for ``hello`` and ``turn`` (and
    ``match_end``, from a program whose ``ready`` said ``persistent``), so an extra line from the program is left on
    its stdout for :meth:`close` to find.
    """

    def __init__(self, name: str, stderr: IO[bytes]) -> None:
        self.name = name
        self.process = subprocess.Popen(
            command(name), cwd=SAMPLE_BOTS / name, env=bot_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=stderr,
        )
        assert self.process.stdout is not None
        os.set_blocking(self.process.stdout.fileno(), False)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.process.stdout, selectors.EVENT_READ)
        self.pending = b""
        self.persistent = False

    def reply(self, message: dict[str, Any]) -> dict[str, Any] | None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()
        if message["type"] not in ("hello", "turn") and (message["type"] != "match_end" or not self.persistent):
            return None
        answer: dict[str, Any] = json.loads(self._read_line())
        if message["type"] == "hello":
            self.persistent = answer.get("persistent") is True  # then match_end has a reply too: done
        return answer

    def _read_line(self) -> bytes:
        assert self.process.stdout is not None
        deadline = time.monotonic() + REPLY_TIMEOUT_S
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0 or not self.selector.select(left):
                raise AssertionError(f"{self.name}: no reply line within {REPLY_TIMEOUT_S} s")
            chunk = self.process.stdout.read()
            if not chunk:
                raise AssertionError(f"{self.name}: closed its stdout (exit {self.process.poll()})")
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return line

    def close(self) -> tuple[int, bytes]:
        """Close stdin as the referee does after match_end; return the exit code and any unread stdout."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        code = self.process.wait(timeout=REPLY_TIMEOUT_S)
        self.selector.close()
        os.set_blocking(self.process.stdout.fileno(), True)
        rest = self.pending + self.process.stdout.read()
        self.process.stdout.close()
        return code, rest
