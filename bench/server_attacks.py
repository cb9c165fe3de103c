"""Benchmark of the league server under the connection attacks of the 2026-12-04 retest (issue 39): each runs on
loopback against a real ``arena serve`` started with a descriptor limit of 1,024 (systemd's default), while a
probe sends ``GET /`` and ``GET /api/standings`` in turn, each on a new connection, as a new visitor would.

- ``body``: connections that post ``/upload`` with an ``arena_csrf`` cookie and a ``Content-Length`` of 100,000,
  send the form's first bytes and then one byte every ``--trickle`` seconds (the retest's H2);
- ``slowread``: connections (receive buffer 2 KiB) that ask 100 times, pipelined, for the site's style sheet and
  never read an answer (M1);
- ``slowloris``: connections that send half a header block, then a header line every ``--trickle`` seconds (L1).

The attacker reopens at once whatever the server closes, as an attacker would. Reported per attack: the probe's
requests, failures, p50/p95/max in ms per route; the connections the attacker opened in all (so how often the
server closed one); the server's most descriptors seen, its log's "Too many open files" and its own CPU seconds
a second (the league's matches run in other processes); the listening socket's queue length and how many
connections the kernel dropped because a queue was full meanwhile (``ListenOverflows``, for the whole network
namespace); and the league's matches stored during the attack (the league kept playing when that is above 0 and
its state is not paused).
Prints ONE JSON object; nothing here asserts on the numbers (tests/server/test_server_attacks.py runs smaller counts).

    python bench/server_attacks.py [--seconds 40] [--body 500] [--slowread 560] [--slowloris 1100]
                                   [--listen-backlog N]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import resource
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Self

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: the repository's bench package

from bench.server_dos import Probe, start_server
from tests.support.server import Server

BOUNDARY = "xYzBoUnDaRy"
FORM_HEAD = (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n").encode()
STYLE = "/site/assets/style.css"


def opening(kind: str, port: int) -> bytes:
    """What an attacking connection of ``kind`` sends when it opens."""
    if kind == "body":
        return (f"POST /upload HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: arena_csrf=k\r\n"
                f"Content-Length: 100000\r\nContent-Type: multipart/form-data; boundary={BOUNDARY}\r\n\r\n"
                ).encode() + FORM_HEAD
    if kind == "slowread":
        return f"GET {STYLE} HTTP/1.1\r\nHost: x\r\n\r\n".encode() * 100
    if kind == "slowloris":
        return b"GET / HTTP/1.1\r\nHost: x\r\n"
    raise ValueError(f"unknown attack {kind!r}")


TCP_ESTABLISHED = 1
"""The first byte of Linux's ``TCP_INFO``: the connection's state."""
TRICKLE = {"body": b"k", "slowloris": b"X-a: b\r\n"}


class Siege:
    """``count`` connections of one kind, held and reopened from a process of their own (so that the attacker's
    loop over a thousand sockets never holds the probe's interpreter lock) until the ``with`` ends."""

    def __init__(self, kind: str, port: int, count: int, trickle_s: float = 8.0) -> None:
        context = multiprocessing.get_context("spawn")
        self.kind, self.port, self.count, self.trickle_s = kind, port, count, trickle_s
        self._opened = context.Value("q", 0)
        self._failed = context.Value("q", 0)
        self._stop = context.Event()
        self._process = context.Process(target=self._run, daemon=True)

    @property
    def opened(self) -> int:
        """Connections opened so far."""
        return int(self._opened.value)

    @property
    def failed_opens(self) -> int:
        return int(self._failed.value)

    def __enter__(self) -> Self:
        self._process.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._process.join(timeout=60)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()

    def _open(self) -> socket.socket | None:
        sock = socket.socket()
        if self.kind == "slowread":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
        sock.settimeout(5)
        try:
            sock.connect(("127.0.0.1", self.port))
            sock.sendall(opening(self.kind, self.port))
        except OSError:
            with self._failed.get_lock():
                self._failed.value += 1
            sock.close()
            return None
        with self._opened.get_lock():
            self._opened.value += 1
        return sock

    def _run(self) -> None:
        held: list[socket.socket] = []
        next_trickle = time.monotonic() + self.trickle_s
        while not self._stop.is_set():
            kept = []
            for sock in held:
                if established(sock):
                    kept.append(sock)
                else:
                    sock.close()  # the server closed it (or reset it): open another
            held = kept
            while len(held) < self.count and not self._stop.is_set():
                new = self._open()
                if new is not None:
                    held.append(new)
            if time.monotonic() >= next_trickle and self.kind in TRICKLE:
                for sock in held:
                    try:
                        sock.send(TRICKLE[self.kind])
                    except OSError:
                        pass
                next_trickle = time.monotonic() + self.trickle_s
            self._stop.wait(0.5)
        for sock in held:
            sock.close()


def established(sock: socket.socket) -> bool:
    """Whether the server has not closed ``sock``: the kernel's TCP state, since a slow reader never reads the
    end of file that would say so."""
    try:
        return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0] == TCP_ESTABLISHED
    except OSError:
        return False


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def listen_overflows() -> int:
    """The kernel's count of connections dropped because a listening socket's queue was full (``nstat``'s
    ``TcpExtListenOverflows``), for this network namespace: the probe's own drops among them."""
    lines = Path("/proc/net/netstat").read_text().splitlines()
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        if names.startswith("TcpExt:"):
            return int(dict(zip(names.split()[1:], values.split()[1:], strict=True))["ListenOverflows"])
    return 0


