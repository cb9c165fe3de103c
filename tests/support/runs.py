"""Running arena as an operator would, in subprocesses, and reading back what a run left: shared by the reliability,
run-loop, league and tournament tests."""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from arena.stats.standings import standings as read_standings
from arena.store import Store
from arena.store.records import StoredMatch
from tests.sigint import default_sigint

if TYPE_CHECKING:
    from arena.run.league import League

ROOT = Path(__file__).resolve().parent.parent.parent
SAMPLES = ROOT / "sample_bots"


def arena(*args: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arena", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=240, check=False)


def start(*args: str | Path) -> subprocess.Popen[str]:
    """``arena ARGS`` in its own process group (as a shell runs a job), so a test can signal the whole group."""
    return subprocess.Popen([sys.executable, "-m", "arena", *map(str, args)], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=default_sigint)  # noqa: PLW1509


def children(pid: int) -> list[int]:
    """The processes ``pid`` started (a runner's match workers), from its main thread's list."""
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except FileNotFoundError:
        return []


def group_members(pgid: int) -> list[int]:
    """The live processes of a process group (bots, workers and the runner share the runner's group)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_bytes().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[2]) == pgid and fields[0] != b"Z":
                found.append(int(entry.name))
    return found


def wait_group_gone(pgid: int, limit: float = 20.0) -> list[int]:
    """Whatever of the group is still alive after ``limit`` seconds (a hang guard, not a timing assertion)."""
    deadline = time.monotonic() + limit
    while group_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return group_members(pgid)


def counts(db: Path) -> dict[str, int]:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as probe:
            return dict(probe.execute("SELECT status, count(*) FROM matches GROUP BY status").fetchall())
    except sqlite3.Error:
        return {}


def results(db: Path, name: str = "t") -> tuple[list[dict[str, object]], list[tuple[int, str, int, int]]]:
    """The standings and every seat's (match, bot, place, score): what must not depend on interruptions."""
    store = Store(db, readonly=True)
    try:
        tid = store.tournament(name)["id"]
        standings = [line.to_dict(rank) for rank, line in enumerate(read_standings(store, tid), 1)]
        seats = [(m["index"], p["bot"], p["place"], p["score"]) for m in store.match_list(tid) for p in m["players"]]
    finally:
        store.close()
    return standings, seats


def error_said(outcome: subprocess.CompletedProcess[str]) -> str:
    """What a failed command said of its error: its line on stderr, or under ``--json`` its JSON object's ``error``
    on stdout (docs/CLI.md), with stderr's warnings before it."""
    try:
        found = json.loads(outcome.stdout)
    except ValueError:
        return outcome.stderr
    return outcome.stderr + str(found.get("error", "")) if isinstance(found, dict) else outcome.stderr


def plain_failure(outcome: subprocess.CompletedProcess[str] | tuple[int, str], code: int, *needles: str) -> None:
    status, stderr = (outcome.returncode, error_said(outcome)) if not isinstance(outcome, tuple) else outcome
    assert status == code, stderr
    assert "Traceback" not in stderr and "Error:" not in stderr.replace("arena:", ""), stderr
    for needle in needles:
        assert needle in stderr, stderr


def fill(disk: Path, leave: int) -> Path:
    """Fill ``disk`` but ``leave`` bytes; returns the filler file (delete it to make room again)."""
    filler = disk / "filler"
    stat = os.statvfs(disk)
    size = max(0, stat.f_bavail * stat.f_frsize + (filler.stat().st_size if filler.exists() else 0) - leave)
    try:
        filler.write_bytes(b"\0" * size)
    except OSError as error:  # a process under test wrote meanwhile: the disk is full, which is what was asked
        if error.errno != errno.ENOSPC:
            raise
    return filler


def write_config(directory: Path, **overrides) -> Path:
    config = {
        "name": "t",
        "bots": [str(SAMPLES / "greedy"), str(SAMPLES / "random"), str(SAMPLES / "js-greedy")],
        "players": 2,
        "repeats": 2,
        "seed": 3,
        "rules": {"threshold": 25},
        "limits": {"move_ms": 2000},
        "workers": 2,
    } | overrides
    path = directory / "t.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def write_stop_config(directory: Path, **overrides: object) -> Path:
    config = {"name": "s", "bots": [str(SAMPLES / "greedy"), str(SAMPLES / "random"), str(SAMPLES / "planner")],
              "players": 2, "seed": 4, "rules": {"threshold": 25}, "workers": 2,
              "stop": {"confidence": 0.95, "max_matches": 60}} | overrides
    path = directory / "s.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@contextmanager
def league_playing(league: League, join_s: float = 60) -> Iterator[threading.Thread]:
    """``league.run`` in a thread of its own while the block runs; then told to stop and waited for (``join_s``)."""
    stop = threading.Event()
    thread = threading.Thread(target=league.run, args=(stop,), name="league-test", daemon=True)
    thread.start()
    try:
        yield thread
    finally:
        stop.set()
        thread.join(timeout=join_s)


def shadowed(tmp_path: Path, *modules: str) -> dict[str, str]:
    """An environment in which ``modules`` cannot be imported, as on a host without the extra that brings them: a
    package of each name first on the path, raising what Python raises for a module that is not installed."""
    shadow = tmp_path / "shadow"
    for module in modules:
        (shadow / module).mkdir(parents=True)
        (shadow / module / "__init__.py").write_text(f"raise ModuleNotFoundError(\"No module named '{module}'\")\n")
    return {**os.environ, "PYTHONPATH": str(shadow)}


def stored_play(db: Path) -> tuple[StoredMatch, list[dict[str, Any]]]:
    """The one match an ``arena play`` stored in ``db`` (tests/play/), and its seats' bot rows."""
    store = Store(db)
    try:
        (run,) = store.tournaments()
        (match,) = store.matches(run["id"])
        bots = {row["id"]: dict(row) for row in store.bots(run["id"])}
        return match, [bots[bot_id] for bot_id in match.bot_ids]
    finally:
        store.close()
