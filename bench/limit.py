"""Benchmark: how close ``arena run`` comes to the bots' own cost, CPU per match against the same matches in-process.

The tournament: the three Python sample bots (random, greedy, planner), 3 seats, duplicate deals, ``--repeats``
deals (3 matches each). In-process, every scheduled match is played by ``arena.match.local.play_local`` between
the bots' own classes, loaded from their files in this process (no pipes, no sandbox, no runner: what the bots
themselves cost; the objects are new for every match, the modules loaded once a run, so module-level caches such
as the planner's look-ahead tables are built once a run and shared by its matches, as in one long-lived process). Through ``arena run`` (one worker, the process sandbox, logs
on), with ``reuse`` on and off, the CPU of the runner and all it started (a cpuacct cgroup where the host has one,
else the children's rusage, which misses what a sandbox kills) is counted twice: for
the whole run, and at the margin (the difference between runs of ``--repeats`` and ``2 * --repeats`` deals, divided
by the matches added), which leaves out ``arena run``'s own start-up and end; ``start_cpu_s_*`` is that fixed part,
the bigger run's CPU less its matches at the margin: ``arena run``'s start and end, and with reuse the start of
each lane's process (interpreters, sandboxes, the planner's tables), while both runs have as many chains (up to
``--repeats`` = ``--reuse``); with more deals than ``--reuse`` each block of ``--reuse`` deals starts its own, and
the margin pays for them. Runs alternate, ``--runs`` times each. The tree's bytecode is
compiled first, as an installed arena's is: with PYTHONDONTWRITEBYTECODE set (CI sets it) and no bytecode in the tree,
every ``arena run`` and every bot compiles each of arena's modules it imports (0.14 CPU s more for a run of one
deal, 1.50 against 1.36 s, alternated).
Prints ONE JSON object: ``ratio_*`` are CPU per match through ``arena run`` over in-process.

    python bench/limit.py [--runs 2] [--repeats 8] [--reuse 16] [--no-fresh] [--split]

``--repeats`` sets the size: 8 is a 24- and 48-match pair of runs, where the fixed part weighs; 50 (150 and 300
matches) is closer to a tournament an organiser runs. ``--no-fresh`` leaves out the runs without reuse (at 50 they
take some minutes). ``--split`` adds ``split_reuse``: the CPU of the runs with reuse by kind of process, for each
size and the fixed part (twice the smaller run's less the bigger's), from ``--runs`` more runs of each (see
:func:`by_process`).

The goal (issue 41): ``ratio_marginal_reuse`` <= 1.5 on a quiet machine.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.throughput import CPUACCT, counted  # the CPU of a run and all it started: one way for both benches

BOTS = {"random": "RandomBot", "greedy": "GreedyBot", "planner": "PlannerBot"}
SEED = 7
RULES = {"threshold": 50}


def config_text(repeats: int, reuse: int | None) -> str:
    bots = ", ".join(str(ROOT / "sample_bots" / bot) for bot in BOTS)
    return (f"name: limit\nbots: [{bots}]\nplayers: 3\nrepeats: {repeats}\nseed: {SEED}\n"
            f"rules: {json.dumps(RULES)}\nsandbox: process\nworkers: 1\n"
            f"reuse: {'false' if reuse is None else json.dumps({'matches': reuse})}\n")


def arena_run(work: Path, repeats: int, reuse: int | None) -> tuple[float, int]:
    """CPU seconds of one ``arena run`` (it and everything it started) and how many matches it played."""
    config = work / f"limit-{repeats}-{reuse}.yaml"
    config.write_text(config_text(repeats, reuse))
    db = work / f"limit-{repeats}-{reuse}.db"
    db.unlink(missing_ok=True)
    cpu, done = counted([sys.executable, "-m", "arena", "run", str(config), "--db", str(db), "--no-site",
                         "--workers", "1", "--json"], work, os.environ | {"PYTHONPATH": str(ROOT)})
    if done.returncode != 0:
        raise SystemExit(f"arena run failed ({done.returncode}): {done.stderr[-2000:]}")
    return cpu, int(json.loads(done.stdout)["played"])


def kind_of(argv: str) -> str:
    """Which kind of process a command line is (see :func:`by_process`)."""
    words = argv.split()
    if "multiprocessing.spawn" in argv:
        return "pool worker"
    if "resource_tracker" in argv:
        return "resource tracker"
    if words and Path(words[0]).name.startswith("python") and "bot.py" in words[1:]:
        return "bots"
    return "sandboxes and the rest"


def by_process(command: list[str], cwd: Path, env: dict[str, str]) -> dict[str, float]:
    """CPU seconds of ``command`` and all it started, by kind: the runner (the process started), its pool workers,
    multiprocessing's resource tracker, the bots' interpreters, and the rest: the sandboxes' processes (most live a
    few ms) and what the others spent in their last 5 ms. Each process's CPU is read from /proc every 5 ms while it
    lives (its kind from its latest command line), the total from a cpuacct cgroup."""
    group = CPUACCT / f"arena-limit-{os.getpid()}"
    group.mkdir()
    started = subprocess.Popen(["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$@"', "run", *command],
                               cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen: dict[int, tuple[str, float]] = {}
    tick = os.sysconf("SC_CLK_TCK")
    while started.poll() is None or (group / "cgroup.procs").read_text().split():
        for pid in map(int, (group / "cgroup.procs").read_text().split()):
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue  # it ended meanwhile
            fields = stat[stat.rindex(")") + 2:].split()
            seen[pid] = (argv or seen.get(pid, ("", 0.0))[0], (int(fields[11]) + int(fields[12])) / tick)
        time.sleep(0.005)
    total = int((group / "cpuacct.usage").read_text()) / 1e9
    group.rmdir()
    if started.returncode != 0:
        raise SystemExit(f"arena run failed ({started.returncode}) while split by process")
    split = dict.fromkeys(("runner", "pool worker", "resource tracker", "bots"), 0.0)
    for pid, (argv, cpu) in seen.items():
        kind = "runner" if pid == started.pid else kind_of(argv)
        if kind in split:
            split[kind] += cpu
    return split | {"sandboxes and the rest": total - sum(split.values())}


def split_runs(work: Path, repeats: int, reuse: int, runs: int) -> dict[str, dict[str, float]]:
    """Each kind's median CPU in runs of ``repeats`` and ``2 * repeats`` deals, and its fixed part."""
    sizes: dict[int, list[dict[str, float]]] = {repeats: [], 2 * repeats: []}
    for _ in range(runs):
        for size, found in sizes.items():
            config = work / f"split-{size}.yaml"
            config.write_text(config_text(size, reuse))
            db = work / f"split-{size}.db"
            db.unlink(missing_ok=True)
            found.append(by_process([sys.executable, "-m", "arena", "run", str(config), "--db", str(db), "--no-site",
                                     "--workers", "1", "--json"], work, os.environ | {"PYTHONPATH": str(ROOT)}))
    report = {}
    for kind in sizes[repeats][0]:
        small, big = (statistics.median(run[kind] for run in found) for found in sizes.values())
        report[kind] = {"small": round(small, 2), "big": round(big, 2), "fixed": round(2 * small - big, 2)}
    return report


