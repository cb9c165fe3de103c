"""Benchmark: what the referee adds on top of the pipe to a bot.

(a) the raw round trip: one JSON turn line to a minimal Python bot that parses it and answers, over a pipe: the
floor for any referee; (b) the same round trip to the same bot started by the process sandbox (bwrap where it
works), through the :class:`~arena.sandbox.BotProcess` interface: the floor for a sandboxed referee; (c) whole
matches between minimal fast bots through the referee (process sandbox, event log on), as time per turn from the
first turn to the last reply (the marginal turn: start-up excluded), and the referee's own CPU time per turn, with
and without the bots' launch and kill. Prints one JSON object with all three and the ratios of (c) to (a) and (b).

    python bench/protocol.py [--round-trips 20000] [--matches 5] [--players 3] [--live]

``--live`` plays (c) as a league does, with the spectators' feed beside each log (arena/match/livefeed.py).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arena.bots.manifest import load_bot
from arena.game.rules import Rules
from arena.match.protocol import Limits
from arena.match.referee import play_match
from arena.sandbox import BotProcess, SandboxLimits
from arena.sandbox.process import ProcessSandbox

FAST_BOT = r'''
import json, sys
VALUE = {r: min(i + 1, 10) for i, r in enumerate("A23456789TJQK")}
out = sys.stdout
for line in sys.stdin:
    m = json.loads(line)
    t = m["type"]
    if t == "hello":
        out.write('{"type":"ready"}\n'); out.flush()
    elif t == "turn":
        hand = m["hand"]
        if m["may_declare"] and sum(VALUE[c[0]] for c in hand) <= 7:
            out.write('{"type":"declare"}\n')
        else:
            card = max(hand, key=lambda c: VALUE[c[0]])
            out.write('{"type":"play","discard":["%s"],"take":"deck"}\n' % card)
        out.flush()
'''

BOT_PYTHON = "/usr/bin/python3"
"""The system's interpreter, which the sandbox shows bots; the raw round trip uses the same one."""

TURN = (b'{"type":"turn","round":3,"hand":["7H","8S","KD","2C","AS"],"floor":["9H"],"may_declare":true,'
        b'"deck_size":31,"hand_sizes":[5,4,5],"scores":[10,22,0],"live":[true,true,true],'
        b'"time_left_ms":11000,"bank_ms":10000}\n')


