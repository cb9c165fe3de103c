"""The edit-test loop's cost: the fast profile (``python -m pytest -q -m "not slow"``, on every core as
pyproject.toml's addopts say) run as the README says, timed in wall seconds and in CPU seconds (user + system of
pytest, its workers and every process they waited for: bots, sandboxes, ``arena`` subprocesses). Prints ONE JSON
object.

    python bench/fastprofile.py [--runs 2] [-- EXTRA PYTEST ARGS]

On a machine shared with other work the wall time says little; the CPU seconds divided by the cores is what the
profile would take on a quiet machine of that many cores. ``bytecode_cache`` says whether Python may write .pyc files
(``PYTHONDONTWRITEBYTECODE`` unset): without them every run compiles the test modules, pytest rewrites their
asserts (and those of its plugins' packages) again, and every ``arena`` subprocess compiles what it imports. This
is a measurement, not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_once(extra: list[str]) -> dict[str, object]:
    command = [sys.executable, "-m", "pytest", "-q", "-m", "not slow", "-p", "no:cacheprovider", *extra]
    load_before = os.getloadavg()[0]
    before = os.times()
    start = time.monotonic()
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output, _ = process.communicate()
    wall = time.monotonic() - start
    # communicate() reaped the child: its times (and those of everything it waited for) are in our children's
    after = os.times()
    cpu = after.children_user + after.children_system - before.children_user - before.children_system
    summary = next((line for line in reversed(output.splitlines()) if re.search(r"\d+ (passed|failed)", line)), "")
    counts = {kind: int(number) for number, kind in re.findall(r"(\d+) (passed|failed|skipped|errors?|xfailed)",
                                                                summary)}
    return {"exit_code": process.returncode, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
            "counts": counts, "load_before": round(load_before, 1), "load_after": round(os.getloadavg()[0], 1),
            "summary": summary.strip("= ")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("pytest_args", nargs="*", help="after --: more pytest arguments")
    args = parser.parse_args()
    runs = [run_once(args.pytest_args) for _ in range(args.runs)]
    print(json.dumps({"command": shlex.join(["python", "-m", "pytest", "-q", "-m", "not slow", *args.pytest_args]),
                      "cores": os.cpu_count(),
                      "bytecode_cache": not os.environ.get("PYTHONDONTWRITEBYTECODE"), "runs": runs}, indent=2))


if __name__ == "__main__":
    main()
