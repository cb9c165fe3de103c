"""What private views cost (arena/sandbox/views.py): per launch, per bot version, once per host, and in memory.

* ``view_ms``: mounting a sandbox's two images on new loop devices and unmounting them (median of ``--mounts``);
* ``bot_image_ms``: building one bot version's image (sample_bots/greedy and protocol/; median of 5);
* ``runtime_image_mb``: the runtime image's size, which the tmpfs holds in memory, and ``runtime_key_ms``: the walk
  of the runtime's directories that names it (once per runner); ``--build-runtime`` removes it and times building it
  again (``runtime_build_s``: once per host and state of /usr);
* ``first_answer_ms``: a Python bot's launch to its first answer, with and without private views (medians of
  ``--launches`` each, taken in turns): a view starts every bot on a cold cache;
* ``page_cache_mb``: the file pages charged to that bot's memory cgroup once it answered (its own page cache under
  a view; the host's shared one, charged to whoever read it first, without);
* ``--demo RUNS``: the demo tournament (tournaments/demo.yaml, 48 matches, 2 workers), ``RUNS`` times with and
  without private views in turns: ``demo_s``, the median wall seconds of each.

    python bench/private_views.py [--mounts 50] [--launches 10] [--build-runtime] [--demo RUNS]

Root only (mounts). docs/PERFORMANCE.md and docs/SECURITY.md quote it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[0] = str(ROOT)  # not bench/, whose docker.py would shadow the docker SDK

from arena.bots.manifest import load_bot
from arena.sandbox import SandboxLimits, views
from arena.sandbox.common import PROTOCOL_LIB
from arena.sandbox.process import ProcessBot, ProcessSandbox
from tests.channels import write_probe_bot
from tests.support.probe import ask


def file_pages_mb(process: ProcessBot) -> float | None:
    """The ``file`` bytes of the bot's memory cgroup (page cache charged to it), in MiB."""
    if process.cgroup is None:
        return None
    text = (process.cgroup.dirs[0] / "memory.stat").read_text()
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key in ("file", "cache"):  # v2, v1
            return round(int(value) / (1 << 20), 1)
    return None


def first_answer(sandbox: ProcessSandbox, directory: Path) -> tuple[float, float | None]:
    bot = load_bot(directory)
    start = time.perf_counter()
    process = sandbox.launch(bot, SandboxLimits(memory_mb=256))
    try:
        ask(process, {"do": "probe"})
        spent = time.perf_counter() - start
        assert isinstance(process, ProcessBot)
        return spent * 1000, file_pages_mb(process)
    finally:
        process.kill()


def demo(runs: int) -> dict[str, float]:
    """Median wall seconds of the demo tournament with private views and without (``views.status`` says no, as on a
    host without erofs), in turns, each in a fresh store."""
    from arena.run.config import load_config
    from arena.run.tournament import run_tournament
    from arena.store import Store

    config = load_config(ROOT / "tournaments" / "demo.yaml")
    able = views.status()
    seconds: dict[str, list[float]] = {"views": [], "shared": []}
    with tempfile.TemporaryDirectory(prefix="arena-views-demo-") as scratch:
        for run in range(runs):
            for key in ("views", "shared"):
                views.status = (lambda: able) if key == "views" else (lambda: (False, "off for the bench"))  # type: ignore[assignment]
                start = time.perf_counter()
                run_tournament(config, Store(Path(scratch) / f"{key}-{run}.db"), workers=2)
                seconds[key].append(time.perf_counter() - start)
    views.status = lambda: able  # type: ignore[assignment]
    return {key: round(statistics.median(values), 2) for key, values in seconds.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mounts", type=int, default=50)
    parser.add_argument("--launches", type=int, default=10)
    parser.add_argument("--build-runtime", action="store_true", help="also time a build of the runtime image")
    parser.add_argument("--demo", type=int, default=0, metavar="RUNS", help="also time the demo tournament")
    args = parser.parse_args()
    ok, reason = views.status()
    if not ok:
        sys.exit(f"private views are not available here: {reason}")
    out: dict[str, object] = {}
    start = time.perf_counter()
    name = views._identity(views.runtime_parts())
    out["runtime_key_ms"] = round((time.perf_counter() - start) * 1000)
    runtime = views.runtime_image()
    out["runtime_image"] = name
    out["runtime_image_mb"] = round(runtime.stat().st_size / (1 << 20))
    greedy = ROOT / "sample_bots" / "greedy"
    builds = []
    for index in range(5):
        target = views.IMAGES / f"bench-{os.getpid()}-{index}.erofs"
        start = time.perf_counter()
        views.build_image(target, (views.Part(str(greedy), "bot"), views.Part(str(PROTOCOL_LIB), "protocol")))
        builds.append((time.perf_counter() - start) * 1000)
        target.unlink()
    out["bot_image_ms"] = round(statistics.median(builds), 1)
    probe = write_probe_bot(Path(tempfile.mkdtemp(prefix="arena-views-bench-")) / "probe")
    bot = load_bot(probe)
    image = views.bot_image(bot.directory, bot.files_hash)
    out["bot_image_kb"] = round(image.stat().st_size / 1024)
    mounts = []
    for _ in range(args.mounts):
        start = time.perf_counter()
        views.View(runtime, image).close()
        mounts.append((time.perf_counter() - start) * 1000)
    out["view_ms"] = round(statistics.median(mounts), 2)
    out["view_ms_p90"] = round(sorted(mounts)[int(0.9 * len(mounts))], 2)
    with_views, without = ProcessSandbox(isolate=True, private_views=True), ProcessSandbox(isolate=True,
                                                                                           private_views=False)
    answers: dict[str, list[float]] = {"views": [], "shared": []}
    pages: dict[str, list[float]] = {"views": [], "shared": []}
    for _ in range(args.launches):
        for key, sandbox in (("views", with_views), ("shared", without)):
            spent, cached = first_answer(sandbox, probe)
            answers[key].append(spent)
            if cached is not None:
                pages[key].append(cached)
    out["first_answer_ms"] = {key: round(statistics.median(values)) for key, values in answers.items()}
    out["page_cache_mb"] = {key: round(statistics.median(values), 1) if values else None for key, values in pages.items()}
    if args.build_runtime:
        # Built again in place (the old one is removed first; sandboxes that have it mounted keep reading it): a
        # second copy beside it would hold the runtime's size in memory twice.
        runtime.unlink()
        start = time.perf_counter()
        views.runtime_image()
        out["runtime_build_s"] = round(time.perf_counter() - start, 1)
    if args.demo:
        out["demo_s"] = demo(args.demo)
    out["launches"], out["mounts"] = args.launches, args.mounts
    print(json.dumps(out))


if __name__ == "__main__":
    main()
