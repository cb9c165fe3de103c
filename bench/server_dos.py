"""Benchmark of the league server under the denial-of-service attacks of the 2026-12 review, each run against a real
``arena serve`` on loopback while a probe measures what other clients get.

For each attack, the probe sends ``GET /`` and ``GET /api/standings`` one after the other from its own connections
(a new connection per request, as a new visitor would) for the attack's duration, and reports their p50, p95 and
slowest latency in milliseconds and how many failed. The attacks:

- ``alias_bomb``: an author uploads a ~400-byte ``bot.yaml`` of nested YAML aliases (depth 8: 10**8 leaves once
  expanded); reported: the status, the answer's size and time;
- ``slowloris``: ``--connections`` (default 1,100) connections that send nothing, or half a header block, or half
  a body, held for the attack; the server runs with a descriptor limit of 1,024 (systemd's default);
  reported: the server's open descriptors and its log's growth;
- ``form_hold``: 20 connections post ``/upload`` with a forged CSRF pair and a bad token and then hold the rest of a
  5 MiB archive; reported: when each got its answer, and the bytes of scratch the server kept;
- ``upload_flood``: one author keeps 40 uploads of a bot whose build sleeps and fails in flight, other authors
  add theirs; reported: the answers by status;
- ``deep_build``: a build that leaves 1,100 nested directories, and a tar of 40,000 empty directories.

The helpers (:class:`Probe`, :func:`start_server`, the attacks) are what tests/server/test_server_dos.py runs too.
Prints ONE JSON object; nothing here asserts on the numbers.

    python bench/server_dos.py [--seconds 14] [--connections 1100]
"""

from __future__ import annotations

import argparse
import http.client
import io
import json
import os
import platform
import resource
import socket
import statistics
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: the repository's tests package

from tests.support.server import SAMPLES, Server, free_port

CONFIG = """\
league:
  name: dos
  bots: ["registry:*", {greedy}, {random}]
  players: 2
  seed: 5
  rules: {{threshold: 30}}
  workers: 1
server:
  uploads_per_hour: 5
  max_upload_kb: 5120
  build_seconds: 20
{extra}"""


@contextmanager
def start_server(root: Path, extra: str = "", open_files: int | None = None) -> Iterator[Server]:
    """A league server with the config above (plus ``extra`` lines under ``server:``), with at most
    ``open_files`` descriptors; stopped afterwards."""
    root.mkdir(parents=True, exist_ok=True)
    config = root / "league.yaml"
    config.write_text(CONFIG.format(greedy=SAMPLES / "greedy", random=SAMPLES / "random", extra=extra))
    server = Server(root, config, root / "results" / "arena.db", free_port(), open_files=open_files,
                    start_within=60)
    with server.running():
        yield server


