"""A bot that holds its match at the start until the test lets it go, for tests that look at a run while a match
is in play without racing a clock: before it says ready it waits for a file ``go-SEAT`` to appear in its own
directory (the sandbox mounts that directory; run it with ``ARENA_PRIVATE_VIEWS=0`` so that the file reaches it),
then plays a plain greedy game."""

from __future__ import annotations

from pathlib import Path

GATE_BOT = '''\
import json, os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "hello":
        while not os.path.exists(os.path.join(here, "go-%d" % message["seat"])):
            time.sleep(0.02)
        print('{"type":"ready"}', flush=True)
    elif message["type"] == "turn":
        values = {c: min("A23456789TJQK".index(c[0]) + 1, 10) for c in message["hand"]}
        if message["may_declare"] and sum(values.values()) <= 5:
            print('{"type":"declare"}', flush=True)
        else:
            print(json.dumps({"type": "play", "discard": [max(values, key=values.get)], "take": "deck"}), flush=True)
'''


def gate_bot(directory: Path) -> Path:
    """The gate bot, written into ``directory`` (made here), named ``gate``."""
    directory.mkdir(parents=True)
    (directory / "bot.py").write_text(GATE_BOT)
    (directory / "bot.yaml").write_text("name: gate\ncommand: python3 bot.py\nlanguage: python\n")
    return directory


def open_gate(directory: Path, *seats: int) -> None:
    """Let the gate bot in ``directory`` go on when it sits in one of ``seats``."""
    for seat in seats:
        (directory / f"go-{seat}").touch()
