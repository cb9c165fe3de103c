"""The result model through the store: a MatchResult written and read back whole, through a real SQLite file, and
a store written before reason codes existed, opened and migrated by this version."""

from __future__ import annotations

import dataclasses
import json
import pickle
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from arena.cli.main import main
from arena.game.results import Fault, MatchResult, Reason, SeatResult, SeatStats, Termination, reason_of, termination_of
from arena.game.rules import Rules
from arena.schedule import make_schedule
from arena.server import authors
from arena.stats.standings import standings
from arena.store import MIGRATIONS, Store, StoreError

RULES = Rules(threshold=40, penalty=25)
BOTS = [{"name": name, "directory": f"/bots/{name}", "files_hash": f"{i:064x}"} for i, name in
        enumerate(["alpha", "beta", "gamma"])]


def new_tournament(store: Store) -> int:
    config = {"name": "t", "rules": RULES.to_dict(), "rating": {"mu": 25.0, "sigma": 25 / 3}}
    return store.create_tournament("t", config, "0" * 64, BOTS, make_schedule(3, 3, 1, 7))


def a_result(store_dir: Path) -> MatchResult:
    seats = make_schedule(3, 3, 1, 7)[0].bots
    players = (
        SeatResult(0, BOTS[seats[0]]["name"], BOTS[seats[0]]["files_hash"], 1, 12, SeatStats(5, 31, 12, 2, 1),
                   None, "", 8123, think_ms=1877),
        SeatResult(1, BOTS[seats[1]]["name"], BOTS[seats[1]]["files_hash"], 3, 20, SeatStats(3, 14, 20, 0, 0),
                   Fault(Reason.INVALID_NOT_JSON, "not JSON (Expecting value at column 1): 'thinking'", 3,
                         line="thinking \u2665 <b>", exit_status=None, signal=None),
                   "a debug line\n", 0, think_ms=3000),
        SeatResult(2, BOTS[seats[2]]["name"], BOTS[seats[2]]["files_hash"], 2, 41, SeatStats(4, 20, 41, 0, 2),
                   Fault(Reason.LIMIT_MEMORY, "killed by the memory limit (closed its stdout)", 4, exit_status=None,
                         signal=9),
                   "MemoryError\n", 450, think_ms=2550),
    )
    return MatchResult(seed=make_schedule(3, 3, 1, 7)[0].seed, rules=RULES, termination=Termination.FORFEITS, rounds=5,
                       turns=65, players=players, duration_s=1.25,
                       log_path=store_dir / "logs" / "t" / "000000.jsonl.gz")


def test_a_match_result_round_trips_through_the_store(tmp_path: Path) -> None:
    store = Store(tmp_path / "arena.db")
    tid = new_tournament(store)
    result = a_result(tmp_path)
    store.record_match(tid, 0, result, attempts=2)
    store.close()
    reopened = Store(tmp_path / "arena.db")  # read from the file, not from anything kept in memory
    stored = reopened.matches(tid)
    assert [m.status for m in stored] == ["done", "pending", "pending"]
    assert stored[0].result == result and stored[0].attempts == 2
    assert stored[0].names == tuple(p.name for p in result.players)
    assert stored[1].result is None and len(stored[1].bot_ids) == 3
    assert reopened.match(stored[0].id) == stored[0]
    assert reopened.match(9999) is None
    # What crosses from a tournament worker to the runner is picklable and comes back equal.
    assert pickle.loads(pickle.dumps(result)) == result
    # The standings still count faults by kind.
    faults = {line.name: dict(line.faults) for line in standings(reopened, tid)}
    assert faults[result.players[1].name] == {"invalid": 1} and faults[result.players[2].name] == {"limit": 1}


