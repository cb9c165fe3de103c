"""Benchmark: how long the ``arena`` command takes to start, for the commands people type all day.

Runs ``arena --help`` and ``arena standings`` (on a small store of real engine matches, with its 95% confidence
table) ``--runs`` times each as fresh processes and prints ONE JSON object: the CPU time (user + system of the
child, so the machine's load barely moves it) per run, median and best, and how many modules the command loaded.
``--base DIR`` times another checkout's ``arena`` package too, interleaved run by run (before and after).

    python bench/cli.py [--runs 20] [--base /tmp/base-checkout]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.sitestore import make_store

GOAL_CPU_S = 0.12
COMMANDS = {"help": ["--help"], "standings": ["standings", "t", "--db", "arena.db"]}
COUNT_MODULES = "import runpy, sys; sys.argv = ['arena', *sys.argv[1:]]; import atexit; " \
                "atexit.register(lambda: print(len(sys.modules), file=sys.stderr)); runpy.run_module('arena', " \
                "run_name='__main__')"


def cpu_of(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    """The child's CPU seconds (user + system), from its own resource usage."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def modules_of(arguments: list[str], cwd: Path, env: dict[str, str]) -> int:
    done = subprocess.run([sys.executable, "-c", COUNT_MODULES, *arguments], cwd=cwd, env=env,
                          capture_output=True, text=True, check=False)
    return int(done.stderr.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--base", type=Path, help="Another checkout of arena to time the same way, interleaved.")
    args = parser.parse_args()
    trees = {"current": ROOT} | ({} if args.base is None else {"base": args.base.resolve()})
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        make_store(work)  # arena.db with tournament "t": real matches, ratings and seat results
        envs = {name: os.environ | {"PYTHONPATH": str(tree)} for name, tree in trees.items()}
        times: dict[str, dict[str, list[float]]] = {name: {c: [] for c in COMMANDS} for name in trees}
        for _ in range(args.runs):
            for name in trees:  # interleaved: a slow minute slows both
                for command, arguments in COMMANDS.items():
                    times[name][command].append(cpu_of([sys.executable, "-m", "arena", *arguments], work,
                                                       envs[name]))
        report: dict[str, object] = {"python": platform.python_version(), "runs": args.runs, "goal_cpu_s": GOAL_CPU_S}
        for name in trees:
            report[name] = {
                command: {"cpu_s_median": round(statistics.median(values), 4), "cpu_s_best": round(min(values), 4),
                          "modules": modules_of(COMMANDS[command], work, envs[name])}
                for command, values in times[name].items()
            }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
