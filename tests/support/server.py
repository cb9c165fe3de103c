"""A real ``arena serve`` on loopback for the server tests, and the bots they upload."""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from arena.store import Store

ROOT = Path(__file__).resolve().parent.parent.parent
SAMPLES = ROOT / "sample_bots"


def arena(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arena", *args], capture_output=True, text=True, check=check,
                          cwd=ROOT, timeout=60)


def limit_files(limit: int) -> None:
    """This process's descriptor limit, soft and hard (run in a child before it executes the server)."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


LEAGUE = """\
league:
  name: {name}
  bots: ["registry:*", {house}]
  players: 2
  seed: 5
  rules: {{threshold: 30}}
  workers: 1
"""


def league_server(root: Path, name: str, house: Sequence[Path] = (SAMPLES / "greedy",), *options: str,
                  server: str = "") -> Server:
    """A server (not started) of league ``name`` in ``root``: two seats, the authors' bots and the house bots
    ``house`` (one alone waits for bots and plays nothing); ``server`` is the config's ``server:`` section."""
    config = root / "league.yaml"
    config.write_text(LEAGUE.format(name=name, house=", ".join(str(path) for path in house)) + server)
    return Server(root, config, root / "results" / "arena.db", free_port(), options=options)


def require_tool(tool: str, package: str) -> str:
    """Where ``tool`` is; the test is skipped, naming the package to install, when it is not here (it fails
    instead under ``ARENA_REQUIRE_TOOLS=1``, as in CI, which installs them)."""
    found = shutil.which(tool)
    if found is None:
        missing = f"{tool} is not installed here (apt-get install {package})"
        if os.environ.get("ARENA_REQUIRE_TOOLS") == "1":
            pytest.fail(missing)
        pytest.skip(missing)
    return found


def answered(url: str, seconds: float, why: Callable[[], str]) -> httpx.Response:
    """The first ``200`` of ``GET url``, asked every half second for ``seconds`` (a server starting in a
    container, say); AssertionError with ``why()`` if none came."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            answer = httpx.get(url, timeout=5)
            if answer.status_code == 200:
                return answer
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, why()
        time.sleep(0.5)


def make_bot(where: Path, name: str, source: Path | None = None, code: str | None = None) -> Path:
    """A copy of the sample bot ``source`` named ``name``, or a bot running ``code``."""
    directory = where / name
    if source is not None:
        shutil.copytree(source, directory, ignore=shutil.ignore_patterns("__pycache__"))
        manifest = (directory / "bot.yaml").read_text().replace(f"name: {source.name}", f"name: {name}")
    else:
        directory.mkdir(parents=True)
        (directory / "bot.py").write_text(code or "")
        manifest = f"name: {name}\ncommand: python3 bot.py\n"
    (directory / "bot.yaml").write_text(manifest)
    return directory


@dataclass
class Server:
    """A real ``arena serve`` of the league in ``config`` on 127.0.0.1:``port``, its output in ``root``/serve.log;
    ``start`` again after ``stop`` is a restart. The tests' and the benches' (bench/server_dos.py,
    bench/server_attacks.py, bench/soak.py) one way to run one."""

    root: Path
    config: Path
    db: Path
    port: int
    process: subprocess.Popen[bytes] | None = None
    options: tuple[str, ...] = ()
    open_files: int | None = None
    """The server's descriptor limit (soft and hard), as systemd's 1,024; None: this process's."""
    start_within: float = 30.0
    stop_within: float = 60.0
    lives: int = 0
    """How many times it has started."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.root / "serve.log"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def start(self) -> None:
        """Start it and wait until it answers ``/api/league``; AssertionError with its log's tail if it does not
        within ``start_within`` seconds (or exits)."""
        with open(self.log, "ab") as log:  # the server has its own copy of the descriptor
            self.process = subprocess.Popen(
                [sys.executable, "-m", "arena", "serve", str(self.config), "--port", str(self.port), "--db",
                 str(self.db), *self.options],
                stdout=log, stderr=log, cwd=self.root,
                preexec_fn=None if self.open_files is None else partial(limit_files, self.open_files))  # noqa: PLW1509 (before any thread)
        deadline = time.monotonic() + self.start_within
        while self.process.poll() is None and time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/api/league", timeout=5).status_code == 200:
                    self.lives += 1
                    return
            except httpx.TransportError:
                time.sleep(0.2)
        raise AssertionError("the server did not start: " + self.log.read_text(errors="replace")[-2000:])

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """Send ``sig`` and wait for the exit; killed, and AssertionError, if it takes over ``stop_within``."""
        assert self.process is not None
        self.process.send_signal(sig)
        try:
            self.process.wait(timeout=self.stop_within)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"the server did not stop within {self.stop_within:g} s of signal {sig}") from None

    @contextlib.contextmanager
    def running(self) -> Iterator[Server]:
        """Started, and stopped at the end unless the test stopped it (or it died) already."""
        self.start()
        try:
            yield self
        finally:
            if self.process is not None and self.process.poll() is None:
                self.stop()

    def open_files_now(self) -> int:
        """How many descriptors the server holds."""
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def add_author(self, name: str) -> str:
        return arena("author", "add", name, "--db", str(self.db)).stdout.strip()

    def upload(self, token: str | None, body: bytes, timeout: float = 120, **headers: str) -> httpx.Response:
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        return httpx.post(f"{self.url}/api/bots", content=body, headers=headers, timeout=timeout)

    def standings(self) -> dict[str, Any]:
        return {line["bot"]: line for line in httpx.get(f"{self.url}/api/standings").json()["standings"]}

    def wait_for(self, what: str, condition: Callable[[], bool], seconds: float = 45) -> None:
        deadline = time.monotonic() + seconds
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; league: "
                                     f"{httpx.get(f'{self.url}/api/league').text}")
            time.sleep(0.3)


def league_results(db: Path) -> dict[int, list[tuple[str, int, int, str | None]]]:
    """Match index -> (bot, place, score, fault) per seat, of every finished match."""
    store = Store(db)
    try:
        found: dict[int, list[tuple[str, int, int, str | None]]] = {}
        for row in store.db.execute(
                "SELECT m.idx, b.name, s.place, s.score, s.fault_kind FROM matches m JOIN seats s ON s.match_id = m.id "
                "JOIN bots b ON b.id = s.bot_id WHERE m.status = 'done' ORDER BY m.idx, s.seat"):
            found.setdefault(row["idx"], []).append((row["name"], row["place"], row["score"], row["fault_kind"]))
        return found
    finally:
        store.close()
