"""How long a compiled bot's build and whole admission check take: each compiled template (``arena new-bot
--language c|cpp|java``) scaffolded once and checked ``--repeats`` times with :func:`arena.registry.check.check_bot` in the
process sandbox. Prints ONE JSON object: per language the median wall seconds of the build step and of the whole
check, and the CPU seconds (this process and its children) per check, with the load average before and after.

    python bench/build.py --repeats 5

This is a measurement, not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena.bots.scaffold import scaffold
from arena.registry.check import check_bot
from arena.sandbox.process import ProcessSandbox

LANGUAGES = ("c", "cpp", "java")


def cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    load_before = os.getloadavg()
    results: dict[str, dict[str, float | bool]] = {}
    sandbox = ProcessSandbox()
    try:
        with tempfile.TemporaryDirectory(prefix="arena-bench-build-") as scratch:
            for language in LANGUAGES:
                bot = scaffold(f"bench-{language}", language, Path(scratch) / language)
                builds, checks, cpus, fit = [], [], [], True
                for _ in range(args.repeats):
                    cpu, started = cpu_seconds(), time.monotonic()
                    report = check_bot(bot, sandbox)
                    checks.append(time.monotonic() - started)
                    cpus.append(cpu_seconds() - cpu)
                    fit = fit and report.fit
                    step = next(step for step in report.steps if step.name == "build")
                    builds.append(float(step.got.split()[2]))  # "built in 0.7 s"
                results[language] = {"fit": fit, "build_s": round(statistics.median(builds), 2),
                                     "check_s": round(statistics.median(checks), 2),
                                     "check_cpu_s": round(statistics.median(cpus), 2)}
    finally:
        sandbox.close()
    print(json.dumps({"repeats": args.repeats, "cpus": os.cpu_count(), "load_before": load_before,
                      "load_after": os.getloadavg(), "languages": results}))


if __name__ == "__main__":
    main()
