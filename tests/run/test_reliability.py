"""The runner under an operator's bad day (issue 13): a full disk, stop signals at any moment, kills at random
moments, a second runner on the same store, a damaged or read-only store, a kill during the site build.

Everything here is real: ``arena run`` in a subprocess with its own process group, a real SQLite file, real
signals, a real (tiny) tmpfs for the full disk. The chaos tests compare every interrupted-then-resumed run with an
uninterrupted one: standings and every match's places and scores must be identical.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from arena.cli.main import main
from arena.site import urls
from arena.store import LeaseHeldError, Store
from tests.support.runs import (
    arena,
    children,
    counts,
    fill,
    plain_failure,
    results,
    start,
    wait_group_gone,
    write_config,
)

SEED = 20261201


def uninterrupted(directory: Path, repeats: int) -> tuple[Path, Path]:
    """An uninterrupted run of a small tournament: (config, store)."""
    config = write_config(directory, repeats=repeats, rules={"threshold": 30})
    db = directory / "a.db"
    done = arena("run", config, "--db", db, "--no-site")
    assert done.returncode == 0, done.stderr
    return config, db


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return uninterrupted(tmp_path_factory.mktemp("reference"), repeats=5)


@pytest.fixture(scope="module")
def small_reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """One round (6 matches) for the tests that only damage a finished store, its logs or its site."""
    return uninterrupted(tmp_path_factory.mktemp("small"), repeats=1)


@pytest.fixture(scope="module")
def chaos_reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Long enough that eight stops, each at most two seconds after its start, come before the end on a quiet,
    fast machine too."""
    return uninterrupted(tmp_path_factory.mktemp("chaos"), repeats=16)