def test_arena_show_prints_the_reason_code_and_json_is_the_models_dict(tmp_path: Path) -> None:
    store = Store(tmp_path / "arena.db")
    tid = new_tournament(store)
    result = a_result(tmp_path)
    store.record_match(tid, 0, result, attempts=1)
    match_id = store.matches(tid)[0].id
    runner = CliRunner()
    shown = runner.invoke(main, ["show", str(match_id), "--db", str(tmp_path / "arena.db")])
    assert shown.exit_code == 0, shown.output
    assert "FAULT invalid.not_json in round 3: not JSON" in shown.stdout
    assert "FAULT limit.memory in round 4" in shown.stdout and "MemoryError" in shown.stdout
    assert "the line it sent: 'thinking \u2665 <b>'" in shown.stdout
    as_json = json.loads(runner.invoke(main, ["show", str(match_id), "--db", str(tmp_path / "arena.db"),
                                              "--json"]).stdout)
    # The store keeps stderr too; the deal seed is not shown while the match's group has rotations to play.
    assert as_json["result"] == json.loads(json.dumps(result.to_dict(stderr=True))) | {"seed": None}
    assert as_json["seed"] is None and str(result.seed) not in shown.stdout
    assert "MemoryError" in as_json["result"]["players"][2]["stderr"] and "stderr" not in result.to_dict()["players"][2]
    assert as_json["result"]["players"][2]["fault"] == {
        "kind": "limit", "reason": "limit.memory", "detail": "killed by the memory limit (closed its stdout)",
        "round": 4, "line": None, "exit_status": None, "signal": 9}
    pending = json.loads(runner.invoke(main, ["show", str(match_id + 1), "--db", str(tmp_path / "arena.db"),
                                              "--json"]).stdout)
    assert pending["status"] == "pending" and pending["result"] is None and len(pending["bots"]) == 3


def test_a_store_from_before_reason_codes_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    name, script = MIGRATIONS[0]  # migrations are never edited: this is the schema of a store written by 0.x
    old = sqlite3.connect(path, isolation_level=None)
    old.execute("PRAGMA foreign_keys = ON")
    old.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    for statement in script.split(";"):
        if statement.strip():
            old.execute(statement)
    old.execute("INSERT INTO _migrations VALUES (?, '2026-01-01T00:00:00Z')", (name,))
    old.execute("INSERT INTO tournaments VALUES (1, 'old', ?, 'h', '2026-01-01T00:00:00Z', NULL)",
                (json.dumps({"name": "old", "rules": {"threshold": 30}}),))
    for slot, bot in enumerate(BOTS[:2]):
        old.execute("INSERT INTO bots VALUES (?, 1, ?, ?, ?, ?, '{}')",
                    (slot + 1, slot, bot["name"], bot["directory"], bot["files_hash"]))
    old.execute("INSERT INTO matches (id, tournament_id, idx, grp, rotation, seed, status, attempts, rounds, turns, "
                "termination, duration_s, log_path, finished_at) "
                "VALUES (1, 1, 0, 0, 0, 99, 'done', 1, 3, 20, 'forfeits', 0.5, NULL, '2026-01-01T00:00:01Z')")
    old.execute("INSERT INTO seats VALUES (1, 0, 1, 1, 10, NULL, NULL, NULL, '', 3, 11, 10, 1, 0)")
    old.execute("INSERT INTO seats VALUES (1, 1, 2, 2, 0, 'crash', 'exited with status 1', 2, 'boom', 2, 9, 0, 0, 0)")
    old.close()

    store = Store(path)
    [match] = store.matches(1)
    assert match.result is not None and match.result.rules == Rules(threshold=30)
    winner, crashed = match.result.players
    assert winner.fault is None and winner.stats == SeatStats(3, 11, 10, 1, 0) and winner.bank_left_ms == 0
    assert winner.think_ms == crashed.think_ms == 0  # not kept before 0009_seat_think
    assert crashed.fault == Fault(Reason.CRASH_OTHER, "exited with status 1", 2)
    assert crashed.fault.kind.value == "crash" and crashed.stderr_tail == "boom"
    applied = [row[0] for row in store.db.execute("SELECT name FROM _migrations ORDER BY name")]
    assert applied == [name for name, _ in MIGRATIONS]
    store.close()
    assert Store(path).matches(1) == [match]  # opening again changes nothing