def load_class(name: str) -> Any:
    protocol = str(ROOT / "protocol")
    if protocol not in sys.path:
        sys.path.insert(0, protocol)
    spec = importlib.util.spec_from_file_location(f"limit_bot_{name}", ROOT / "sample_bots" / name / "bot.py")
    assert spec is not None and spec.loader is not None
    module: ModuleType = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while it runs
    spec.loader.exec_module(module)
    return getattr(module, BOTS[name])


def in_process(repeats: int) -> tuple[float, int]:
    """CPU seconds of the same tournament's matches played in this process, and how many."""
    from arena.game.rules import Rules
    from arena.match.local import play_local
    from arena.schedule import make_schedule

    classes = [load_class(name) for name in BOTS]
    names = list(BOTS)
    schedule = make_schedule(len(names), 3, repeats, SEED)
    rules = Rules.from_dict(RULES)
    started = time.process_time()
    for match in schedule:
        play_local([classes[bot]() for bot in match.bots], match.seed, rules, names=[names[b] for b in match.bots])
    return time.process_time() - started, len(schedule)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=8, help="Deals of the smaller run (3 matches each).")
    parser.add_argument("--reuse", type=int, default=16, help="reuse.matches of the runs with reuse on.")
    parser.add_argument("--no-fresh", action="store_true", help="Only the runs with reuse on.")
    parser.add_argument("--split", action="store_true", help="Also split the runs with reuse by kind of process.")
    args = parser.parse_args()
    for tree in ("arena", "protocol", "sample_bots"):  # as tests/conftest.py does, and a wheel install
        compileall.compile_dir(ROOT / tree, quiet=2, workers=1)
    in_process(1)  # arena's modules imported first; each run loads the bots afresh and builds the planner's tables once
    local = [in_process(2 * args.repeats) for _ in range(args.runs)]
    local_ms = statistics.median(1000 * cpu / n for cpu, n in local)
    report: dict[str, Any] = {"python": platform.python_version(), "load": os.getloadavg()[0], "runs": args.runs,
                              "in_process_ms_per_match": round(local_ms, 1)}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        work.chmod(0o755)  # the sandbox runs bots as users of their own
        for label, reuse in (("reuse", args.reuse), ("fresh", None))[:1 if args.no_fresh else 2]:
            whole, marginal = [], []
            for _ in range(args.runs):
                small_cpu, small_n = arena_run(work, args.repeats, reuse)
                big_cpu, big_n = arena_run(work, 2 * args.repeats, reuse)
                whole.append(1000 * big_cpu / big_n)
                marginal.append(1000 * (big_cpu - small_cpu) / (big_n - small_n))
            report[f"arena_run_ms_per_match_{label}"] = round(statistics.median(whole), 1)
            report[f"marginal_ms_per_match_{label}"] = round(statistics.median(marginal), 1)
            report[f"ratio_whole_{label}"] = round(statistics.median(whole) / local_ms, 2)
            report[f"ratio_marginal_{label}"] = round(statistics.median(marginal) / local_ms, 2)
            report[f"start_cpu_s_{label}"] = round(6 * args.repeats * (statistics.median(whole)
                                                                       - statistics.median(marginal)) / 1000, 2)
        if args.split:
            report["split_reuse"] = split_runs(work, args.repeats, args.reuse, args.runs)
    report["matches"] = {"small": 3 * args.repeats, "big": 6 * args.repeats}
    report["reuse_matches"] = args.reuse
    report["load_after"] = os.getloadavg()[0]
    print(json.dumps(report))


if __name__ == "__main__":
    main()
