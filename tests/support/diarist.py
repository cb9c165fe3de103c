"""Copies of the greedy sample bot for issue 43's tests: one that keeps a diary on stderr (``MARK turn N`` before its
N-th move, so a test can tell whether each line is shown beside the move it was written for), and one that takes
its time over each move (so that a spectator has a match in play to follow)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.support.server import make_bot

ROOT = Path(__file__).resolve().parent.parent.parent
DIARY = re.compile(r"(\S+) turn (\d+)$")


def diarist(where: Path, name: str, mark: str) -> Path:
    """A copy of sample:greedy named ``name`` that writes ``{mark} turn {n}`` on stderr as it thinks of its n-th
    move (counted from 1)."""
    return patched_greedy(where, name, '        self.turns = getattr(self, "turns", 0) + 1\n'
                                       f'        sys.stderr.write(f"{mark} turn {{self.turns}}\\n")\n'
                                       '        sys.stderr.flush()\n', "import sys\n")


def patched_greedy(where: Path, name: str, before_move: str, imports: str) -> Path:
    """A copy of sample:greedy named ``name`` that runs ``before_move`` (indented lines) as each turn arrives."""
    directory = make_bot(where, name, ROOT / "sample_bots" / "greedy")
    source = (directory / "bot.py").read_text()
    patched = source.replace('        hand: list[str] = message["hand"]\n',
                             '        hand: list[str] = message["hand"]\n' + before_move, 1).replace(
        "import arena_bot\n", f"{imports}\nimport arena_bot\n", 1)
    assert patched.count("\n") > source.count("\n")
    (directory / "bot.py").write_text(patched)
    return directory


def slow_greedy(where: Path, name: str, pause_s: float) -> Path:
    """A copy of sample:greedy that pauses ``pause_s`` before each move: its matches last long enough to watch."""
    return patched_greedy(where, name, f"        time.sleep({pause_s})\n", "import time\n")


def moves_of(events: Sequence[dict[str, Any]], seat: int) -> list[int]:
    """The steps (event indexes) of ``seat``'s moves, in order: where its n-th diary line belongs."""
    return [step for step, event in enumerate(events)
            if event.get("type") in ("play", "declare") and event.get("seat") == seat]