def test_reason_of_reads_old_and_unknown_codes() -> None:
    assert reason_of("illegal.not_in_hand") is Reason.ILLEGAL_NOT_IN_HAND
    assert reason_of("crash") is Reason.CRASH_OTHER  # a format 1 log's fault has only its kind
    assert reason_of("timeout.some_future_code") is Reason.TIMEOUT_OTHER
    assert Fault.from_dict({"kind": "invalid", "detail": "d", "round": 1}) == Fault(Reason.INVALID_OTHER, "d", 1)
    fault = Fault(Reason.CRASH_EXIT, "exited with status 3", 2, exit_status=3)
    assert Fault.from_dict(fault.to_dict()) == fault


def test_termination_of_reads_every_known_value_and_a_newer_arenas() -> None:
    assert [termination_of(value) for value in ("last_standing", "first_out", "max_rounds", "forfeits")] == [
        Termination.LAST_STANDING, Termination.FIRST_OUT, Termination.MAX_ROUNDS, Termination.FORFEITS]
    assert termination_of("agreed_draw") is Termination.OTHER  # a value a newer arena may store
    # Written into sentences as its value, not as the enum's member name.
    assert f"{Termination.MAX_ROUNDS}" == "max_rounds" and Termination.MAX_ROUNDS.text == "max rounds"


def test_a_termination_is_stored_as_its_text_and_a_newer_arenas_reads_back_as_other(tmp_path: Path) -> None:
    store = Store(tmp_path / "arena.db")
    tid = new_tournament(store)
    result = a_result(tmp_path)
    store.record_match(tid, 0, result, attempts=1)
    store.record_match(tid, 1, dataclasses.replace(result, termination=Termination.MAX_ROUNDS), attempts=1)
    # The column holds the plain value, as it did when termination was a str (an older arena reads it back).
    column = ("SELECT termination, typeof(termination) FROM matches WHERE tournament_id = ? AND status = 'done' "
              "ORDER BY idx")
    assert [tuple(row) for row in store.db.execute(column, (tid,))] == [("forfeits", "text"), ("max_rounds", "text")]
    store.db.execute("UPDATE matches SET termination = 'agreed_draw' WHERE tournament_id = ? AND idx = 1", (tid,))
    store.close()

    reopened = Store(tmp_path / "arena.db")
    first, second = (m.result for m in reopened.matches(tid)[:2])
    assert first is not None and first.termination is Termination.FORFEITS and first == result
    assert second is not None and second.termination is Termination.OTHER
    assert second.summary() == "5 rounds, 65 turns, other"
    assert json.loads(json.dumps(first.to_dict()))["termination"] == "forfeits"
    # Reading changes nothing: the newer arena's value is still there for the newer arena.
    assert [tuple(row) for row in reopened.db.execute(column, (tid,))][1] == ("agreed_draw", "text")
    reopened.close()


def test_a_league_store_from_before_league_activity_is_read_and_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old = sqlite3.connect(path, isolation_level=None)
    old.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    # The schema a league server wrote before 0005_league_activity (0004 is the author tables' set's now).
    for name, script in [*MIGRATIONS[:3], *authors.MIGRATIONS[:1]]:
        for statement in script.split(";"):
            if statement.strip():
                old.execute(statement)
        old.execute("INSERT INTO _migrations VALUES (?, '2026-01-01T00:00:00Z')", (name,))
    old.execute("INSERT INTO tournaments VALUES (1, 'ladder', ?, 'h', '2026-01-01T00:00:00Z', NULL)",
                (json.dumps({"league": True, "players": 2, "rating": {"mu": 25.0, "sigma": 8.333}}),))
    for slot, bot in enumerate(BOTS[:3]):
        old.execute("INSERT INTO bots VALUES (?, 1, ?, ?, ?, ?, '{}')",
                    (slot + 1, slot, bot["name"], bot["directory"], bot["files_hash"]))
    for match, (group, bots) in enumerate([(0, (1, 2)), (1, (1, 2)), (2, (2, 3)), (3, (1, 3))], 1):
        old.execute("INSERT INTO matches (id, tournament_id, idx, grp, rotation, seed) VALUES (?, 1, ?, ?, 0, 7)",
                    (match, match - 1, group))
        old.executemany("INSERT INTO seats (match_id, seat, bot_id) VALUES (?, ?, ?)",
                        [(match, seat, bot) for seat, bot in enumerate(bots)])
    old.close()
    read = Store(path, readonly=True)  # a reader does not migrate: every bot counts as in the field
    assert [line.active for line in standings(read, 1)] == [True, True, True]
    read.close()
    store = Store(path)
    assert [row["entered_group"] for row in store.bots(1)] == [0, 0, 2]  # each from its first group
    assert [line.active for line in standings(store, 1)] == [True, True, True]
    store.close()