# -- 1. a full disk ----------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.long
def test_a_full_disk_stops_the_run_at_once_and_it_resumes_when_there_is_room(tiny_disk: Path,
                                                                              reference: tuple[Path, Path]) -> None:
    config, reference_db = reference
    db = tiny_disk / "a.db"
    filler = fill(tiny_disk, 500 * 1024)  # the store with its schema and 30 pending matches fits; their logs do not
    runner = start("run", config, "--db", db, "--no-site")
    try:
        _, stderr = runner.communicate(timeout=120)  # it used to hang here for ever
    finally:
        runner.kill()
    plain_failure((runner.returncode, stderr), 1, f"no space left on device: {tiny_disk}")
    assert not wait_group_gone(runner.pid), "no worker or bot outlives the runner"
    left = counts(db)
    assert left.get("pending", 0) > 0, left
    filler.unlink()
    resumed = arena("run", config, "--db", db, "--no-site", "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["played"] == left["pending"]
    assert results(db) == results(reference_db)


@pytest.mark.slow
@pytest.mark.long
def test_when_the_matches_fit_but_the_site_does_not_the_standings_are_printed(tiny_disk: Path,
                                                                              tmp_path: Path) -> None:
    config = write_config(tmp_path, repeats=1)
    db = tiny_disk / "a.db"
    assert arena("run", config, "--db", db, "--no-site").returncode == 0
    fill(tiny_disk, 100 * 1024)
    again = arena("run", config, "--db", db)
    plain_failure(again, 1, "site not built: no space left on device")
    assert "greedy" in again.stdout, "the standings come first"
    assert not (tiny_disk / "site").exists() and not list(tiny_disk.glob(".site*")), "no half site, no stage left"


# -- 3. two runners ----------------------------------------------------------------------------------------------

def wait_for(predicate: object, limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while not predicate() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.long
def test_a_second_runner_is_refused_while_readers_keep_working(tmp_path: Path,
                                                               reference: tuple[Path, Path]) -> None:
    config, reference_db = reference
    db = tmp_path / "a.db"
    first = start("run", config, "--db", db, "--no-site")
    try:
        wait_for(lambda: counts(db).get("done", 0) >= 2)
        # Freeze its match workers (never the runner, which may be writing to the store): the runner lives on and
        # holds its lease, and no race with the end of its tournament remains, however fast the matches are.
        frozen = children(first.pid)
        for pid in frozen:
            os.kill(pid, signal.SIGSTOP)
        assert first.poll() is None and frozen, "the first run finished too soon to be raced"
        second = arena("run", config, "--db", db, "--no-site")
        plain_failure(second, 1, f"tournament t is being run by PID {first.pid} on {socket.gethostname()} since")
        for command in (["standings"], ["matches"], ["show", "1"], ["site", "build", "--out", tmp_path / "site"]):
            read = arena(*command, "--db", db)
            assert read.returncode == 0, (command, read.stderr)
        # A runner killed outright keeps its lease row, but a runner on the same host sees its holder is gone.
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
        first.communicate()
    third = arena("run", config, "--db", db, "--no-site")
    assert third.returncode == 0, third.stderr
    assert results(db) == results(reference_db)
    with sqlite3.connect(db) as probe:
        assert probe.execute("SELECT count(*) FROM leases").fetchone()[0] == 0, "a finished run lets go"


def test_a_lease_names_its_holder_and_expires_when_not_renewed(tmp_path: Path) -> None:
    store = Store(tmp_path / "a.db")
    other = Store(tmp_path / "a.db")
    held = store.acquire("t")
    with pytest.raises(LeaseHeldError, match=rf"tournament t is being run by PID {os.getpid()} on "):
        other.acquire("t")  # the holder (this very process) is alive
    other.acquire("u")  # another tournament is free
    # A holder on another host cannot be checked: only the expiry of its lease frees the tournament.
    store.db.execute("UPDATE leases SET host = 'elsewhere', pid = 1 WHERE tournament = 't'")
    with pytest.raises(LeaseHeldError, match="by PID 1 on elsewhere since"):
        other.acquire("t")
    store.db.execute("UPDATE leases SET expires = 0 WHERE tournament = 't'")
    taken = other.acquire("t")
    with pytest.raises(LeaseHeldError, match="lost the hold"):
        store.renew(held)  # the old holder learns at its next heartbeat, and stops
    other.renew(taken)
    other.release(taken)
    store.acquire("t")


def test_a_lease_names_a_league_as_a_league(tmp_path: Path) -> None:
    from arena.game.rules import Rules
    from arena.run.config import LeagueConfig
    from arena.run.league import League
    from tests.support.server import SAMPLES

    config = LeagueConfig(name="ladder", entries=(str(SAMPLES / "greedy"), str(SAMPLES / "random")), players=2,
                          seed=3, registry=tmp_path / "bots", rules=Rules.from_dict({"threshold": 25}))
    store = Store(tmp_path / "a.db")
    League(config, store.path).claim(store)  # what arena serve does before it binds its port
    other = Store(tmp_path / "a.db")
    with pytest.raises(LeaseHeldError, match=rf"^league ladder is being run by PID {os.getpid()} on "):
        other.acquire("ladder")  # the store's word: whoever asks, a league is a league
    other.acquire("t")
    with pytest.raises(LeaseHeldError, match=r"^tournament t is being run by"):
        store.acquire("t")  # a run the store does not have yet is a tournament unless its asker says otherwise
    held = store.acquire("fresh", kind="league")  # a league not yet in the store: the asker's word
    with pytest.raises(LeaseHeldError, match=r"^league fresh is being run by"):
        other.acquire("fresh", kind="league")
    store.db.execute("UPDATE leases SET expires = 0 WHERE tournament = 'fresh'")
    other.acquire("fresh")
    with pytest.raises(LeaseHeldError, match="lost the hold on league fresh"):
        store.renew(held)


def test_a_lease_of_a_reused_pid_is_free(tmp_path: Path) -> None:
    # The holder's pid now names another process (this one, started at another time): the holder is gone.
    store = Store(tmp_path / "a.db")
    other = Store(tmp_path / "a.db")
    store.acquire("t")
    store.db.execute("UPDATE leases SET started = started - 1 WHERE tournament = 't'")
    other.acquire("t")
    # A lease taken before start times were kept (none stored) is checked by its pid alone, as it was.
    other.db.execute("UPDATE leases SET started = NULL WHERE tournament = 't'")
    with pytest.raises(LeaseHeldError, match=rf"tournament t is being run by PID {os.getpid()} on "):
        store.acquire("t")


def test_read_commands_work_on_a_read_only_store(read_only: Path, small_reference: tuple[Path, Path],
                                                tmp_path: Path) -> None:
    config, reference_db = small_reference
    shutil.copy(reference_db, read_only / "a.db")  # a finished run's store (its logs stay where it wrote them)
    db = tmp_path / "ro" / "a.db"
    runner = CliRunner()
    for command in (["standings"], ["matches"], ["show", "1"], ["site", "build", "--out", str(tmp_path / "site")]):
        read = runner.invoke(main, [*command, "--db", str(db)])
        assert read.exit_code == 0, (command, read.output)
    refused = runner.invoke(main, ["run", str(config), "--db", str(db)])
    plain_failure((refused.exit_code, refused.stderr), 2, f"{db}: the store is read-only here")


# -- 4. a damaged store ------------------------------------------------------------------------------------------

def test_a_damaged_store_is_one_plain_error_from_every_command(small_reference: tuple[Path, Path],
                                                               tmp_path: Path) -> None:
    config, reference_db = small_reference
    db = tmp_path / "a.db"
    shutil.copy(reference_db, db)
    pages = db.stat().st_size // 4096
    with open(db, "r+b") as handle:  # garble the last pages, as a torn write or a bad disk would
        handle.seek((pages - 3) * 4096)
        handle.write(random.Random(SEED).randbytes(3 * 4096))
    runner = CliRunner()
    for command in (["standings"], ["matches"], ["show", "1"], ["site", "build", "--out", str(tmp_path / "site")],
                    ["run", str(config)]):
        outcome = runner.invoke(main, [*command, "--db", str(db)])
        assert isinstance(outcome.exception, SystemExit), (command, outcome.exception)
        plain_failure((outcome.exit_code, outcome.stderr), 2, f"{db}: not a usable arena store (")


def test_an_empty_file_is_not_taken_for_a_new_store(tmp_path: Path) -> None:
    config = write_config(tmp_path, repeats=1)
    db = tmp_path / "a.db"
    db.touch()
    runner = CliRunner()
    for command in (["standings"], ["matches"], ["site", "build"], ["run", str(config)]):
        outcome = runner.invoke(main, [*command, "--db", str(db)])
        plain_failure((outcome.exit_code, outcome.stderr), 2, f"{db}: not a usable arena store (an empty file")
    assert db.stat().st_size == 0, "nothing was written into it"


# -- 5. stop signals at any moment, and the chaos test -----------------------------------------------------------

def stop_at(config: Path, db: Path, stop: signal.Signals, after: float, group: bool) -> tuple[int, str]:
    """Start a run, send ``stop`` after ``after`` seconds (to the whole group, as Ctrl-C does, or to the runner
    alone, as ``kill`` does); return its exit status and stderr once it and everything it started are gone."""
    runner = start("run", config, "--db", db, "--no-site")
    time.sleep(after)
    if runner.poll() is None:
        (os.killpg if group else os.kill)(runner.pid, stop)
    try:
        _, stderr = runner.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        stuck = subprocess.run(["ps", "-o", "pid,stat,wchan:24,args", "-g", str(runner.pid)], capture_output=True,
                               text=True, check=False).stdout
        os.killpg(runner.pid, signal.SIGKILL)
        raise AssertionError(f"a {stop.name} at {after:.2f} s did not stop the run:\n{stuck}") from None
    assert not wait_group_gone(runner.pid), f"processes outlived a {stop.name} at {after:.2f} s"
    return runner.returncode, stderr


@pytest.mark.slow
@pytest.mark.long
@pytest.mark.parametrize("stop, group", [(signal.SIGINT, True), (signal.SIGTERM, False)])
def test_a_stop_while_the_runner_and_its_workers_start_is_quiet(stop: signal.Signals, group: bool, tmp_path: Path,
                                                                reference: tuple[Path, Path]) -> None:
    config, _ = reference
    for after in (0.4, 0.8, 1.2):  # the runner, then its workers, import arena about then
        status, stderr = stop_at(config, tmp_path / f"{after}.db", stop, after, group)
        plain_failure((status, stderr), 1, "interrupted")


@pytest.mark.slow
@pytest.mark.long
def test_chaos_kills_at_random_moments_then_resume_gives_identical_results(
        tmp_path: Path, chaos_reference: tuple[Path, Path]) -> None:
    config, reference_db = chaos_reference
    db = tmp_path / "a.db"
    chance = random.Random(SEED)
    stops = [(signal.SIGKILL, False), (signal.SIGKILL, True), (signal.SIGINT, True), (signal.SIGTERM, False)] * 2
    chance.shuffle(stops)
    survived = 0
    for stop, group in stops:
        status, stderr = stop_at(config, db, stop, chance.uniform(0.3, 2.0), group)
        if status == 0:
            break
        if stop is not signal.SIGKILL:
            plain_failure((status, stderr), 1, "interrupted")
        survived += 1
    print(f"chaos: {survived} stops survived, then resumed")
    assert survived >= 5, "most stops came before the end"
    assert arena("run", config, "--db", db, "--no-site").returncode == 0
    assert results(db) == results(reference_db)
    assert not list((db.parent / "logs" / "t").glob("*.tmp")), "half-written logs of the stopped runs are cleared"


# -- 6. the site build -------------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.long
def test_a_kill_during_the_site_build_leaves_the_old_site_whole(reference: tuple[Path, Path],
                                                                tmp_path: Path) -> None:
    """A full build (--full) is staged beside the site and swapped in whole, so a kill leaves the old site as it
    was. (An incremental build, which writes only what changed, is killed and repaired in test_site_render.)"""
    _, db = reference
    out = tmp_path / "site"
    assert arena("site", "build", "--db", db, "--out", out).returncode == 0
    before = sorted(str(path.relative_to(out)) for path in out.rglob("*"))
    index = (out / "index.html").read_bytes()
    builder = start("site", "build", "--db", db, "--out", out, "--full")
    wait_for(lambda: any(tmp_path.glob(".site.*.tmp")) or builder.poll() is not None)
    time.sleep(random.Random(SEED).uniform(0.0, 0.1))
    os.killpg(builder.pid, signal.SIGKILL)
    builder.communicate()
    assert builder.returncode == -signal.SIGKILL, "the build finished before it could be killed"
    assert sorted(str(path.relative_to(out)) for path in out.rglob("*")) == before
    assert (out / "index.html").read_bytes() == index
    assert arena("site", "build", "--db", db, "--out", out).returncode == 0
    assert not list(tmp_path.glob(".site.*")), "the next build sweeps the stage of the killed one"


def test_a_corrupt_log_is_reported_as_corrupt_not_missing(small_reference: tuple[Path, Path],
                                                           tmp_path: Path) -> None:
    _, reference_db = small_reference
    db = tmp_path / "a.db"
    shutil.copy(reference_db, db)
    shutil.copytree(reference_db.parent / "logs", tmp_path / "logs")
    Store(db).db.execute("UPDATE matches SET log_path = replace(log_path, ?, ?)",  # the logs moved with the store
                         (str(reference_db.parent), str(tmp_path)))
    log = tmp_path / "logs" / "t" / "000003.jsonl.gz"
    log.write_bytes(log.read_bytes()[:200])  # cut off, as a full disk or a crash in the middle of a copy leaves it
    (tmp_path / "logs" / "t" / "000004.jsonl.gz").unlink()
    built = CliRunner().invoke(main, ["site", "build", "--db", str(db), "--out", str(tmp_path / "site")])
    assert built.exit_code == 0, built.output
    assert f"warning: corrupt event log, its match page has no replay: {log}" in built.stderr
    assert "000004" not in built.stderr, "a missing log is no warning: the page says it is missing"
    ids = {match["index"]: match["id"] for match in Store(db).match_list(Store(db).latest_tournament()["id"], None)}
    page = {idx: (tmp_path / "site" / urls.match_href("t", ids[idx])).read_text() for idx in (2, 3, 4)}
    assert "is corrupt (unreadable at" in page[3] and "is missing" not in page[3]
    assert "is missing" in page[4] and "is corrupt" not in page[4]
    assert 'id="nolog"' not in page[2]
