"""Soak of the league server (issue 44): does a real ``arena serve`` stay flat over many matches?

Starts ``arena serve`` on loopback (process sandbox, ``--workers`` match workers, the sample bots greedy, random and
planner as house bots plus authors' uploads through the HTTP API) and drives it for ``--minutes`` or ``--matches``:

* every ``--upload-every`` seconds an upload, in turn: a good bot (a new version of one of three authors' bots), a
  bot that crashes at hello, a build that fails, a bot that never answers hello (a time-out), a bot that floods
  stderr every turn (accepted: it plays, and its stderr is capped and trimmed), a second author's new version;
* between uploads, reads of the public pages (``/``, ``/api/standings``, ``/api/bots``, ``/api/league``) and an
  author's login at ``/me/login``, ``/me`` and logout;
* a match worker killed with -9 at a third of the run (``--no-kill`` leaves it out) and a restart of the server
  (SIGTERM, then ``arena serve`` again on the same store) at half of it (``--no-restart``): nothing accepted or
  played may be lost.

Every ``--sample-every`` matches it samples: the server's RSS, open descriptors and threads; the processes under the
server and the zombies among them that outlived the previous sample and 10 s (a bot that just exited is a zombie
until its match reaps it, a worker killed -9 until the pool replaces it); the store's, the match logs' and the site's bytes; the uid leases and cgroups held by the server's
processes; the p95 of ``/`` and ``/api/standings`` over the window; matches per minute. It prints ONE JSON object
with the series and, per server life (a restart starts a new one), each series' least-squares slope after a warm-up
(``--warmup``, the fraction of each life's samples left out) and whether it is flat: its fitted change over the life
is within a tolerance of its level (:data:`TOLERANCE`). The store, logs and site are not meant to be flat: their
slope is the bytes they grow by per match. ``--svg PATH`` writes a chart of the series (arena/site/svg.py's
line_chart, one panel per series). A measurement, not a test: tests/server/test_soak.py asserts on a short run.

    python bench/soak.py --minutes 40 --sample-every 10 --upload-every 15 --svg docs/soak.svg
    python bench/soak.py --matches 200 --sample-every 10
    python bench/soak.py --redraw soak.json --svg docs/soak.svg    # the chart again, from a run's JSON
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from markupsafe import escape

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from server import arena, free_port  # bench/server.py: this directory is first on sys.path
from server_dos import bytes_under

from arena import procfs
from arena.registry.client import pack
from arena.sandbox import cgroups
from arena.sandbox.uids import UID_LOCKS
from arena.site.common import downsample
from arena.site.rows import Series
from arena.site.svg import line_chart
from tests.support.server import Server as ServeProcess

SAMPLES = ROOT / "sample_bots"
HOUSE = ("greedy", "random", "planner")

TOLERANCE: dict[str, tuple[float, float]] = {
    "rss_mb": (8.0, 0.10),
    "fds": (4.0, 0.0),
    "threads": (2.0, 0.0),
    "host_processes": (1.0, 0.0),
    "zombies": (0.5, 0.0),
    "leases_extra": (2.0, 0.0),
    "cgroups_extra": (2.0, 0.0),
    "wal_mb": (16.0, 0.0),
    "p95_home_ms": (100.0, 1.0),
    "p95_standings_ms": (100.0, 1.0),
}
"""Per series, (absolute, relative to its median): it is flat when its fitted change over a server life is within
the larger of the two. A leak of one descriptor, thread, process, lease or cgroup per few matches exceeds them
within a few dozen matches; RSS may wander by allocator noise, and the latencies with the machine's load (flat
for them means not doubling)."""
GROWING = ("store_bytes", "log_bytes", "site_bytes")
ZOMBIE_GRACE_S = 10.0
"""A zombie is counted as left behind once it has outlived a window of matches and this long (see Sampler.sample)."""
"""Series that grow by design: their slope is the bytes per match (the store trims old stderr: keep_stderr)."""

CONFIG = """\
league:
  name: soak
  bots: ["registry:*", {house}]
  players: 3
  seed: 44
  rules: {{threshold: 50}}
  workers: {workers}