class InThread:
    """A loop (:meth:`_run`, until ``_stop`` is set) in a daemon thread between a ``with``'s start and end."""

    _stop: threading.Event
    _thread: threading.Thread | None
    join_s = 60.0

    def _run(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join(timeout=self.join_s)


@dataclass
class Probe(InThread):
    """Sends GET / and GET /api/standings in turn, each on a new connection, from a thread, until stopped."""

    host: str
    port: int
    timeout: float = 10.0
    times: dict[str, list[float]] = field(default_factory=lambda: {"/": [], "/api/standings": []})
    failures: dict[str, list[str]] = field(default_factory=lambda: {"/": [], "/api/standings": []})
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def _run(self) -> None:
        while not self._stop.is_set():
            for path in self.times:
                started = time.perf_counter()
                connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
                try:  # a new connection, as a new visitor's
                    connection.request("GET", path)
                    answer = connection.getresponse()
                    answer.read()
                    if answer.status != 200:
                        self.failures[path].append(f"HTTP {answer.status}")
                        continue
                except (OSError, http.client.HTTPException) as error:
                    self.failures[path].append(type(error).__name__)
                    continue
                finally:
                    connection.close()
                self.times[path].append((time.perf_counter() - started) * 1000)
            time.sleep(0.05)

    def report(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for path, times in self.times.items():
            ordered = sorted(times)
            found[path] = {
                "requests": len(times), "failed": len(self.failures[path]),
                "failures": sorted(set(self.failures[path])),
                "p50_ms": round(statistics.median(ordered), 1) if ordered else None,
                "p95_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 1) if ordered else None,
                "max_ms": round(ordered[-1], 1) if ordered else None}
        return found

    def worst_p95_ms(self) -> float:
        values = [entry["p95_ms"] for entry in self.report().values()]
        return float("inf") if None in values else max(values)


# -- archives ------------------------------------------------------------------------------------------------------

def tar_gz(files: dict[str, bytes], directories: int = 0) -> bytes:
    """A .tar.gz of ``files`` (name -> bytes), plus ``directories`` empty directories."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for index in range(directories):
            info = tarfile.TarInfo(f"d{index}")
            info.type = tarfile.DIRTYPE
            info.mode = 0o755
            tar.addfile(info)
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


PLAYER = (SAMPLES / "random" / "bot.py").read_bytes()


def alias_bomb(depth: int = 8) -> bytes:
    """A bot whose ``description`` is ``depth`` levels of ten aliases each: 10**depth leaves once expanded."""
    levels = ["&l0 [lol,lol,lol,lol,lol,lol,lol,lol,lol,lol]"]
    levels += [f"&l{i} [{','.join([f'*l{i - 1}'] * 10)}]" for i in range(1, depth)]
    manifest = f"name: bomb\ncommand: python3 bot.py\ndescription: [{', '.join(levels)}]\n"
    return tar_gz({"bot.yaml": manifest.encode(), "bot.py": PLAYER})


def slow_failing_build(name: str, seconds: float) -> bytes:
    """A bot whose build sleeps, then fails: an upload that holds a check slot and stores nothing."""
    manifest = f"name: {name}\ncommand: python3 bot.py\nbuild: sh -c 'sleep {seconds:g}; exit 1'\n"
    return tar_gz({"bot.yaml": manifest.encode(), "bot.py": PLAYER})


def deep_build(name: str, depth: int = 1100) -> bytes:
    """A bot whose build leaves ``depth`` nested directories (and succeeds)."""
    script = f"import os\nfor _ in range({depth}):\n    os.mkdir('d')\n    os.chdir('d')\n"
    manifest = f"name: {name}\ncommand: python3 bot.py\nbuild: python3 deep.py\n"
    return tar_gz({"bot.yaml": manifest.encode(), "bot.py": PLAYER, "deep.py": script.encode()})


def many_directories(count: int = 40_000) -> bytes:
    return tar_gz({"bot.yaml": b"name: dirs\ncommand: python3 bot.py\n", "bot.py": PLAYER}, directories=count)


# -- attacks ---------------------------------------------------------------------------------------------------------

def hold_connections(port: int, count: int, seconds: float) -> dict[str, int]:
    """Open ``count`` connections: a third send nothing, a third half a header block, a third a POST whose body
    stops short; hold them ``seconds``, then say how many the server had closed (an EOF or a reset)."""
    sockets: list[socket.socket] = []
    opened = 0
    for index in range(count):
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        except OSError:
            continue
        opened += 1
        kind = index % 3
        try:
            if kind == 1:
                sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
            elif kind == 2:
                sock.sendall(b"POST /me/login HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n"
                             b"Content-Type: application/x-www-form-urlencoded\r\n\r\ncsrf=")
        except OSError:
            pass
        sockets.append(sock)
    time.sleep(seconds)
    closed = 0
    for sock in sockets:
        sock.setblocking(False)
        try:
            sock.recv(65536)  # an end of file, or the 408 the server sent before closing
            closed += 1
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
        sock.close()
    return {"opened": opened, "closed_by_server": closed}


def form_hold(port: int, connections: int = 20, archive_kb: int = 5120) -> list[tuple[str, float]]:
    """Post ``/upload`` with a CSRF pair of the attacker's own making and a bad token, send the start of a
    ``archive_kb`` archive and hold the rest; return each connection's first answer line and how long it took."""
    boundary = "xYzBoUnDaRy"
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\nk\r\n"
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"token\"\r\n\r\nnot-a-token\r\n"
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"archive\"; filename=\"b.tar.gz\"\r\n"
            "Content-Type: application/gzip\r\n\r\n").encode()
    length = len(head) + (archive_kb << 10) + len(f"\r\n--{boundary}--\r\n")
    request = (f"POST /upload HTTP/1.1\r\nHost: x\r\nCookie: arena_csrf=k\r\nContent-Length: {length}\r\n"
               f"Content-Type: multipart/form-data; boundary={boundary}\r\n\r\n").encode() + head
    results: list[tuple[str, float]] = []
    sockets = []
    for _ in range(connections):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        sock.sendall(request + b"\0" * (64 << 10))  # the archive's first 64 KiB; the rest never comes
        sockets.append((sock, time.monotonic()))
    for sock, started in sockets:
        try:
            line = sock.recv(4096).split(b"\r\n", 1)[0].decode(errors="replace")
        except OSError as error:
            line = f"error: {error}"
        results.append((line, time.monotonic() - started))
        sock.close()
    return results


def bytes_under(path: Path) -> int:
    """The bytes of the files under ``path`` (a file that goes while it is counted counts 0)."""
    total = 0
    for current, _, names in os.walk(path):
        for name in names:
            try:
                total += os.lstat(os.path.join(current, name)).st_size
            except OSError:
                pass
    return total


def scratch_bytes(server: Server) -> int:
    """Bytes under the server's registry's .incoming/ (upload scratch and build copies)."""
    return bytes_under(server.root / "results" / "bots" / ".incoming")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=14.0, help="how long the connections are held (past the 10 s header timeout)")
    parser.add_argument("--connections", type=int, default=1100)
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    out: dict[str, Any] = {"bench": "server_dos", "python": platform.python_version(), "cpus": os.cpu_count(),
                           "load_avg": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory(prefix="arena-dos-") as tmp, \
            start_server(Path(tmp) / "a", open_files=1024) as server:
        token = server.add_author("mallory")
        with Probe("127.0.0.1", server.port) as probe:
            time.sleep(1)
        out["baseline"] = probe.report()
        with Probe("127.0.0.1", server.port) as probe:
            started = time.monotonic()
            reply = server.upload(token, alias_bomb(8))
            took = time.monotonic() - started
            time.sleep(1)
        out["alias_bomb"] = {"status": reply.status_code, "answer_bytes": len(reply.content),
                             "seconds": round(took, 3), "probe": probe.report()}
        log_before = server.log.stat().st_size
        with Probe("127.0.0.1", server.port) as probe:
            held = hold_connections(server.port, args.connections, args.seconds)
            out["slowloris_open_files"] = server.open_files_now()
        out["slowloris"] = {**held, "server_log_growth_bytes": server.log.stat().st_size - log_before,
                            "probe": probe.report()}
        with Probe("127.0.0.1", server.port) as probe:
            answers = form_hold(server.port)
            kept = scratch_bytes(server)
        out["form_hold"] = {"answers": sorted({line for line, _ in answers}),
                            "slowest_answer_s": round(max(took for _, took in answers), 3),
                            "scratch_bytes_kept": kept, "probe": probe.report()}
        authors = {name: server.add_author(name) for name in ("alice", "bob", "carol", "dave", "erin")}
        statuses: list[int] = []
        lock = threading.Lock()

        def flood(token: str, name: str) -> None:
            reply = server.upload(token, slow_failing_build(name, 6))
            with lock:
                statuses.append(reply.status_code)

        with Probe("127.0.0.1", server.port) as probe:
            threads = [threading.Thread(target=flood, args=(authors["alice"], f"slow-{i}")) for i in range(40)]
            threads += [threading.Thread(target=flood, args=(authors[name], f"{name}-slow"))
                        for name in ("bob", "carol", "dave", "erin")]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        out["upload_flood"] = {"statuses": {str(s): statuses.count(s) for s in sorted(set(statuses))},
                               "probe": probe.report()}
        directories = many_directories()
        with Probe("127.0.0.1", server.port) as probe:
            started = time.monotonic()
            deep = server.upload(authors["bob"], deep_build("bob-deep"))
            deep_s = time.monotonic() - started
            started = time.monotonic()
            dirs = server.upload(authors["carol"], directories)
            dirs_s = time.monotonic() - started
        out["deep_build"] = {"status": deep.status_code, "seconds": round(deep_s, 2),
                             "incoming_bytes_after": scratch_bytes(server), "probe": probe.report()}
        out["many_directories"] = {"status": dirs.status_code, "seconds": round(dirs_s, 2)}
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
