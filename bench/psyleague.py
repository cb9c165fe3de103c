"""Benchmark: ``arena run`` against psyleague driving ``arena match``, the same bots, rules and workers.

psyleague (``pip install psyleague==0.4.1``) is a small, popular local league runner for bot contests: it starts a
shell command per game and reads the game's ranks from its stdout. Here that command is ``play.py`` (written by
this script): it runs ``python -m arena match`` on the three bots psyleague chose, with the next deal seed, and
prints the ranks in psyleague's format. So both sides play the same matches of the four sample bots (3 seats,
threshold 50, the same sandbox and limits); what differs is the runner: a process per game (psyleague) against
arena's pool of workers that start once.

Both are run ``--runs`` times, interleaved, with ``--workers`` parallel games each, and timed by wall clock and by
CPU (this process's children: the runners, their sandboxes and the bots, user + system). Prints ONE JSON object:
games per second and per CPU second of each, and their ratios (the goal of issue 24: arena at least 3x psyleague's
games per second).

    python bench/psyleague.py [--games 24] [--workers 2] [--runs 2] [--bots random,greedy,planner,js-greedy]
                              [--reuse 16]

``--reuse N`` also plays arena's side with ``reuse: {matches: N}`` (the sample bots are persistent: each stays up
along a chain of the schedule's lanes, docs/TOURNAMENTS.md), interleaved with the other two, and prints
``arena_reuse`` and its ratios beside the others. Reuse cuts the groups into blocks of N whose chains play one after
another, so keep at least ``--workers`` blocks: ``--games`` at least 3 x N x workers (the JSON's ``reuse_blocks``;
fewer leave a worker idle, and the bench says so on stderr).

``--bots`` plays other sample bots (at least three): the planner thinks for about 0.3 CPU s a game, which both
runners pay alike, so with it in the field the ratio says more about the planner than about the runners; the
field without it shows what the runner itself costs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BOTS = ("random", "greedy", "planner", "js-greedy")
THRESHOLD = 50

# The game command psyleague runs: one `arena match` with the next seed (a counter file under a lock, so parallel
# games take distinct deals), its places turned into psyleague's ranks (0 is first) and errors (a faulted seat).
PLAY = '''\
import fcntl, json, subprocess, sys
from pathlib import Path
counter = Path(__file__).with_name("seed")
with open(counter, "a+") as handle:
    fcntl.flock(handle, fcntl.LOCK_EX)
    handle.seek(0)
    seed = int(handle.read() or 0) + 1
    handle.seek(0)
    handle.truncate()
    handle.write(str(seed))
names = sys.argv[1:]
done = subprocess.run([sys.executable, "-m", "arena", "match", *("sample:" + n for n in names), "--seed", str(seed),
                       "--threshold", "THRESHOLD", "--json", "--log", str(counter.with_name(f"m{seed}.jsonl.gz"))],
                      capture_output=True, text=True, check=True)
players = json.loads(done.stdout)["players"]
print(json.dumps({"ranks": [p["place"] - 1 for p in players], "errors": [int(p["fault"] is not None) for p in players],
                  "test_data": {}, "player_data": [{} for _ in players]}))
'''.replace("THRESHOLD", str(THRESHOLD))


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str], cwd: Path) -> tuple[float, float, str]:
    """Wall and CPU seconds of ``command`` and everything it waited for, and its stdout."""
    cpu, started = children_cpu(), time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    wall, cpu = time.perf_counter() - started, children_cpu() - cpu
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[:3])} failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall, cpu, done.stdout


def psyleague_run(work: Path, games: int, workers: int, bots: tuple[str, ...]) -> tuple[float, float, int]:
    """A fresh psyleague league of ``bots``, ``games`` games played: wall, CPU, games."""
    league = work / "psyleague"
    shutil.rmtree(league, ignore_errors=True)
    league.mkdir()
    (league / "play.py").write_text(PLAY)
    tool = [sys.executable, "-c", "from psyleague.psyleague import _main; _main()"]
    subprocess.run([*tool, "config"], cwd=league, check=True, capture_output=True)
    config = (league / "psyleague.cfg").read_text()
    settings = {"n_workers": str(workers), "n_players": "3", "cmd_bot_setup": '"true"',
                "cmd_play_game": f'"{sys.executable} play.py %ALL_PLAYERS%"'}
    lines = []
    for line in config.splitlines():
        key = line.split("=", 1)[0].strip()
        lines.append(f"{key} = {settings[key]}" if key in settings else line)
    (league / "psyleague.cfg").write_text("\n".join(lines) + "\n")
    for bot in bots:
        subprocess.run([*tool, "bot", "add", bot], cwd=league, check=True, capture_output=True)
    wall, cpu, _ = timed([*tool, "run", "--games", str(games), "--silent"], league)
    played = sum(1 for line in (league / "psyleague.games").read_text().splitlines() if line.strip())
    return wall, cpu, played


def repeats_for(games: int, field: tuple[str, ...]) -> int:
    """Deals per group of a round-robin at 3 seats that come nearest ``games`` matches: every group of 3, 3 seat
    rotations of each deal (4 bots: 12 matches a repeat)."""
    return max(1, round(games / (3 * math.comb(len(field), 3))))


def arena_run(work: Path, games: int, workers: int, field: tuple[str, ...],
              reuse: int = 0) -> tuple[float, float, int]:
    """``arena run`` of ``field`` at 3 seats, enough deals for ``games`` matches, with ``reuse: {matches: reuse}``
    if ``reuse``: wall, CPU, matches."""
    bots = ", ".join(f"sample:{bot}" for bot in field)
    config = work / "arena.yaml"
    config.write_text(f"name: versus-psyleague\nbots: [{bots}]\nplayers: 3\nformat: round-robin\n"
                      f"repeats: {repeats_for(games, field)}\nseed: 7\nrules: {{threshold: {THRESHOLD}}}\n"
                      "sandbox: process\n" + (f"reuse: {{matches: {reuse}}}\n" if reuse else ""))
    db = work / "arena.db"
    db.unlink(missing_ok=True)
    wall, cpu, out = timed([sys.executable, "-m", "arena", "run", str(config), "--db", str(db), "--no-site",
                            "--workers", str(workers), "--json"], work)
    report = json.loads(out)
    return wall, cpu, int(report.get("played", report.get("matches", 0)) or 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=24, help="Games per run (arena rounds to whole repeats of 12).")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--bots", default=",".join(BOTS), help="Sample bots, comma-separated (at least 3).")
    parser.add_argument("--reuse", type=int, default=0,
                        help="Also play arena's side with reuse: {matches: N} (0: not), interleaved.")
    args = parser.parse_args()
    bots = tuple(bot.strip() for bot in args.bots.split(",") if bot.strip())
    if len(bots) < 3:
        parser.error("--bots: at least 3 sample bots, comma-separated")
    if args.reuse < 0:
        parser.error("--reuse: a number of matches per process, 0 for none")
    # One deal per group, cut into blocks of --reuse groups: a block's chains play one after another.
    blocks = -(-math.comb(len(bots), 3) * repeats_for(args.games, bots) // args.reuse) if args.reuse else 0
    if args.reuse and blocks < args.workers:
        print(f"--reuse {args.reuse}: {blocks} block(s) of deals for {args.workers} workers, so a worker waits; "
              f"raise --games to at least {3 * args.reuse * args.workers}", file=sys.stderr)
    try:
        import psyleague  # noqa: F401
    except ImportError:
        raise SystemExit("psyleague is not installed: pip install psyleague==0.4.1") from None
    samples: dict[str, list[tuple[float, float, int]]] = {"arena": [], "psyleague": []}
    if args.reuse:
        samples["arena_reuse"] = []
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="arena-vs-psyleague-") as tmp:
        work = Path(tmp)
        for _ in range(args.runs):
            samples["psyleague"].append(psyleague_run(work, args.games, args.workers, bots))
            samples["arena"].append(arena_run(work, args.games, args.workers, bots))
            if args.reuse:
                samples["arena_reuse"].append(arena_run(work, args.games, args.workers, bots, args.reuse))
            load.append(os.getloadavg()[0])

    def rates(runs: list[tuple[float, float, int]]) -> dict[str, float]:
        return {"games": sum(g for _, _, g in runs),
                "games_per_s": round(statistics.median(g / w for w, _, g in runs), 3),
                "games_per_cpu_s": round(statistics.median(g / c for _, c, g in runs), 3)}

    arena, psy = rates(samples["arena"]), rates(samples["psyleague"])
    report: dict[str, object] = {
        "python": platform.python_version(), "bots": list(bots), "workers": args.workers, "runs": args.runs,
        "load": [round(x, 1) for x in load], "arena": arena, "psyleague": psy,
        "ratio_games_per_s": round(arena["games_per_s"] / psy["games_per_s"], 2),
        "ratio_games_per_cpu_s": round(arena["games_per_cpu_s"] / psy["games_per_cpu_s"], 2),
        "goal_ratio_games_per_s": 3.0}
    if args.reuse:
        reused = rates(samples["arena_reuse"])
        report |= {"reuse": args.reuse, "reuse_blocks": blocks, "arena_reuse": reused,
                   "reuse_ratio_games_per_s": round(reused["games_per_s"] / psy["games_per_s"], 2),
                   "reuse_ratio_games_per_cpu_s": round(reused["games_per_cpu_s"] / psy["games_per_cpu_s"], 2),
                   "goal_reuse_ratio_games_per_s": 5.0}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
