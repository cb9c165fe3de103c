"""Hostile and broken test bots, written into a temporary directory on demand.

Each bot plays legal moves (throw its highest card, take from the deck, never declare) and misbehaves once, at a
chosen moment, so that a test can check both that the misbehaviour was caught and that the match went on.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

TEMPLATE = '''\
import os, sys, time, json, random
import arena_bot

ATTACK_AT = {at}  # 0: right after hello arrives; n: at the bot's n-th turn
ALL_CARDS = [r + s for s in "CDHS" for r in "A23456789TJQK"]


def raw(data):
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def attack(message):
{attack}


class Hostile(arena_bot.Bot):
    turns = 0

    def reply(self, message):
        if message.get("type") == "hello" and ATTACK_AT == 0:
            answer = attack(message)
            return {{"type": "ready"}} if answer is None else answer
        return super().reply(message)

    def on_turn(self, message):
        self.turns += 1
        if self.turns == ATTACK_AT:
            answer = attack(message)
            if answer is not None:
                return answer if answer != "silent" else None
        card = max(message["hand"], key=arena_bot.value)
        return arena_bot.play([card], "deck")


def run():
    bot = Hostile()
    for line in sys.stdin.buffer:
        answer = bot.reply(json.loads(line))
        if answer is not None:
            raw(json.dumps(answer).encode() + b"\\n")


{prelude}
run()
'''

# name -> (when, attack body, code run before the protocol loop)
ATTACKS: dict[str, tuple[int, str, str]] = {
    "polite": (1, "return None", ""),
    "sleep_past_deadline": (2, "time.sleep(60)", ""),
    "exit_mid_match": (2, "sys.exit(3)", ""),
    "crash_traceback": (2, "raise RuntimeError('boom: the bot fell over')", ""),
    "not_json": (1, "raw(b'I think I will throw the seven\\n'); return 'silent'", ""),
    "wrong_shape": (1, "return {'type': 'play', 'discard': '7H', 'take': 'deck'}", ""),
    "binary_garbage": (1, "raw(bytes(range(256)) * 4 + b'\\n'); return 'silent'", ""),
    "long_line": (1, "raw(b'[' + b'1,' * 60000 + b'1]\\n'); return 'silent'", ""),
    "flood_no_newline": (1, "raw(b'x' * (8 << 20)); time.sleep(60)", ""),
    "unsolicited": (1, "raw(b'{\"type\": \"chat\", \"text\": \"hi\"}\\n'); return None", ""),
    "card_not_in_hand": (
        1, "return arena_bot.play([next(c for c in ALL_CARDS if c not in message['hand'])], 'deck')", ""),
    "illegal_set": (
        1,
        "h = message['hand']\n"
        "return arena_bot.play(next([a, b] for a in h for b in h if a[0] != b[0]), 'deck')",
        "",
    ),
    "declare_first_turn": (1, "return arena_bot.declare()", ""),
    "take_not_on_floor": (
        1,
        "h = message['hand']\n"
        "gone = next(c for c in ALL_CARDS if c not in h and c not in message['floor'])\n"
        "return arena_bot.play([h[0]], gone)",
        "",
    ),
    "slow_loris": (1, "raw(b'{\"type\": \"pl')\nwhile True:\n    raw(b' ')\n    time.sleep(0.05)", ""),
    "never_reads_stdin": (0, "return None", "time.sleep(60)"),
    "stderr_flood": (1, "return None", "sys.stderr.write('E' * (1 << 20))\nsys.stderr.flush()"),
    "stderr_flood_every_turn": (
        1, "return None",
        "_orig = Hostile.on_turn\n"
        "def _noisy(self, message):\n"
        "    sys.stderr.write('noise ' * 50000)\n"
        "    return _orig(self, message)\n"
        "Hostile.on_turn = _noisy",
    ),
    "cpu_spin": (1, "while True:\n    pass", ""),
    "close_stdout": (1, "os.close(1)\ntime.sleep(60)", ""),
    "close_stdin": (2, "os.close(0)\ntime.sleep(60)", ""),
    "daemon_grandchild": (
        1,
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(300)\n"
        "    os._exit(0)\n"
        "return None",
        "",
    ),
    "bad_ready": (0, "return {'type': 'steady'}", ""),
}


def make_bot(root: Path, attack: str, name: str | None = None) -> Path:
    """Write the bot for ``attack`` under ``root`` and return its directory."""
    when, body, prelude = ATTACKS[attack]
    directory = root / (name or attack.replace("_", "-"))
    directory.mkdir(parents=True, exist_ok=True)
    source = TEMPLATE.format(at=when, attack=textwrap.indent(body, "    "), prelude=prelude)
    (directory / "bot.py").write_text(source)
    (directory / "bot.yaml").write_text(f"name: {directory.name}\ncommand: python3 bot.py\nlanguage: python\n")
    return directory


def processes_under(root: Path) -> list[int]:
    """Pids of live processes whose working directory is inside ``root`` (a bot's directory)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
            with open(f"/proc/{entry}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if state != b"Z" and Path(cwd).is_relative_to(root):
            found.append(int(entry))
    return found