server:
  uploads_per_hour: 100000
  attempts_per_hour: 100000
  logins_per_hour: 100000
  login_attempts_per_hour: 100000
  upload_queue: 8
"""

GREEDY = (SAMPLES / "greedy" / "bot.py").read_text()
MAIN = 'if __name__ == "__main__":'


def good(n: int) -> str:
    """Greedy, changed by a comment: each upload a new version (an identical one is answered "unchanged")."""
    return f"{GREEDY}\n# version {n}\n"


def stderr_flood(n: int) -> str:
    """Greedy that writes 120 KB to stderr every turn: it plays, and what it writes is capped and trimmed."""
    noisy = ("class NoisyBot(GreedyBot):\n"
             "    def on_turn(self, message):\n"
             "        import sys\n"
             "        sys.stderr.write('noise ' * 20000 + '\\n')\n"
             "        sys.stderr.flush()\n"
             "        return super().on_turn(message)\n\n\n")
    return GREEDY.replace(MAIN, noisy + MAIN).replace("run(GreedyBot())", "run(NoisyBot())") + f"# version {n}\n"


CRASH_AT_HELLO = "import sys\nsys.exit(3)\n"
NEVER_READY = "import time\ntime.sleep(600)\n"


def bot_dir(where: Path, name: str, code: str, build: str | None = None) -> Path:
    directory = where / name
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    (directory / "bot.py").write_text(code)
    (directory / "bot.yaml").write_text(f"name: {name}\ncommand: python3 bot.py\n"
                                        + (f"build: {build}\n" if build else ""))
    return directory


class Server(ServeProcess):
    """One ``arena serve`` on loopback (tests/support/server.py's); ``start`` again after ``stop`` is the restart."""

    def __init__(self, root: Path, port: int) -> None:
        # A restart waits for the league's batch to stop and the pool's workers to go: more than a test's.
        super().__init__(root, root / "league.yaml", root / "results" / "arena.db", port, start_within=120,
                         stop_within=300)

    def league(self) -> dict[str, Any]:
        return dict(httpx.get(f"{self.url}/api/league", timeout=60).json())

    def done(self) -> int:
        return int(self.league()["matches"].get("done", 0))

    def bots(self) -> dict[str, int]:
        listing = httpx.get(f"{self.url}/api/bots", timeout=60).json()["bots"]
        return {bot["name"]: int(bot["latest"]) for bot in listing}


# -- what the server holds ---------------------------------------------------------------------------------------

def status_field(pid: int, name: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(name + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def uid_leases(pids: set[int]) -> int:
    """Uid lock files whose record says ``held PID`` by one of ``pids`` (the host's other runners are not ours)."""
    held = 0
    for lock in UID_LOCKS.glob("*"):
        try:
            words = lock.read_bytes().split()
        except OSError:
            continue
        held += len(words) == 2 and words[0] == b"held" and int(words[1]) in pids
    return held


def cgroup_dirs() -> set[Path]:
    layout = cgroups.detect()[0]
    if layout is None:
        return set()
    return {layout.memory} | ({layout.pids} if layout.pids is not None else set())


def cgroups_held(pids: set[int]) -> int:
    """The bot cgroups (one per controller directory) named as made by one of ``pids``."""
    dirs = cgroup_dirs()
    return sum(1 for directory in dirs for leaf in directory.glob("arena-*")
               if leaf.name.split(".", 1)[0].removeprefix("arena-").isdigit()
               and int(leaf.name.split(".", 1)[0].removeprefix("arena-")) in pids)


@dataclass
class Sampler:
    server: Server
    seen_zombies: dict[tuple[int, int], float] = field(default_factory=dict)
    """Each zombie under the server (pid, start time) and when a sample first saw it."""
    last_at: float = field(default_factory=time.monotonic)
    last_done: int = 0

    def sample(self, done: int, played: int, home_ms: list[float], standings_ms: list[float]) -> dict[str, Any]:
        pid = self.server.pid
        pids = procfs.descendants(pid)
        # A sandbox is a gate shell or bwrap that the server or a worker started (a session leader); everything
        # under it is the bot's. Each holds a uid lease and a cgroup per controller while it runs, so what is held
        # beyond the running sandboxes is what a leak would show (a launch or a kill in progress adds one for a
        # moment).
        stats = {p: info for p in pids if (info := procfs.stat(p)) is not None}
        sandboxes = [p for p, info in stats.items() if info.name in ("bwrap", "sh", "bash") and info.session == p
                     and info.running and not procfs.namespace_init(p)  # an init whose bwrap is gone: a kill
                     and getattr(stats.get(info.ppid), "name", "").startswith("python")]
        # The server's own processes: itself and its Python children (the match workers, multiprocessing's resource
        # tracker); everything else under it is a bot's.
        host = [pid, *(c for c in procfs.children(pid) if getattr(stats.get(c), "name", "").startswith("python"))]
        leases, held = uid_leases(set(pids)), cgroups_held(set(pids))
        zombies = {(z, info.start_time) for z in pids if (info := procfs.stat(z)) is not None and info.state == "Z"}
        now = time.monotonic()
        # Left behind: a zombie that outlived a whole window of matches and ZOMBIE_GRACE_S. A worker killed -9 is
        # one until the pool notices the lost batch and replaces it, which on a loaded machine can take longer than
        # a window of two matches; a zombie nobody reaps stays in every later sample.
        self.seen_zombies = {z: self.seen_zombies.get(z, now) for z in zombies}
        persistent = [z for z, first in self.seen_zombies.items() if first < self.last_at and now - first >= ZOMBIE_GRACE_S]
        rate = (done - self.last_done) / max(now - self.last_at, 1e-9) * 60
        self.last_at, self.last_done = now, done
        data = self.server.db.parent
        wal = self.server.db.with_name("arena.db-wal")
        store = sum(path.stat().st_size for path in (self.server.db, wal) if path.exists())
        return {
            "matches": played, "life": self.server.lives, "t_s": round(now, 1),
            "rss_mb": round(status_field(pid, "VmRSS") / 1024, 1),
            "fds": len(os.listdir(f"/proc/{pid}/fd")),
            "threads": status_field(pid, "Threads"),
            "processes": len(pids),
            "sandboxes": len(sandboxes),
            "host_processes": len(host),
            "zombies": len(persistent),
            "uid_leases": leases,
            "cgroups": held,
            "leases_extra": leases - len(sandboxes),
            "cgroups_extra": held - len(sandboxes) * len(cgroup_dirs()),
            "store_bytes": store,
            "wal_mb": round(wal.stat().st_size / 1e6 if wal.exists() else 0.0, 2),
            "log_bytes": bytes_under(data / "logs"),
            "site_bytes": bytes_under(data / "public"),
            "p95_home_ms": p95(home_ms),
            "p95_standings_ms": p95(standings_ms),
            "matches_per_min": round(rate, 2),
        }


def p95(values: list[float]) -> float:
    if len(values) < 2:
        return values[0] if values else 0.0
    return round(statistics.quantiles(values, n=20)[-1], 1)


# -- the load -----------------------------------------------------------------------------------------------------

class Reader(threading.Thread):
    """Public page reads and an author's login, in a loop; the latencies of ``/`` and ``/api/standings``."""

    def __init__(self, server: Server, token: str) -> None:
        super().__init__(daemon=True)
        self.server, self.token = server, token
        self.home: list[float] = []
        self.standings: list[float] = []
        self.logins = self.reads = self.errors = 0
        self.stopping = threading.Event()
        self.paused = threading.Event()

    def take(self) -> tuple[list[float], list[float]]:
        home, self.home = self.home, []
        standings, self.standings = self.standings, []
        return home, standings

    def run(self) -> None:
        while not self.stopping.is_set():
            if self.paused.is_set():
                time.sleep(0.2)
                continue
            try:
                with httpx.Client(base_url=self.server.url, timeout=60) as client:
                    for path, into in (("/", self.home), ("/api/standings", self.standings), ("/api/bots", None),
                                       ("/api/league", None)):
                        started = time.perf_counter()
                        client.get(path).raise_for_status()
                        if into is not None:
                            into.append((time.perf_counter() - started) * 1000)
                        self.reads += 1
                    form = client.get("/me/login").text
                    csrf = form.split('name="csrf" value="', 1)[1].split('"', 1)[0]
                    if client.post("/me/login", data={"csrf": csrf, "token": self.token}).status_code == 303:
                        page = client.get("/me").text
                        csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
                        client.post("/me/logout", data={"csrf": csrf})
                        self.logins += 1
            except (httpx.HTTPError, IndexError):
                self.errors += 1  # a restart in progress, or a refusal: counted, not fatal
            self.stopping.wait(0.5)


class Uploads(threading.Thread):
    """The upload cycle, every ``every`` seconds in a thread of its own (a check takes seconds, and the samples must
    not wait for it): each kind in turn, and the answers each got."""

    def __init__(self, root: Path, server: Server, tokens: dict[str, str], every: float) -> None:
        super().__init__(daemon=True)
        self.root, self.server, self.tokens, self.every = root, server, tokens, every
        self.n = self.accepted = 0
        self.answers: dict[str, dict[int, int]] = {}
        self.stopping = threading.Event()
        self.held = threading.Lock()
        """Held by an upload in flight, and by the restart: no upload is cut by it."""

    def run(self) -> None:
        while not self.stopping.wait(self.every):
            with self.held:
                self.next()

    def kinds(self) -> list[tuple[str, str, Callable[[], Path]]]:
        where, n = self.root / "uploads", self.n
        return [
            ("good", "ann", lambda: bot_dir(where, "ann-bot", good(n))),
            ("crash_at_hello", "bea", lambda: bot_dir(where, "bea-crash", CRASH_AT_HELLO)),
            ("build_fails", "bea", lambda: bot_dir(where, "bea-build", good(n),
                                                   build="sh -c 'echo cannot build >&2; exit 2'")),
            ("never_ready", "cid", lambda: bot_dir(where, "cid-slow", NEVER_READY)),
            ("stderr_flood", "cid", lambda: bot_dir(where, "cid-noisy", stderr_flood(n))),
            ("new_version", "bea", lambda: bot_dir(where, "bea-bot", good(n))),
        ]

    def next(self) -> None:
        kinds = self.kinds()
        kind, author, make = kinds[self.n % len(kinds)]
        self.n += 1
        try:
            reply = httpx.post(f"{self.server.url}/api/bots", content=pack(make()), timeout=300,
                               headers={"Authorization": f"Bearer {self.tokens[author]}"})
            code = reply.status_code
        except httpx.HTTPError:
            code = 0
        counts = self.answers.setdefault(kind, {})
        counts[code] = counts.get(code, 0) + 1
        self.accepted += code == 201


def kill_a_worker(server: Server) -> int | None:
    workers = [pid for pid in procfs.children(server.pid) if b"spawn_main" in procfs.command_line(pid)]
    if not workers:
        return None
    os.kill(workers[0], signal.SIGKILL)
    return workers[0]


# -- the fit ------------------------------------------------------------------------------------------------------

def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of y on x (0 for fewer than 2 distinct x)."""
    if len(points) < 2:
        return 0.0
    mx = statistics.fmean(x for x, _ in points)
    my = statistics.fmean(y for _, y in points)
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return 0.0 if sxx == 0 else sum((x - mx) * (y - my) for x, y in points) / sxx


def fit(samples: list[dict[str, Any]], warmup: float) -> dict[str, Any]:
    """Per server life, each series' slope per 1,000 matches after the warm-up and whether it is flat."""
    lives: dict[str, Any] = {}
    for life in sorted({s["life"] for s in samples}):
        mine = [s for s in samples if s["life"] == life]
        kept = mine[int(len(mine) * warmup):]
        if len(kept) < 3:
            continue
        span = kept[-1]["matches"] - kept[0]["matches"]
        series: dict[str, Any] = {}
        for key, (absolute, relative) in TOLERANCE.items():
            per = slope([(s["matches"], s[key]) for s in kept])
            level = statistics.median(s[key] for s in kept)
            change = per * span
            series[key] = {"per_1000": round(per * 1000, 3), "change": round(change, 3), "median": level,
                           "flat": abs(change) <= max(absolute, relative * abs(level))}
        for key in GROWING:
            series[key] = {"bytes_per_match": round(slope([(s["matches"], s[key]) for s in kept]), 1)}
        throughput = [s["matches_per_min"] for s in kept]
        series["matches_per_min"] = {"median": statistics.median(throughput),
                                     "first_half": statistics.median(throughput[: len(throughput) // 2] or [0]),
                                     "second_half": statistics.median(throughput[len(throughput) // 2:])}
        lives[str(life)] = {"samples": len(kept), "matches": [kept[0]["matches"], kept[-1]["matches"]],
                            "series": series}
    flat = all(v["flat"] for life in lives.values() for v in life["series"].values() if "flat" in v)
    return {"lives": lives, "flat": flat}


# -- the chart ----------------------------------------------------------------------------------------------------

CHART_STYLE = """
text { font: 11px sans-serif; fill: #333 } .title { font-weight: bold } .grid { stroke: #e4e4e4 }
.line { fill: none; stroke-width: 1.6 } .pt { fill: transparent } .dot { r: 2 }
.s0 .line { stroke: #1f6fb4 } .s0 .dot { fill: #1f6fb4 } .s1 .line { stroke: #d4622a } .s1 .dot { fill: #d4622a }
.band { fill: none; stroke: none }
"""

PANELS = (("rss_mb", "server RSS (MiB)"), ("fds", "open descriptors"), ("threads", "threads"),
          ("host_processes", "server and workers (processes)"), ("zombies", "zombies left"),
          ("leases_extra", "uid leases beyond running bots"), ("cgroups_extra", "cgroups beyond running bots"),
          ("wal_mb", "store's WAL (MB)"),
          ("store_bytes", "store (MB)"), ("log_bytes", "match logs (MB)"), ("site_bytes", "site (MB)"),
          ("p95_home_ms", "p95 of / (ms)"), ("p95_standings_ms", "p95 of /api/standings (ms)"),
          ("matches_per_min", "matches per minute"))


def chart(samples: list[dict[str, Any]], title: str) -> str:
    """One panel per series (x: matches played), three to a row, in one standalone SVG; at most 40 points a life
    (a point carries its value as a tooltip, and a 40-minute run's 160 samples made a 270 KB file)."""
    width, height, columns = 420, 230, 3
    rows = -(-len(PANELS) // columns)
    parts = [(f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width * columns} {height * rows + 30}" '
              f'width="{width * columns}" height="{height * rows + 30}"><style>{CHART_STYLE}</style>'),
             f'<text x="10" y="20" class="title">{escape(title)}</text>']
    for n, (key, label) in enumerate(PANELS):
        scale = 1e6 if key in GROWING else 1.0
        lines = [Series(f"life {life}", downsample([(s["matches"], s[key] / scale) for s in samples
                                                    if s["life"] == life], 40))
                 for life in sorted({s["life"] for s in samples})]
        if samples:  # an unpainted band from 0 to at least 1: every axis starts at 0, and a flat 0 is drawn as one
            top = max(1.0, *(y for line in lines for _, y in line.points))
            lines[0] = Series(lines[0].name, lines[0].points, ((samples[0]["matches"], 0.0, top),))
        svg = str(line_chart(lines, label, label, width=width, height=height))
        x, y = (n % columns) * width, (n // columns) * height + 30
        parts.append(svg.replace('<svg class="chart"', f'<svg x="{x}" y="{y}" width="{width}" height="{height}" '
                                 'class="chart"', 1))
    parts.append("</svg>")
    return "".join(parts)


def title(result: dict[str, Any]) -> str:
    told = "; ".join(f"{event['event']} after match {event['matches']}" for event in result["events"])
    return (f"arena serve soak: {result['matches']} matches in {result['seconds'] / 60:.0f} min, "
            f"{result['uploads']['sent']} uploads; {told} (a new colour: the restarted server)")


# -- the run ------------------------------------------------------------------------------------------------------

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="stop after this long (default 10)")
    parser.add_argument("--matches", type=int, default=0, help="stop after this many matches instead")
    parser.add_argument("--sample-every", type=int, default=20, help="matches between samples (default 20)")
    parser.add_argument("--upload-every", type=float, default=5.0, help="seconds between uploads (default 5)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--warmup", type=float, default=0.25, help="fraction of each life's samples left out")
    parser.add_argument("--no-kill", action="store_true", help="kill no match worker")
    parser.add_argument("--no-restart", action="store_true", help="do not restart the server midway")
    parser.add_argument("--svg", type=Path, help="write the chart here")
    parser.add_argument("--keep", type=Path, help="run in this directory and keep it (default: a temporary one)")
    parser.add_argument("--redraw", type=Path, help="only draw --svg from the JSON an earlier run printed")
    args = parser.parse_args()
    if args.redraw is not None:
        earlier = json.loads(args.redraw.read_text())
        args.svg.write_text(chart(earlier["samples"], title(earlier)))
        return

    root = Path(tempfile.mkdtemp(prefix="arena-soak-")) if args.keep is None else args.keep
    root.mkdir(parents=True, exist_ok=True)
    (root / "league.yaml").write_text(CONFIG.format(house=", ".join(str(SAMPLES / b) for b in HOUSE),
                                                    workers=args.workers))
    server = Server(root, free_port())
    (root / "results").mkdir(exist_ok=True)
    started = time.monotonic()
    server.start()
    tokens = {name: arena("author", "add", name, "--db", str(server.db)).strip() for name in ("ann", "bea", "cid")}
    reader = Reader(server, tokens["ann"])
    reader.start()
    uploads = Uploads(root, server, tokens, args.upload_every)
    uploads.start()
    sampler = Sampler(server)
    samples: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    base = server.done()  # a kept directory's earlier matches
    next_sample = args.sample_every
    killed, restarted = args.no_kill, args.no_restart

    def progress(played: int) -> float:
        if args.matches:
            return played / args.matches
        return (time.monotonic() - started) / (args.minutes * 60)

    try:
        while True:
            played = server.done() - base
            if progress(played) >= 1:
                break
            if played >= next_sample:
                home, standings = reader.take()
                with uploads.held:  # between uploads: a check in the server holds a dozen descriptors meanwhile
                    samples.append(sampler.sample(played + base, played, home, standings))
                next_sample = (played // args.sample_every + 1) * args.sample_every
            if not killed and progress(played) >= 1 / 3:
                killed = True
                events.append({"event": "worker killed -9", "pid": kill_a_worker(server), "matches": played})
            if not restarted and progress(played) >= 1 / 2:
                restarted = True
                reader.paused.set()
                with uploads.held:
                    bots_before, done_before = server.bots(), server.done()
                    server.stop()
                    server.start()
                reader.paused.clear()
                bots_after, done_after = server.bots(), server.done()
                # Nothing lost: every accepted version and every finished match is there after the restart.
                events.append({"event": "restart", "matches": played, "done_before": done_before,
                               "done_after": done_after, "lost_matches": max(0, done_before - done_after),
                               "lost_versions": sorted(k for k, v in bots_before.items() if bots_after.get(k, 0) < v)})
                sampler.seen_zombies = {}
            time.sleep(0.5)
    finally:
        reader.stopping.set()
        uploads.stopping.set()
        reader.join(timeout=120)
        uploads.join(timeout=300)
        if server.process is not None and server.process.poll() is None:
            server.stop()
    seconds = time.monotonic() - started
    played = samples[-1]["matches"] if samples else 0
    result = {
        "command": "python bench/soak.py " + " ".join(sys.argv[1:]),
        "seconds": round(seconds, 1), "matches": played, "workers": args.workers,
        "load_average": os.getloadavg(), "cores": os.cpu_count(),
        "uploads": {"sent": uploads.n, "accepted": uploads.accepted, "answers": uploads.answers},
        "reads": reader.reads, "logins": reader.logins, "read_errors": reader.errors,
        "events": events,
        "fit": fit(samples, args.warmup),
        "samples": samples,
    }
    if args.svg is not None:
        args.svg.write_text(chart(samples, title(result)))
    print(json.dumps(result, indent=1))
    if args.keep is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
