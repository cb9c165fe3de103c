"""A big field's full site build, alone or alternated with another checkout's: wall and CPU, the building process
and its workers apart (the building process is what the workers cannot share).

The store is :mod:`bench.scale`'s synthetic one (``--bots`` bots, about ``--per-bot`` matches each, seed 1, no
logs), made once. Each run builds the whole site into a new directory with ``--workers`` processes, after the
previous run's site is removed and the disk synced (removing a hundred thousand files leaves the file system
busy for a while). With ``--drop-caches`` (root only), the kernel's caches are dropped too before each run: on
this VM, the inodes and directory entries of the sites removed (700 MB after a few runs) made the workers' system
time grow from 3 to 30 s, a run's speed depending on the runs before it. With ``--base PYTHON`` (the interpreter of another checkout's environment, arena installed
there), the runs alternate between it and this one: on a shared machine whose speed drifts, only alternated runs
compare. Prints ONE JSON object.

    python bench/site_build.py                                  # 1,000 bots, 100,000 matches, 2 runs
    python bench/site_build.py --base ../old/.venv/bin/python --runs 2
    python bench/site_build.py --drop-caches --runs 3

This is a measurement, not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def build_once(store_path: Path, out: Path, workers: int) -> dict[str, Any]:
    """One full build of the store's site into ``out`` (in this process: what ``--one`` runs)."""
    try:
        from arena.site.build import build_site
    except ImportError:  # a checkout from before issue 37 cut arena/site/data.py and render.py by job
        from arena.site.render import build_site
    from arena.store import Store

    store = Store(store_path)
    started = time.perf_counter()
    report = build_site(store, out, workers=workers, full=True)
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"wall_s": round(time.perf_counter() - started, 1), "files": report.pages,
            "building_process_cpu_s": round(own.ru_utime + own.ru_stime, 1),
            "workers_cpu_s": round(children.ru_utime + children.ru_stime, 1)}


def run(python: str, store_path: Path, root: Path, workers: int, drop_caches: bool) -> dict[str, Any]:
    for old in root.glob("site-*"):
        shutil.rmtree(old, ignore_errors=True)
    subprocess.run(["sync"], check=False)
    if drop_caches:
        Path("/proc/sys/vm/drop_caches").write_text("3\n", encoding="ascii")
    time.sleep(5)
    out = Path(tempfile.mkdtemp(prefix="site-", dir=root)) / "out"
    done = subprocess.run([python, __file__, "--one", str(store_path), str(out), str(workers)], check=True,
                          capture_output=True, text=True, cwd=root)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bots", type=int, default=1000)
    parser.add_argument("--per-bot", type=int, default=400)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--base", help="Another checkout's Python, its runs alternated with this one's.")
    parser.add_argument("--drop-caches", action="store_true",
                        help="Drop the kernel's page, inode and directory caches before each run (root only).")
    parser.add_argument("--one", nargs=3, metavar=("STORE", "OUT", "WORKERS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(build_once(Path(args.one[0]), Path(args.one[1]), int(args.one[2]))))
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from scale import fill

    with tempfile.TemporaryDirectory(prefix="arena-site-build-") as directory:
        root = Path(directory)
        fill(root / "store.db", args.bots, args.per_bot, 1)
        results: dict[str, list[dict[str, Any]]] = {"this": [], "base": []}
        for _ in range(args.runs):
            if args.base:
                results["base"].append(run(args.base, root / "store.db", root, args.workers, args.drop_caches))
            results["this"].append(run(sys.executable, root / "store.db", root, args.workers, args.drop_caches))
    print(json.dumps({"bots": args.bots, "per_bot": args.per_bot, "workers": args.workers,
                      "drop_caches": args.drop_caches,
                      **{name: runs for name, runs in results.items() if runs}}, indent=1))


if __name__ == "__main__":
    main()
