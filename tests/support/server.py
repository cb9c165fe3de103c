"""A real ``arena serve`` on loopback for the server tests, and the bots they upload."""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from arena.store import Store

ROOT = Path(__file__).resolve().parent.parent.parent
SAMPLES = ROOT / "sample_bots"


def arena(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arena", *args], capture_output=True, text=True, check=check,
                          cwd=ROOT, timeout=60)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


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
    root: Path
    config: Path
    db: Path
    port: int
    process: subprocess.Popen[bytes] | None = None
    options: tuple[str, ...] = ()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        with open(self.root / "serve.log", "ab") as log:  # the server has its own copy of the descriptor
            self.process = subprocess.Popen(
                [sys.executable, "-m", "arena", "serve", str(self.config), "--port", str(self.port), "--db",
                 str(self.db), *self.options],
                stdout=log, stderr=log, cwd=self.root)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/api/league", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.2)
        raise AssertionError("the server did not start: " + (self.root / "serve.log").read_text()[-2000:])

    def stop(self, sig: int = signal.SIGTERM) -> None:
        assert self.process is not None
        self.process.send_signal(sig)
        self.process.wait(timeout=60)

    @contextlib.contextmanager
    def running(self) -> Iterator[Server]:
        """Started, and stopped at the end unless the test stopped it (or it died) already."""
        self.start()
        try:
            yield self
        finally:
            if self.process is not None and self.process.poll() is None:
                self.stop()

    def add_author(self, name: str) -> str:
        return arena("author", "add", name, "--db", str(self.db)).stdout.strip()

    def upload(self, token: str | None, body: bytes, **headers: str) -> httpx.Response:
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        return httpx.post(f"{self.url}/api/bots", content=body, headers=headers, timeout=120)

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