def listen_backlog(port: int) -> int | None:
    """The listening socket's queue length as the kernel has it (``ss -ltn``'s Send-Q: netlink's, not in
    /proc/net/tcp); None without ``ss``."""
    try:
        shown = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, timeout=30,
                               check=True).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return None
    return int(shown[2]) if len(shown) > 2 else None


def matches_done(server: Server) -> int:
    with sqlite3.connect(f"file:{server.db}?mode=ro", uri=True, timeout=30) as db:
        return int(db.execute("SELECT COUNT(*) FROM matches WHERE status = 'done'").fetchone()[0])


def descriptor_peak(server: Server, stop: threading.Event, peak: list[int]) -> None:
    while not stop.wait(0.5):
        try:
            peak[0] = max(peak[0], server.open_files_now())
        except OSError:
            return


def attack(server: Server, kind: str, count: int, seconds: float, trickle_s: float = 8.0) -> dict[str, Any]:
    """Hold ``count`` connections of ``kind`` for ``seconds`` while the probe runs; what it measured."""
    before = matches_done(server)
    emfile_before = server.log.read_text(errors="replace").count("Too many open files")
    stop = threading.Event()
    peak = [0]
    watcher = threading.Thread(target=descriptor_peak, args=(server, stop, peak), daemon=True)
    watcher.start()
    with Siege(kind, server.port, count, trickle_s) as siege:
        time.sleep(min(3.0, seconds / 4))  # the attack in place before the probe starts counting
        cpu = cpu_seconds(server.pid)
        overflows = listen_overflows()
        with Probe("127.0.0.1", server.port) as probe:
            time.sleep(seconds)
        cpu = cpu_seconds(server.pid) - cpu
        overflows = listen_overflows() - overflows
    stop.set()
    watcher.join()
    state = httpx.get(f"{server.url}/api/league", timeout=30).json()["state"]
    return {"connections": count, "opened_in_all": siege.opened, "failed_opens": siege.failed_opens,
            "probe": probe.report(), "public_failures": sum(len(f) for f in probe.failures.values()),
            "worst_p95_ms": probe.worst_p95_ms(), "server_descriptors_peak": peak[0],
            "too_many_open_files": server.log.read_text(errors="replace").count("Too many open files") - emfile_before,
            "matches_during": matches_done(server) - before, "league_state_after": state,
            "server_cpu_s_per_s": round(cpu / seconds, 2), "listen_backlog": listen_backlog(server.port),
            "listen_overflows": overflows, "load_avg_after": round(os.getloadavg()[0], 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=40.0, help="how long each attack is measured")
    parser.add_argument("--body", type=int, default=500)
    parser.add_argument("--slowread", type=int, default=560)
    parser.add_argument("--slowloris", type=int, default=1100)
    parser.add_argument("--only", choices=("body", "slowread", "slowloris"), help="run this attack alone")
    parser.add_argument("--trickle", type=float, default=8.0, help="seconds between an attacker's bytes")
    parser.add_argument("--listen-backlog", type=int, help="the server's server.listen_backlog (default: its own)")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    out: dict[str, Any] = {"bench": "server_attacks", "python": platform.python_version(), "cpus": os.cpu_count(),
                           "load_avg_start": os.getloadavg()[0], "server_open_files_limit": 1024}
    extra = "" if args.listen_backlog is None else f"  listen_backlog: {args.listen_backlog}\n"
    for kind, count in (("body", args.body), ("slowread", args.slowread), ("slowloris", args.slowloris)):
        if args.only not in (None, kind):
            continue
        with tempfile.TemporaryDirectory(prefix="arena-attack-") as tmp, \
                start_server(Path(tmp) / kind, extra, open_files=1024) as server:
            with Probe("127.0.0.1", server.port) as probe:
                time.sleep(3)
            out[kind] = {"baseline": probe.report(), **attack(server, kind, count, args.seconds, args.trickle)}
    out["load_avg_end"] = os.getloadavg()[0]
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
