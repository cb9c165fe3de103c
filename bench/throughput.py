"""Benchmark: matches per CPU second of a whole tournament of the four sample bots (3 seats, duplicate deals).

Runs ``arena run`` on the demo tournament's set-up (``tournaments/demo.yaml``: every combination of three of the
four sample bots, seat rotations of duplicate deals; ``--repeats`` deals each) with one worker, and counts the CPU
time of everything it ran: the runner, the sandboxes and the bots (the children's resource usage, user + system),
so the machine's load barely moves the figure. With ``--base DIR`` (another checkout of arena, say the commit
before a speed-up, in a temporary ``git worktree``) the same tournament runs under both, interleaved run by run,
and the ratio is printed. ``view_cpu_ms_per_match`` is what making each match's view (arena/match/matchview.py) costs the
worker that played it, timed again in this process on the current runs' logs, and ``view_share`` that against a
match's whole CPU time. Prints ONE JSON object.

    python bench/throughput.py [--runs 3] [--repeats 1] [--base /tmp/base-checkout] [--split 12] [--reuse 16]

CPU is counted in a cpuacct cgroup where the host has one (else the children's rusage, which misses bots a sandbox
kills). ``--reuse N`` also runs the current checkout with ``reuse: {matches: N}`` (bots kept up along the
schedule's lanes), interleaved, and prints ``reuse_ratio``: its matches per CPU second over reuse off.

``--split N`` also plays N matches of the same groups in this process (``arena.match.referee.play_match`` on the process
sandbox, as a worker does) and splits their CPU: this process's own (the referee's turns, the log, the launch and
kill of each bot) against its children's (bubblewrap and the bots, which the sandbox reaps). The runner can make
a match no cheaper than its own share.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from arena.match.matchview import view_log

ROOT = Path(__file__).resolve().parent.parent
BOTS = ("random", "greedy", "planner", "js-greedy")


def config_text(repeats: int, reuse: int | None = None) -> str:
    bots = ", ".join(str(ROOT / "sample_bots" / bot) for bot in BOTS)
    return (f"name: throughput\nbots: [{bots}]\nplayers: 3\nformat: round-robin\nrepeats: {repeats}\nseed: 7\n"
            "rules: {threshold: 50}\nlimits: {move_ms: 1000, bank_ms: 10000, memory_mb: 512}\nsandbox: process\n"
            "workers: 1\n" + ("" if reuse is None else f"reuse: {{matches: {reuse}}}\n"))


CPUACCT = Path("/sys/fs/cgroup/cpuacct")
"""Where a run's CPU is counted when the host has a cgroup v1 cpuacct hierarchy: every process the run starts,
whoever reaps it (a bot killed in its namespace is reaped by no ancestor of ours, so rusage misses it)."""


def counted(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Run ``command`` and return the CPU seconds of it and everything it started (cpuacct, else rusage)."""
    group = CPUACCT / f"arena-bench-{os.getpid()}" if (CPUACCT / "cpuacct.usage").exists() else None
    if group is not None:
        group.mkdir(exist_ok=True)
        command = ["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$@"', "run", *command]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if group is not None:
        deadline = time.monotonic() + 30
        while (group / "cgroup.procs").read_text().strip() and time.monotonic() < deadline:
            time.sleep(0.05)  # multiprocessing's resource tracker outlives the run by a moment: its CPU counts
        cpu = int((group / "cpuacct.usage").read_text()) / 1e9
        group.rmdir()
        return cpu, done
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done


def run_once(tree: Path, config: Path, work: Path) -> tuple[float, float, int]:
    """CPU seconds and wall seconds of one ``arena run`` of ``config`` with ``tree``'s arena, and its matches."""
    db = work / "arena.db"
    db.unlink(missing_ok=True)
    env = os.environ | {"PYTHONPATH": str(tree)}
    started = time.perf_counter()
    cpu, done = counted([sys.executable, "-m", "arena", "run", str(config), "--db", str(db), "--no-site",
                         "--workers", "1", "--json"], work, env)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"arena run failed under {tree} ({done.returncode}): {done.stderr[-2000:]}")
    report = json.loads(done.stdout)
    matches = int(report.get("played", report.get("matches", 0)) or 0)
    return cpu, wall, matches


