"""Benchmark: user-space instructions per referee turn and per ``Match.apply``, counted by valgrind's callgrind.

CPU time on a machine shared with other work moves by half from minute to minute; the instructions a fixed,
deterministic workload executes do not. Each figure is the difference of two runs of this file under
``valgrind --tool=callgrind`` that differ only in the part measured, so Python's start, the imports and the
set-up cancel out:

- ``apply``: 30 matches (3 seats, seed 1) of ``bench/engine.py``'s policies are played once to record their moves;
  each move is encoded as a bot would send it and parsed by ``protocol.parse_move`` as the referee does. One run
  then replays every match with ``Match.apply``, the other only makes the ``Match`` objects: per apply, the
  difference over the number of applies (a round's deal and end included, ``Match()`` excluded).
- ``referee``: ``bench/protocol.py``'s match (3 of its fast bots, the process sandbox, bwrap where it works, the
  event log on) played to 60 rounds and, in the other run, to 5 rounds from the same seed: the marginal turn, the
  referee's own instructions per extra turn (the bots run natively, outside valgrind; launch and kill cancel out).

It also prints, run natively, SHA-256 digests that must not change when the code is made faster: the events of
800 random matches (random legal moves, 3 and 4 seats, both deal versions) and the 60-round match's log with its
times zeroed (the wire bytes and the log format). Kernel time is not counted. Prints ONE JSON object.

    python bench/instructions.py [--apply-matches 30] [--referee-seeds 0] [--profile DIR]

``--profile DIR`` keeps the callgrind files there, for ``callgrind_annotate`` (by C function: where the
interpreter's time goes, the bytecode loop, allocation, zlib, SHA-512, the Mersenne Twister).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import importlib.util
import json
import os
import platform
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arena.game.engine import DEAL_VERSIONS, Match, Move
from arena.game.rules import Rules
from arena.match import protocol

CHECK_MATCHES = 800
"""Random matches whose events are hashed (400 per deal version)."""


def _bench_module(name: str) -> ModuleType:
    """Another bench script, imported by path (bench/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", Path(__file__).with_name(f"{name}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def recorded_moves(matches: int, players: int, seed: int) -> list[tuple[int, list[Move]]]:
    """Each match's seed and its moves as the referee would have them: encoded as a bot sends them, then parsed."""
    engine = _bench_module("engine")
    rules = Rules()
    master = random.Random(seed)
    discards = engine.DiscardTimer()
    recorded = []
    for number in range(matches):
        match_seed = master.randrange(2**32)
        match = Match(players, match_seed, rules)
        rng = random.Random(master.randrange(2**32))
        policies = [engine.POLICIES[(s + number) % len(engine.POLICIES)] for s in range(players)]
        moves = []
        while match.outcome is None:
            move = policies[match.turn](match.view(match.turn), rules, rng, discards)
            match.apply(move)
            line = json.dumps(move.to_json(), separators=(",", ":")).encode()
            moves.append(protocol.parse_move(line))
        recorded.append((match_seed, moves))
    return recorded


def child_apply(replay: bool, matches: int) -> dict[str, Any]:
    """The ``apply`` workload: record, make the matches, and (``replay``) apply every move."""
    players = 3
    recorded = recorded_moves(matches, players, seed=1)
    made = [Match(players, match_seed) for match_seed, _ in recorded]
    applies = 0
    if replay:
        for match, (_, moves) in zip(made, recorded):
            apply = match.apply
            for move in moves:
                apply(move)
            applies += len(moves)
    return {"applies": applies}


def child_referee(rounds: int, seeds: list[int], log_dir: Path) -> dict[str, Any]:
    """The ``referee`` workload: bench/protocol.py's match to ``rounds`` rounds, once per seed, logged in
    ``log_dir``."""
    bench = _bench_module("protocol")
    from arena.bots.manifest import load_bot
    from arena.match.protocol import Limits
    from arena.match.referee import play_match
    from arena.sandbox.process import ProcessSandbox

    turns = 0
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        root.chmod(0o755)  # the sandbox runs the bot as an unprivileged user of its own
        bot_dir = root / "fast"
        bot_dir.mkdir()
        (bot_dir / "bot.py").write_text(bench.FAST_BOT)
        (bot_dir / "bot.yaml").write_text(f"name: fast\ncommand: [{bench.BOT_PYTHON}, bot.py]\n")
        bots = [load_bot(bot_dir)] * 3
        sandbox = ProcessSandbox()
        for seed in seeds:
            log = log_dir / f"r{rounds}-{seed}.jsonl.gz"
            result = play_match(bots, seed, sandbox, Rules(threshold=500, max_rounds=rounds), Limits(), log_path=log)
            faults = [p.fault for p in result.players if p.fault is not None]
            if faults:
                raise SystemExit(f"the bench bot faulted: {faults[0]}")
            turns += result.turns
        return {"turns": turns, "variant": sandbox.variant}


_TIMES = re.compile(rb'"(at|duration_s|time_left_ms|bank_ms|bank_left_ms)":[0-9.e+-]+')


def log_digest(path: Path) -> str:
    """The log's SHA-256 without what varies from run to run: every time zeroed, the temporary directory's paths
    cut, and the bots' ``ready`` lines in seat order (they answer hello in any order)."""
    text = _TIMES.sub(rb'"\1":0', gzip.decompress(path.read_bytes()))
    lines = re.sub(rb'"(directory|log)":"[^"]*"', rb'"\1":""', text).splitlines()
    ready = sorted(line for line in lines if line.endswith(b'"line":"{\\"type\\":\\"ready\\"}"}'))
    rest = [line for line in lines if line not in ready]
    return hashlib.sha256(b"\n".join(ready + rest)).hexdigest()


def events_digest(matches: int) -> str:
    """SHA-256 of the events of ``matches`` random matches (random legal moves, sometimes a declaration, rarely a
    forfeit), half of them with each deal version."""
    digest = hashlib.sha256()
    for number in range(matches):
        version = DEAL_VERSIONS[number % len(DEAL_VERSIONS)]
        rules = Rules(threshold=60) if number % 3 else Rules(threshold=40, max_turns_per_player=8)
        match = Match(3 + number % 2, number, rules, deal_version=version)
        rng = random.Random(number)
        while match.outcome is None:
            moves = list(match.legal_moves())
            move = moves[0] if rng.random() < 0.3 else rng.choice(moves)
            match.apply(move)
            if rng.random() < 0.001:
                match.forfeit(rng.randrange(match.players), "bench forfeit")
        digest.update(json.dumps(match.events, sort_keys=True).encode())
    return digest.hexdigest()


def counted(arguments: list[str], out: Path) -> tuple[int, dict[str, Any]]:
    """Instructions of this file run as ``--child`` with ``arguments`` under callgrind, and what it printed."""
    command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, __file__, "--child",
               *arguments]
    # A fixed hash seed: the layout of sets and dictionaries, and so a few hundred instructions a turn, else vary.
    done = subprocess.run(command, capture_output=True, text=True, check=False,
                          env=os.environ | {"PYTHONHASHSEED": "0"})
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(arguments)} failed under valgrind ({done.returncode}): {done.stderr[-2000:]}")
    totals = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.MULTILINE)
    assert totals is not None, f"no totals in {out}"
    return int(totals.group(1)), json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apply-matches", type=int, default=30)
    parser.add_argument("--referee-seeds", default="0", help="comma-separated seeds of the referee's match")
    parser.add_argument("--profile", type=Path, help="keep the callgrind files in this directory")
    parser.add_argument("--only", choices=("apply", "referee"), help="count one workload only")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    seeds = [int(seed) for seed in args.referee_seeds.split(",")]
    if args.child:
        kind, value = args.child[0], args.child[1]
        found = (child_apply(value == "replay", args.apply_matches) if kind == "apply"
                 else child_referee(int(value), seeds, Path(args.child[2])))
        print(json.dumps(found))
        return
    with tempfile.TemporaryDirectory() as tmp:
        where = args.profile or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        common = ["--apply-matches", str(args.apply_matches), "--referee-seeds", args.referee_seeds]
        logs = Path(tmp)
        runs = {name: counted([*child, *common], where / f"callgrind.{name}")
                for name, child in (("apply_replay", ["apply", "replay"]), ("apply_setup", ["apply", "setup"]),
                                    ("referee_long", ["referee", "60", tmp]), ("referee_short", ["referee", "5", tmp]))
                if args.only is None or name.startswith(args.only)}
        report: dict[str, Any] = {"python": platform.python_version()}
        if "apply_replay" in runs:
            applies = runs["apply_replay"][1]["applies"]
            report |= {"applies": applies,
                       "instructions_per_apply": round((runs["apply_replay"][0] - runs["apply_setup"][0]) / applies),
                       "events_sha256": events_digest(CHECK_MATCHES)}
        if "referee_long" in runs:
            turns = runs["referee_long"][1]["turns"] - runs["referee_short"][1]["turns"]
            instructions = runs["referee_long"][0] - runs["referee_short"][0]
            report |= {"sandbox": runs["referee_long"][1]["variant"], "marginal_turns": turns,
                       "referee_instructions_per_marginal_turn": round(instructions / turns),
                       "referee_log_sha256": hashlib.sha256("".join(log_digest(logs / f"r60-{seed}.jsonl.gz")
                                                                    for seed in seeds).encode()).hexdigest()}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