def old_store(path: Path, upto: str) -> sqlite3.Connection:
    """A store as arena wrote it while the author tables were the store's migration 0004, through ``upto``."""
    old = sqlite3.connect(path, isolation_level=None)
    old.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    for name, script in sorted([*MIGRATIONS, *authors.MIGRATIONS]):
        if name > upto:
            break
        for statement in script.split(";"):
            if statement.strip():
                old.execute(statement)
        old.execute("INSERT INTO _migrations VALUES (?, '2026-01-01T00:00:00Z')", (name,))
    return old


def test_a_store_with_the_author_tables_of_before_keeps_them_and_runs_nothing_again(tmp_path: Path) -> None:
    path = tmp_path / "league.db"
    old = old_store(path, "0007_deal_secrets")  # what the code before the author tables had a set of their own made
    token = "t0ken"
    old.execute("INSERT INTO authors VALUES (1, 'alice', ?, '2026-01-01T00:00:00Z', NULL)", (authors.token_hash(token),))
    old.execute("INSERT INTO bot_owners VALUES ('alice-bot', 1, '2026-01-01T00:00:01Z')")
    old.execute("INSERT INTO submissions VALUES (1, 1, 'alice-bot', 1, 'h', 1767225601.0)")
    old.close()
    read = Store(path, readonly=True)
    assert [summary.to_dict()["bots"] for summary in authors.list_authors(read)] == [["alice-bot"]]
    read.close()
    store = Store(path)
    alice = authors.authenticate(store, token)
    assert alice is not None and alice.name == "alice" and authors.owner_of(store, "alice-bot") == "alice"
    authors.record_acceptance(store, alice, "alice-bot", 2, "h2", 1767225602.0)
    assert authors.submissions_of(store, "alice-bot") == {1: "alice", 2: "alice"}
    applied = dict(store.db.execute("SELECT name, applied_at FROM _migrations").fetchall())
    assert applied["0004_league_authors"] == "2026-01-01T00:00:00Z"  # not run again
    assert sorted(applied) == sorted(name for name, _ in [*MIGRATIONS, *authors.MIGRATIONS])
    store.close()


def test_the_author_tables_come_with_their_first_use(tmp_path: Path) -> None:
    path = tmp_path / "arena.db"
    Store(path).close()
    read = Store(path, readonly=True)
    assert authors.list_authors(read) == [] and authors.authenticate(read, "x") is None  # no tables: no authors
    assert read.db.execute("SELECT 1 FROM sqlite_master WHERE name = 'authors'").fetchone() is None
    store = Store(path)
    token = authors.add_author(store, "bob")
    assert authors.authenticate(read, token) is not None  # a reader sees them once a writer made them
    assert "0004_league_authors" in {name for (name,) in store.db.execute("SELECT name FROM _migrations")}
    store.db.execute("INSERT INTO _migrations VALUES ('authors/9999_from_the_future', '2030-01-01T00:00:00Z')")
    store.close()
    read.close()
    reopened = Store(path)  # the store's own set does not judge another's names
    with pytest.raises(StoreError, match="newer arena"):
        authors.list_authors(reopened)
    reopened.close()