def split(matches: int) -> dict[str, float]:
    """CPU per match of the runner itself and of its children (sandbox and bots), played in this process."""
    from arena.bots.manifest import load_bot
    from arena.game.rules import Rules
    from arena.match.referee import play_match
    from arena.sandbox import get_sandbox

    bots = {name: load_bot(ROOT / "sample_bots" / name) for name in BOTS}
    groups = list(itertools.combinations(BOTS, 3))
    rules = Rules.from_dict({"threshold": 50})
    sandbox = get_sandbox("process")

    def cpu(who: int) -> float:
        usage = resource.getrusage(who)
        return usage.ru_utime + usage.ru_stime

    with tempfile.TemporaryDirectory() as tmp:
        play_match([bots[name] for name in groups[0]], 10_000, sandbox, rules, log_path=Path(tmp) / "warm.jsonl.gz")
        own, children, turns = cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN), 0
        for index in range(matches):
            group = groups[index % len(groups)]
            result = play_match([bots[name] for name in group], index, sandbox, rules,
                                log_path=Path(tmp) / f"{index}.jsonl.gz")
            turns += result.turns
        own, children = cpu(resource.RUSAGE_SELF) - own, cpu(resource.RUSAGE_CHILDREN) - children
    sandbox.close()
    return {"matches": matches, "turns_per_match": round(turns / matches, 1),
            "runner_ms_per_match": round(1000 * own / matches, 1),
            "sandbox_and_bots_ms_per_match": round(1000 * children / matches, 1),
            "runner_share": round(own / (own + children), 3)}


def view_cpu_s(work: Path) -> tuple[float, int]:
    """CPU seconds of making the view of every log of the run just done in ``work``, as its worker did, and how
    many logs."""
    logs = sorted((work / "logs" / "throughput").glob("*.jsonl.gz"))
    started = time.process_time()
    for log in logs:
        view_log(log, 3)
    return time.process_time() - started, len(logs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=1, help="Deal seeds per combination (12 matches each).")
    parser.add_argument("--base", type=Path, help="Another checkout of arena to run the same way, interleaved.")
    parser.add_argument("--split", type=int, default=0, help="Matches to play in-process for the CPU split (0: none).")
    parser.add_argument("--reuse", type=int, default=0,
                        help="Also run the current checkout with reuse: {matches: N} (0: not), interleaved.")
    args = parser.parse_args()
    trees = {"current": ROOT} | ({} if args.base is None else {"base": args.base.resolve()})
    if args.reuse:
        trees["current_reuse"] = ROOT
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        work.chmod(0o755)  # the sandbox runs bots as users of their own
        config = work / "throughput.yaml"
        config.write_text(config_text(args.repeats))
        reused = work / "throughput-reuse.yaml"
        reused.write_text(config_text(args.repeats, args.reuse or None))
        runs: dict[str, list[tuple[float, float, int]]] = {name: [] for name in trees}
        views: list[tuple[float, int]] = []
        for _ in range(args.runs):
            for name, tree in trees.items():  # interleaved: a slow minute slows both
                runs[name].append(run_once(tree, reused if name == "current_reuse" else config, work))
                if name == "current":
                    views.append(view_cpu_s(work))
    report: dict[str, object] = {"python": platform.python_version(), "runs": args.runs,
                                 "matches_per_run": runs["current"][0][2], "goal_ratio": 2.0}
    for name, found in runs.items():
        report[name] = {
            "matches_per_cpu_s": round(statistics.median(m / cpu for cpu, _, m in found), 3),
            "cpu_s_per_match": round(statistics.median(cpu / m for cpu, _, m in found), 4),
            "wall_s_per_match": round(statistics.median(wall / m for _, wall, m in found), 4),
        }
    view_ms = statistics.median(1000 * cpu / max(1, logs) for cpu, logs in views)
    report["view_cpu_ms_per_match"] = round(view_ms, 2)
    current = report["current"]
    assert isinstance(current, dict)
    report["view_share"] = round(view_ms / (1000 * current["cpu_s_per_match"]), 4)
    if "base" in runs:
        current, base = report["current"], report["base"]
        assert isinstance(current, dict) and isinstance(base, dict)
        report["ratio"] = round(current["matches_per_cpu_s"] / base["matches_per_cpu_s"], 2)
    if "current_reuse" in runs:
        current, reuse = report["current"], report["current_reuse"]
        assert isinstance(current, dict) and isinstance(reuse, dict)
        report["reuse_ratio"] = round(reuse["matches_per_cpu_s"] / current["matches_per_cpu_s"], 2)
    if args.split:
        report["split"] = split(args.split)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
