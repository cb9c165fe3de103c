"""Benchmark of the league server: concurrent uploads, API latency, and league throughput against ``arena run``.

Starts a real ``arena serve`` on loopback with a league of house bots (the sample bots), then:

1. **uploads**: N authors (default 20) each upload a bot at once, from N threads; every upload must be processed
   (201), and the wall time and the slowest upload are reported (each runs the admission check in the sandbox);
2. **latency**: sequential requests that do no check, while the league plays on every worker:
   ``GET /api/standings``, ``GET /``, ``GET /api/bots``, a ``POST /api/bots`` refused for a bad token (401) and
   an author's ``GET /api/me`` (never cached: it reads the store on every request), their p50, p95 and slowest in
   milliseconds, and how many league matches finished meanwhile (each one makes the public answers again). The
   store also holds ``--history`` finished matches of another tournament (synthetic, as bench/site.py makes
   them: a store that has served for a while), since what a request costs may grow with the store; then
   ``request_cpu_ms``: the CPU of the parts of a request, measured in this process on that store;
3. **throughput**: with no more uploads, how many league matches finish per second over ``--seconds``, compared
   with ``arena run`` of a tournament of the same bots, players, rules and workers, the two alternated
   ``--rounds`` times.

Prints ONE JSON object. This is a measurement, not a test: nothing here asserts on the numbers.

    python bench/server.py [--uploads 20] [--seconds 60] [--workers 2] [--history 10000] [--rounds 3]
    python bench/server.py --throughput-only
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_bots"
HOUSE = ("greedy", "random", "planner", "js-greedy")
RULES = "{threshold: 50}"


def arena(*args: str) -> str:
    return subprocess.run([sys.executable, "-m", "arena", *args], capture_output=True, text=True, check=True,
                          cwd=ROOT).stdout


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def timed(call: Any, count: int) -> dict[str, float]:
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return {"p50_ms": round(statistics.median(samples), 2), "p95_ms": round(percentile(samples, 0.95), 2),
            "max_ms": round(max(samples), 2)}


def bot_copy(where: Path, name: str) -> Path:
    directory = where / name
    shutil.copytree(SAMPLES / "random", directory, ignore=shutil.ignore_patterns("__pycache__"))
    manifest = directory / "bot.yaml"
    manifest.write_text(manifest.read_text().replace("name: random", f"name: {name}"))
    return directory


def league_done(url: str) -> int:
    return int(httpx.get(f"{url}/api/league", timeout=30).json()["matches"].get("done", 0))


def request_costs(db: Path, registry_dir: Path, league: str) -> dict[str, float]:
    """CPU milliseconds (this process's, so the machine's load does not enter) of what a public request did per
    request before arena/server/views.py (open the store, compute the standings, read every versions.json) and of
    what it does now when the answer is cached (ask the data version, stat the registry's indexes), on the
    store the server just used."""
    from arena.registry.versions import Registry
    from arena.server.views import Views
    from arena.stats.standings import standings
    from arena.store import Store

    def cpu_ms(call: Any, count: int = 30) -> float:
        started = time.process_time()
        for _ in range(count):
            call()
        return round((time.process_time() - started) / count * 1000, 3)

    store = Store(db, readonly=True)
    row = store.tournament(league)
    assert row is not None
    registry = Registry(registry_dir)
    views = Views(db, registry)
    try:
        return {"open_store": cpu_ms(lambda: Store(db, readonly=True).close()),
                "standings": cpu_ms(lambda: standings(store, row["id"])),
                "read_registry": cpu_ms(lambda: [registry.versions(name) for name in registry.names()]),
                "cached_answer": cpu_ms(lambda: views.cached("bots", (views.refresh(), views.registry_signature()),
                                                            lambda: b""), 300)}
    finally:
        views.close()
        store.close()


class Server:
    """``arena serve`` in a subprocess on a free loopback port."""

    def __init__(self, work: Path, config: Path, db: Path) -> None:
        self.url = f"http://127.0.0.1:{free_port()}"
        # The server has its own copy of the log's descriptor; ours is not needed once it has started.
        with open(work / f"serve-{config.stem}.log", "wb") as log:
            self.process = subprocess.Popen([sys.executable, "-m", "arena", "serve", str(config), "--port",
                                             self.url.rsplit(":", 1)[1], "--db", str(db)],
                                            stdout=log, stderr=log, cwd=work)
        for _ in range(300):
            try:
                httpx.get(f"{self.url}/api/league", timeout=2)
                return
            except httpx.TransportError:
                time.sleep(0.1)

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=120)


def throughput(work: Path, house: str, league: str, workers: int, seconds: float, rounds: int,
               repeats: int) -> dict[str, Any]:
    """The house bots alone, in a league and in a tournament, on the same workers, ``rounds`` times one after the
    other (league, run, league, run, ...): the load of a shared machine changes over minutes, and alternating
    lets both see the same. Each round's ratio, and the ratio of all league matches per second to all run
    matches per second. A run's rate includes its start (the pool, planning) and its end (rating): ``repeats``
    makes it long enough (about a minute) that these weigh little, as they weigh nothing in a league that runs
    for days."""
    house_config = work / "house.yaml"
    house_config.write_text(f"league: {{name: house, bots: [{house}], {league}}}\n")
    tournament = work / "run.yaml"
    tournament.write_text(f"name: run-bench\nbots: [{house}]\nplayers: 3\nrepeats: {repeats}\nseed: 1\n"
                          f"rules: {RULES}\n"
                          f"workers: {workers}\n")
    league_played = league_seconds = run_played = run_seconds = 0.0
    ratios = []
    load_before = os.getloadavg()[0]
    for _ in range(rounds):
        server = Server(work, house_config, work / "house" / "arena.db")  # the same league, resumed
        try:
            time.sleep(3)  # the pool's start-up, which a long-running league pays once
            before, started = league_done(server.url), time.perf_counter()
            time.sleep(seconds)
            played, took = league_done(server.url) - before, time.perf_counter() - started
        finally:
            server.stop()
        report = json.loads(arena("run", str(tournament), "--db", str(work / "run" / "arena.db"), "--no-site",
                                  "--fresh", "--json"))
        league_played, league_seconds = league_played + played, league_seconds + took
        run_played, run_seconds = run_played + report["played"], run_seconds + report["seconds"]
        ratios.append(round((played / took) / (report["played"] / report["seconds"]), 3))
    league_rate, run_rate = league_played / league_seconds, run_played / run_seconds
    return {"league": {"matches": int(league_played), "matches_per_s": round(league_rate, 3)},
            "arena_run": {"matches": int(run_played), "matches_per_s": round(run_rate, 3)},
            "league_vs_run_per_round": ratios, "league_vs_run": round(league_rate / run_rate, 3),
            "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--uploads", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=60.0, help="of league play in each throughput round")
    parser.add_argument("--run-repeats", type=int, default=18, help="of the arena run tournament (216 matches)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3, help="league and arena run phases, alternated")
    parser.add_argument("--throughput-only", action="store_true", help="skip the uploads and the latency")
    parser.add_argument("--history", type=int, default=10_000,
                        help="finished matches of another tournament in the store before the server starts")
    args = parser.parse_args()

    from arena.registry.client import pack

    work = Path(tempfile.mkdtemp(prefix="arena-bench-server-"))
    house = ", ".join(str(SAMPLES / name) for name in HOUSE)
    league = f"players: 3, seed: 1, rules: {RULES}, workers: {args.workers}"
    if args.throughput_only:
        result = {"python": platform.python_version(), "cpus": os.cpu_count(), "workers": args.workers,
                  **throughput(work, house, league, args.workers, args.seconds, args.rounds, args.run_repeats)}
        shutil.rmtree(work, ignore_errors=True)
        print(json.dumps(result, indent=2))
        return
    uploads_config = work / "uploads.yaml"
    uploads_config.write_text(f"league: {{name: uploads, bots: ['registry:*', {house}], {league}}}\n"
                              "server: {uploads_per_hour: 100}\n")
    db = work / "uploads" / "arena.db"
    if args.history:
        # bench/site.py's synthetic matches (loaded by path: "site" is also the standard library's module).
        spec = importlib.util.spec_from_file_location("bench_site", ROOT / "bench" / "site.py")
        assert spec is not None and spec.loader is not None
        bench_site = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(bench_site)
        fill = bench_site.fill

        from arena.store import Store

        db.parent.mkdir(parents=True)
        store = Store(db)
        fill(store, args.history, bots=8, players=3, seed=1)
        store.close()
    tokens = [arena("author", "add", f"author{i}", "--db", str(db)).strip() for i in range(args.uploads)]
    bodies = [pack(bot_copy(work / "bots", f"bot{i}")) for i in range(args.uploads)]
    result: dict[str, Any] = {"python": platform.python_version(), "cpus": os.cpu_count(), "workers": args.workers,
                              "history": args.history, "store_mb": round(db.stat().st_size / 2**20, 1)}

    server = Server(work, uploads_config, db)
    try:
        statuses: list[int] = [0] * args.uploads
        seconds: list[float] = [0.0] * args.uploads

        def upload(index: int) -> None:
            started = time.perf_counter()
            reply = httpx.post(f"{server.url}/api/bots", content=bodies[index], timeout=600,
                               headers={"Authorization": f"Bearer {tokens[index]}"})
            statuses[index] = reply.status_code
            seconds[index] = time.perf_counter() - started

        started = time.perf_counter()
        threads = [threading.Thread(target=upload, args=(i,)) for i in range(args.uploads)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        result["uploads"] = {"count": args.uploads, "stored": statuses.count(201),
                             "statuses": sorted(set(statuses)), "wall_s": round(time.perf_counter() - started, 2),
                             "slowest_s": round(max(seconds), 2)}
        # One client with keep-alive, as a browser or a script would: a new httpx client per request costs more
        # than the request (its SSL context alone).
        done_before = league_done(server.url)
        with httpx.Client(base_url=server.url) as client:
            result["latency"] = {
                "GET /api/standings": timed(lambda: client.get("/api/standings"), args.requests),
                "GET /": timed(lambda: client.get("/"), args.requests),
                "GET /api/bots": timed(lambda: client.get("/api/bots"), args.requests),
                # A token that is not valid: the server must look at the authors to refuse it.
                "POST /api/bots 401": timed(lambda: client.post("/api/bots", content=b"x", headers={
                    "Authorization": "Bearer not-a-valid-token"}), args.requests),
                "GET /api/me": timed(lambda: client.get("/api/me", headers={"Authorization": f"Bearer {tokens[0]}"}),
                                     args.requests),
            }
            result["latency"]["league_matches_meanwhile"] = league_done(server.url) - done_before
    finally:
        server.stop()
    result["request_cpu_ms"] = request_costs(db, work / "uploads" / "bots", "uploads")

    result.update(throughput(work, house, league, args.workers, args.seconds, args.rounds, args.run_repeats))
    shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