def raw_round_trip(bot_file: Path, count: int) -> float:
    """Seconds per round trip, best of three runs."""
    best = float("inf")
    for _ in range(3):
        process = subprocess.Popen([BOT_PYTHON, str(bot_file)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert process.stdin and process.stdout
        stdin, stdout = process.stdin.fileno(), process.stdout
        os.write(stdin, b'{"type":"hello"}\n')
        stdout.readline()
        start = time.perf_counter()
        for _ in range(count):
            os.write(stdin, TURN)
            stdout.readline()
        best = min(best, (time.perf_counter() - start) / count)
        process.stdin.close()
        process.wait()
    return best


def round_trip(process: BotProcess, poller: select.epoll, line: bytes) -> None:
    """Send ``line`` to the bot and wait for its reply line."""
    process.write(line)
    while True:
        for fd, _ in poller.poll(5):
            if any(stream == "stdout" and data.endswith(b"\n") for stream, data in process.read(fd)):
                return


def sandboxed_round_trip(bot_dir: Path, count: int) -> float:
    """Seconds per round trip to the bot under the process sandbox, best of three runs."""
    best = float("inf")
    for _ in range(3):
        process = ProcessSandbox().launch(load_bot(bot_dir), SandboxLimits())
        poller = select.epoll()
        for fd in process.read_fds():
            poller.register(fd, select.EPOLLIN)
        try:
            round_trip(process, poller, b'{"type":"hello"}\n')
            start = time.perf_counter()
            for _ in range(count):
                round_trip(process, poller, TURN)
            best = min(best, (time.perf_counter() - start) / count)
        finally:
            poller.close()
            process.kill()
    return best


def referee_turns(bot_dir: Path, matches: int, players: int, log_dir: Path, live: bool = False) -> dict[str, float]:
    """Seconds per turn through the referee, from the first turn sent to the last reply, per match."""
    bots = [load_bot(bot_dir)] * players
    sandbox = ProcessSandbox()
    per_turn, whole, cpu, marginal = [], [], [], []
    for seed in range(matches):
        log = log_dir / f"m{seed}.jsonl.gz"
        cpu_before = time.process_time()
        result = play_match(bots, seed, sandbox, Rules(threshold=500, max_rounds=60), Limits(), log_path=log,
                            watched=live)
        cpu.append((time.process_time() - cpu_before) / result.turns)
        faults = [p.fault for p in result.players if p.fault is not None]
        if faults:
            raise SystemExit(f"the bench bot faulted: {faults[0]}")
        with gzip.open(log) as handle:
            lines = handle.readlines()
        sends = [json.loads(line) for line in lines if line.startswith(b'{"t":"send"')]
        recvs = [json.loads(line) for line in lines if line.startswith(b'{"t":"recv"')]
        first_turn = next(r["at"] for r in sends if r["msg"]["type"] == "turn")
        span_ms = recvs[-1]["at"] - first_turn
        per_turn.append(span_ms / 1000 / result.turns)
        whole.append(result.duration_s / result.turns)
        # The same deal cut short (5 rounds): the CPU the long match spent beyond it is its marginal turns' alone,
        # without the bots' launch and kill (the sandbox's cost, which bench/launch.py measures).
        short_log = log_dir / f"s{seed}.jsonl.gz"
        cpu_before = time.process_time()
        short = play_match(bots, seed, sandbox, Rules(threshold=500, max_rounds=5), Limits(), log_path=short_log,
                           watched=live)
        short_cpu = time.process_time() - cpu_before
        marginal.append((cpu[-1] * result.turns - short_cpu) / (result.turns - short.turns))
    return {"per_turn_s": statistics.median(per_turn), "per_turn_with_startup_s": statistics.median(whole),
            "cpu_per_turn_s": statistics.median(cpu), "cpu_per_marginal_turn_s": statistics.median(marginal)}


def sandbox_variant() -> str:
    return ProcessSandbox().variant


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--round-trips", type=int, default=20000)
    parser.add_argument("--matches", type=int, default=5)
    parser.add_argument("--players", type=int, default=3)
    parser.add_argument("--live", action="store_true", help="with the live feed a league writes")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        root.chmod(0o755)  # the sandbox runs the bot as an unprivileged user of its own
        bot_dir = root / "fast"
        bot_dir.mkdir()
        (bot_dir / "bot.py").write_text(FAST_BOT)
        (bot_dir / "bot.yaml").write_text(f"name: fast\ncommand: [{BOT_PYTHON}, bot.py]\n")
        raw = raw_round_trip(bot_dir / "bot.py", args.round_trips)
        sandboxed = sandboxed_round_trip(bot_dir, args.round_trips)
        turns = referee_turns(bot_dir, args.matches, args.players, root, args.live)
    print(json.dumps({
        "python": platform.python_version(),
        "players": args.players,
        "live": args.live,
        "sandbox": sandbox_variant(),
        "raw_round_trip_us": round(raw * 1e6, 1),
        "sandboxed_round_trip_us": round(sandboxed * 1e6, 1),
        "referee_turn_us": round(turns["per_turn_s"] * 1e6, 1),
        "referee_turn_with_startup_us": round(turns["per_turn_with_startup_s"] * 1e6, 1),
        # The referee's own CPU time per turn (start-up and clean-up included): what it adds whatever the scheduler.
        "referee_cpu_per_turn_us": round(turns["cpu_per_turn_s"] * 1e6, 1),
        # The same without start-up and clean-up: a long match's CPU minus a short one's, per extra turn.
        "referee_cpu_per_marginal_turn_us": round(turns["cpu_per_marginal_turn_s"] * 1e6, 1),
        "ratio": round(turns["per_turn_s"] / raw, 2),
        "ratio_to_sandboxed": round(turns["per_turn_s"] / sandboxed, 2),
        "goal_ratio": 1.3,
    }))


if __name__ == "__main__":
    main()
