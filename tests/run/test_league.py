"""The league server's parts without HTTP: authors and tokens, the server config, and the league's scheduler, on a
real SQLite store (the server itself is tested in test_server.py)."""

from __future__ import annotations

import dataclasses
import gc
import json
import os
import shutil
import time
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

import arena.run
from arena.cli.main import main
from arena.game.results import MatchResult, SeatResult, SeatStats, Termination
from arena.game.rules import Rules
from arena.match.live import Reuse
from arena.registry.check import check_bot
from arena.registry.versions import Registry
from arena.run.config import ConfigError, LeagueConfig
from arena.run.jobs import JobResult, MatchJob
from arena.run.league import League, LeagueError, closeness_checkpoint, public_error, tally_from_store
from arena.run.loop import RunningRatings
from arena.run.plan import identity_hash
from arena.server.authors import (
    AuthorError,
    NameTaken,
    add_author,
    authenticate,
    list_authors,
    owner_of,
    record_acceptance,
    revoke_author,
)
from arena.server.config import load_serve_config
from arena.site.pages.home import home_page
from arena.stats.standings import standings as read_standings
from arena.store import Store, StoreError
from tests.support.runs import fill, league_playing

SAMPLES = Path(__file__).resolve().parents[2] / "sample_bots"
HOUSE = tuple(str(SAMPLES / name) for name in ("greedy", "random", "planner", "js-greedy"))


def test_the_matchmakers_confidence_is_recomputed_less_often_as_the_league_grows() -> None:
    # Every 10 groups up to a thousand (as before), then every 100, every 1,000: a recomputation costs about
    # linearly in the matches, so it must come once in a growth of the data by a few per cent at most.
    assert [closeness_checkpoint(first) for first in (0, 9, 10, 999, 1000, 1099, 1100, 25_123)] == [
        0, 0, 10, 990, 1000, 1000, 1100, 25_000]
    assert len({closeness_checkpoint(first) for first in range(100_000)}) == 100 + 90 + 90
    assert all(closeness_checkpoint(first) <= first for first in range(0, 100_000, 7))


def test_the_store_keeps_only_a_hash_of_a_token(tmp_path: Path) -> None:
    store = Store(tmp_path / "arena.db")
    token = add_author(store, "alice")
    assert len(token) >= 40
    store.close()
    assert token.encode() not in (tmp_path / "arena.db").read_bytes()
    store = Store(tmp_path / "arena.db")
    found = authenticate(store, token)
    assert found is not None and found.name == "alice"
    assert authenticate(store, token + "x") is None and authenticate(store, "") is None
    with pytest.raises(AuthorError, match="author 'alice' already exists"):
        add_author(store, "alice")
    with pytest.raises(AuthorError, match="expected a slug"):
        add_author(store, "Alice Smith")
    revoke_author(store, "alice")
    assert authenticate(store, token) is None
    with pytest.raises(AuthorError, match="no author 'bob'"):
        revoke_author(store, "bob")


def test_the_first_author_to_be_accepted_owns_the_name(tmp_path: Path) -> None:
    store = Store(tmp_path / "arena.db")
    add_author(store, "alice")
    add_author(store, "bob")
    alice, bob = (summary.author for summary in list_authors(store))
    record_acceptance(store, alice, "shark", 1, "abc", 1000.0)
    with pytest.raises(NameTaken):
        record_acceptance(store, bob, "shark", 2, "def", 1001.0)
    record_acceptance(store, alice, "shark", 2, "def", 1002.0)
    assert owner_of(store, "shark") == "alice"
    assert [(s.author.name, s.bots, s.submissions) for s in list_authors(store)] == [
        ("alice", ("shark",), 2), ("bob", (), 0)]  # bob's refused claim logged nothing


def test_author_commands(tmp_path: Path) -> None:
    db = str(tmp_path / "arena.db")
    runner = CliRunner()
    added = runner.invoke(main, ["author", "add", "alice", "--db", db, "--json"])
    assert added.exit_code == 0 and json.loads(added.stdout)["author"] == "alice"
    assert runner.invoke(main, ["author", "add", "alice", "--db", db]).exit_code == 2
    listed = json.loads(runner.invoke(main, ["author", "list", "--db", db, "--json"]).stdout)
    assert [a["name"] for a in listed["authors"]] == ["alice"] and listed["authors"][0]["revoked_at"] is None
    assert runner.invoke(main, ["author", "revoke", "alice", "--db", db]).exit_code == 0
    assert runner.invoke(main, ["author", "revoke", "nobody", "--db", db]).exit_code == 2
    assert runner.invoke(main, ["submit", str(SAMPLES / "random"), "--server", "http://127.0.0.1:9"],
                         env={"ARENA_TOKEN": ""}).exit_code == 2  # no token
    unreachable = runner.invoke(main, ["submit", str(SAMPLES / "random"), "--server", "http://127.0.0.1:9",
                                       "--token", "t"])
    assert unreachable.exit_code == 1 and "cannot reach the server" in unreachable.output


@pytest.mark.parametrize("text, words", [
    ("name: x\n", "league: missing"),
    ("league: {name: x, bots: ['registry:*'], players: 2, seed: 1, colour: red}\n", "league.colour: unknown key"),
    ("league: {name: x, bots: ['registry:*'], players: 9, seed: 1}\n", "league.players: expected an integer from 2"),
    ("league: {name: x, bots: [nowhere], players: 2, seed: 1}\n", "league.bots[0]: expected registry:"),
    (f"league: {{name: x, bots: [sample:greedy, 'registry:*', '{SAMPLES}/greedy'], players: 2, seed: 1}}\n",
     f"league.bots[2]: '{SAMPLES}/greedy' names the same bot as bots[0]; list each bot once"),
    ("league: {name: x, bots: ['registry:*', 'registry:*'], players: 2, seed: 1}\n",
     "league.bots[1]: 'registry:*' names the same bot as bots[0]"),
    ("league: {name: x, bots: ['registry:*'], players: 2, seed: 1, keep_stderr: 0}\n",
     "league.keep_stderr: expected an integer from 1 to 1000000, got 0"),
    ("league: {name: x, bots: ['registry:*'], players: 2, seed: 1}\nserver: {uploads_per_hour: 0}\n",
     "server.uploads_per_hour: expected an integer from 1 to 100000"),
    ("league: {name: x, bots: ['registry:*'], players: 2, seed: 1}\nserver: {login_attempts_per_hour: 0}\n",
     "server.login_attempts_per_hour: expected an integer from 1 to 100000, got 0"),
    ("league: {name: x, bots: ['registry:*'], players: 2, seed: 1, cluster: 'head:8786'}\n",
     "league.cluster: expected a Dask scheduler address: local:N"),
    ("league: {name: x, bots: ['registry:*'], players: 2, seed: 1, limits: {move_ms: 0}}\n",
     "league.limits.move_ms: expected a positive integer, got 0"),
    ("league: {name: x, bots: ['registry:*'], players: 2, seed: 1, throttle: 'off'}\n",
     "league.throttle: expected true or false, got 'off'"),
    ("league: {name: x, bots: ['registry:*'], players: 2, seed: 1}\nserver: {trusted_proxies: [localhost]}\n",
     "server.trusted_proxies: expected a list of IP addresses or networks, such as [127.0.0.1], got 'localhost'"),
    ("league: {name: x, bots: ['registry:*'], players: 2, seed: 1}\nserver: {send_timeout_s: 0}\n",
     "server.send_timeout_s: expected a number from 1 to 600, got 0"),
    ("league: {name: x, bots: ['registry:*'], players: 2, seed: 1}\nserver: {listen_backlog: 8}\n",
     "server.listen_backlog: expected an integer from 16 to 65535, got 8"),
])
def test_bad_server_configs_name_the_file_and_the_key(tmp_path: Path, text: str, words: str) -> None:
    config = tmp_path / "league.yaml"
    config.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_serve_config(config, tmp_path / "bots")
    assert str(caught.value).startswith(f"{config}: ") and words in str(caught.value)


def test_a_cluster_is_where_the_league_plays_not_what_it_is(tmp_path: Path) -> None:
    config = tmp_path / "league.yaml"
    config.write_text("league: {name: x, bots: ['registry:*'], players: 2, seed: 1, cluster: 'tcp://head:8786'}\n")
    on_cluster = load_serve_config(config, tmp_path / "bots").league
    config.write_text("league: {name: x, bots: ['registry:*'], players: 2, seed: 1}\n")
    on_pool = load_serve_config(config, tmp_path / "bots").league
    assert (on_cluster.cluster, on_pool.cluster) == ("tcp://head:8786", None)
    # The same league either way: a server may move between the pool and a cluster without a new name.
    assert identity_hash(on_cluster.identity()) == identity_hash(on_pool.identity())


def league_config(tmp_path: Path, entries: tuple[str, ...] = HOUSE, seed: int = 3) -> LeagueConfig:
    return LeagueConfig(name="ladder", entries=entries, players=2, seed=seed, registry=tmp_path / "bots")


def schedule_of(store: Store, tid: int) -> list[tuple[int, int, int, tuple[str, ...]]]:
    names = {row["id"]: row["name"] for row in store.bots(tid)}
    seats: dict[int, list[str]] = {}
    for row in store.db.execute("SELECT s.match_id, s.bot_id FROM seats s JOIN matches m ON m.id = s.match_id "
                                "WHERE m.tournament_id = ? ORDER BY s.match_id, s.seat", (tid,)):
        seats.setdefault(row["match_id"], []).append(names[row["bot_id"]])
    return [(row["grp"], row["rotation"], row["seed"], tuple(seats[row["id"]]))
            for row in store.db.execute("SELECT * FROM matches WHERE tournament_id = ? ORDER BY idx", (tid,))]


def test_groups_are_duplicate_deals_spread_evenly_and_deterministic(tmp_path: Path) -> None:
    made = []
    for run in ("a", "b"):
        store = Store(tmp_path / run / "arena.db")
        league = League(league_config(tmp_path), store.path)
        tid = league.plan(store, False).tid
        active = league.entrants(store, tid)
        assert league.schedule(store, tid, active, 6) == 12
        made.append(schedule_of(store, tid))
    assert made[0] == made[1]
    matches = made[0]
    for first, second in zip(matches[::2], matches[1::2]):
        assert first[0] == second[0] and first[2] == second[2]  # one deal per group...
        assert second[3] == first[3][::-1]  # ...played in both seat rotations
    played = {name: sum(name in seats for *_, seats in matches) for name in ("greedy", "random", "planner",
                                                                               "js-greedy")}
    assert sorted(played.values()) == [6, 6, 6, 6]  # 12 matches x 2 seats over 4 equally uncertain bots


def submit_copy(tmp_path: Path, name: str, marker: str = "") -> None:
    """Upload sample greedy as ``name`` (another version when ``marker`` changes its files)."""
    copy = tmp_path / "uploads" / name
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(SAMPLES / "greedy", copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "bot.yaml").write_text((copy / "bot.yaml").read_text().replace("name: greedy", f"name: {name}"))
    (copy / "bot.py").write_text((copy / "bot.py").read_text() + marker)
    stored = Registry(tmp_path / "bots").submit(copy, lambda bot, built: check_bot(bot, "process", built=built))
    assert stored.status == "stored", stored.reason


@pytest.mark.slow  # two admission checks in the sandbox
def test_a_new_version_plays_its_pairs_up_and_the_old_one_leaves_the_field(tmp_path: Path) -> None:
    store = Store(tmp_path / "arena.db")
    config = league_config(tmp_path, HOUSE[:3] + ("registry:*",))
    league = League(config, store.path)
    tid = league.plan(store, False).tid
    old = league.entrants(store, tid)
    assert len(old) == 3  # an empty registry is no error: a league may start before any submission
    league.schedule(store, tid, old, 9)  # a field that has met: each pair 3 times
    submit_copy(tmp_path, "shark")
    active = league.entrants(store, tid)
    assert len(active) == 4
    league.schedule(store, tid, active, 3)
    groups = {grp: seats for grp, _, _, seats in schedule_of(store, tid) if grp >= 9}
    assert len(groups) == 3 and all("shark@1" in seats for seats in groups.values())  # it meets its pairs first
    others = sorted(name for seats in groups.values() for name in seats if name != "shark@1")
    assert others == ["greedy", "planner", "random"]  # one of each: every pair of it gets its first meeting
    # Version 2 arrives: with versions: latest, version 1 leaves the field and is marked so in the standings.
    submit_copy(tmp_path, "shark", "\n# version 2\n")
    active = league.entrants(store, tid)
    assert league.state.active == ("greedy", "planner", "random", "shark@2")
    assert {line.name: line.active for line in read_standings(store, tid)}["shark@1"] is False
    league.schedule(store, tid, active, 6)
    assert not any("shark@1" in seats for grp, _, _, seats in schedule_of(store, tid) if grp >= 12)
    # What a restarted league reads back from the store is what this one kept while scheduling.
    kept = league._tally
    assert kept is not None
    again = tally_from_store(store, tid, 2)
    assert again.meetings == kept.meetings and again.played == kept.played
    assert again.shared == pytest.approx(kept.shared)
    assert all(again.fair(bot) == pytest.approx(kept.fair(bot)) for bot in active)
    found = json.loads(CliRunner().invoke(main, ["league", "status", "--db", str(store.path), "--json"]).stdout)
    (entry,) = found["leagues"]
    assert (entry["bots"], entry["left"], entry["spread"]["pairs"]) == (4, 1, 6)
    assert {bot["bot"] for bot in entry["spread"]["bots"]} == {"greedy", "planner", "random", "shark@2"}


def test_league_status_says_in_play_only_while_a_server_holds_the_league(tmp_path: Path) -> None:
    store = Store(tmp_path / "arena.db")
    league = League(league_config(tmp_path, HOUSE[:2]), store.path)
    tid = league.plan(store, False).tid
    league.schedule(store, tid, league.entrants(store, tid), 2)  # 4 matches pending, nothing playing them
    idle = CliRunner().invoke(main, ["league", "status", "--db", str(store.path)])
    assert "4 to play when it is served again" in idle.stdout and "no server is running it" in idle.stdout
    assert "in play" not in idle.stdout
    lease = store.acquire(league.name)  # what a server holds while it runs
    served = CliRunner().invoke(main, ["league", "status", "--db", str(store.path), "--json"])
    assert json.loads(served.stdout)["leagues"][0]["served_by"].startswith(f"PID {os.getpid()} on ")
    assert "4 in play" in CliRunner().invoke(main, ["league", "status", "--db", str(store.path)]).stdout
    store.release(lease)

def test_league_status_names_a_leader_in_the_field(tmp_path: Path) -> None:
    store = Store(tmp_path / "arena.db")
    league = League(league_config(tmp_path, HOUSE[:3]), store.path)
    tid = league.plan(store, False).tid
    league.schedule(store, tid, league.entrants(store, tid), 6)
    names = {int(row["slot"]): str(row["name"]) for row in store.bots(tid)}
    for match in store.scheduled(tid, "pending"):  # planner wins every match it plays, greedy the rest
        seated = [names[slot] for slot in match.bots]
        order = sorted(range(len(seated)), key=lambda seat: (seated[seat] != "planner", seated[seat] != "greedy"))
        store.record_match(tid, match.index, synthetic_result(match.seed, seated, order), 1)
    ids = {name: int(row["id"]) for row in store.bots(tid) for name in [row["name"]]}
    store.set_active(tid, [ids["greedy"], ids["random"]])  # what entrants() does when planner's entry goes
    # planner has the best record but is no longer in the league: the standings rank the field, planner below it.
    assert [line.name for line in read_standings(store, tid)] == ["greedy", "random", "planner"]
    status = CliRunner().invoke(main, ["league", "status", "--db", str(store.path)])
    assert status.exit_code == 0, status.output
    assert "leader greedy" in status.stdout and "2 bots in the field (1 left)" in status.stdout
    assert "pairs in the field met" in status.stdout and "throttled" not in status.stdout  # all as fast
    standings = CliRunner().invoke(main, ["standings", "--db", str(store.path), "--json"]).stdout
    assert [(line["bot"], line["active"], line["rank"], line["shared_rank"])
            for line in json.loads(standings)["standings"]] == [
        ("greedy", True, 1, "-"), ("random", True, 2, "-"), ("planner", False, None, "left")]
    assert "planner (left)" in CliRunner().invoke(main, ["standings", "--db", str(store.path)]).stdout
    # The site's home page names the same leader (as /api/standings, whose first line is read_standings' first).
    assert home_page(store).tournaments[0].leader == "greedy"


def test_each_batch_clears_the_stderr_of_a_bots_seats_but_its_latest_keep_stderr_matches(tmp_path: Path) -> None:
    store = Store(tmp_path / "arena.db")
    config = dataclasses.replace(league_config(tmp_path, HOUSE[:2]), groups_per_batch=2, keep_stderr=3)
    league = League(config, store.path)
    plan = league.plan(store, False)
    batches = league.batches(plan, store)
    for _ in range(3):  # three batches of 4 matches, each bot in every one; the fourth is scheduled, not played
        for job in next(batches):
            played = synthetic_result(job.seed, [bot.name for bot in job.bots], [0, 1])
            noisy = tuple(dataclasses.replace(seat, stderr_tail=f"{seat.name} in {job.index}\n" * 500)
                          for seat in played.players)
            store.record_match(plan.tid, job.index, dataclasses.replace(played, players=noisy), 1)
    next(batches)
    kept = [(m.idx, seat.name, seat.stderr_tail) for m in store.matches(plan.tid)
            if m.result is not None for seat in m.result.players]
    assert len(kept) == 24  # 12 matches played
    assert sorted((index, name) for index, name, text in kept if text) == [
        (index, name) for index in (9, 10, 11) for name in sorted(("greedy", "random"))]
    assert all(text == f"{name} in {index}\n" * 500 for index, name, text in kept if text)


def test_the_throttle_charges_each_bot_its_own_think_time_at_a_full_table(tmp_path: Path) -> None:
    # 4 bots at 3 seats; random thinks 3x as long as the others in every match. The match-time rule saw random's
    # matches at only 1.15x the median's (the others share its tables) and never engaged; each bot's own think time
    # throttles random to a third, and no bot that merely sat with it.
    store = Store(tmp_path / "arena.db")
    config = dataclasses.replace(league_config(tmp_path, HOUSE), players=3, groups_per_batch=2)
    league = League(config, store.path)
    plan = league.plan(store, False)
    batches = league.batches(plan, store)
    for _ in range(3):
        for job in next(batches):
            played = synthetic_result(job.seed, [bot.name for bot in job.bots], [0, 1, 2])
            timed = tuple(dataclasses.replace(seat, think_ms=900 if seat.name == "random" else 300)
                          for seat in played.players)
            result = dataclasses.replace(played, players=timed, duration_s=sum(seat.think_ms for seat in timed) / 1000)
            store.record_match(plan.tid, job.index, result, 1)
            league.add(job, JobResult(job.index, 1, result))
    next(batches)
    assert league.state.throttled == {"random": {"weight": 0.3333, "seconds_per_match": 0.9}}
    assert store.think_seconds(plan.tid)[league._ids["random"]][1] == pytest.approx(
        0.9 * store.think_seconds(plan.tid)[league._ids["random"]][0])
    status = CliRunner().invoke(main, ["league", "status", "--db", str(store.path)])
    assert "random is throttled to 33% of its share" in status.stdout and "greedy is" not in status.stdout


def chain_members(batch: Sequence[MatchJob]) -> set[tuple[int, ...]]:
    """Each chain of a batch as its matches' indices (chain numbers aside: they only name a chain's lanes)."""
    members: dict[int, list[int]] = {}
    for job in batch:
        assert job.chain is not None
        members.setdefault(job.chain.chain, []).append(job.index)
    return {tuple(indices) for indices in members.values()}


def test_a_batchs_chains_are_the_same_after_a_restart_with_some_of_them_stored(tmp_path: Path) -> None:
    # With reuse, what a process remembers is part of the results: a league stopped mid-batch (its chains stored
    # whole or not at all) must play the rest in the chains they had.
    store = Store(tmp_path / "arena.db")
    config = dataclasses.replace(league_config(tmp_path, HOUSE), players=3, groups_per_batch=5, reuse=Reuse(2))
    league = League(config, store.path)
    plan = league.plan(store, False)
    batch = next(league.batches(plan, store))
    chains = chain_members(batch)
    # 5 groups of 3 rotations in blocks of 2 groups: 3 blocks, 3 chains each, of 2, 2 and 1 matches.
    assert sorted(map(len, chains)) == [1] * 3 + [2] * 6
    seeds = {job.index: job.seed for job in batch}
    assert all(len({seeds[index] for index in chain}) == len(chain) for chain in chains)  # one match per deal
    stored = [chain for chain in sorted(chains) if len(chain) == 2][1:4]  # parts of two blocks
    by_index = {job.index: job for job in batch}
    store.record_results(plan.tid, [(index, synthetic_result(seeds[index], [bot.name for bot in by_index[index].bots],
                                                             [0, 1, 2]), 1, "") for chain in stored for index in chain])
    store.close()
    restarted = Store(tmp_path / "arena.db")
    again = League(config, restarted.path)
    rest = next(again.batches(again.plan(restarted, False), restarted))
    assert chain_members(rest) == chains - set(stored)


def synthetic_result(seed: int, names: list[str], order: list[int]) -> MatchResult:
    """A finished match in which the seats finish in ``order`` (best first)."""
    place = {seat: rank + 1 for rank, seat in enumerate(order)}
    seats = tuple(SeatResult(seat=seat, name=name, files_hash="0" * 64, place=place[seat], score=10 * place[seat],
                             stats=SeatStats(3, 9, 10, 1, 0), fault=None, stderr_tail="", bank_left_ms=0)
                  for seat, name in enumerate(names))
    return MatchResult(seed=seed, rules=Rules(), termination=Termination.FIRST_OUT, rounds=3, turns=9,
                       players=seats, duration_s=0.5, log_path=None)


def test_a_changed_config_or_house_bot_is_refused(tmp_path: Path) -> None:
    house = tmp_path / "house"
    shutil.copytree(SAMPLES / "greedy", house, ignore=shutil.ignore_patterns("__pycache__"))
    store = Store(tmp_path / "arena.db")
    entries = (str(house), HOUSE[1])
    league = League(league_config(tmp_path, entries), store.path)
    league.entrants(store, league.plan(store, False).tid)
    with pytest.raises(LeagueError, match="different config"):
        League(league_config(tmp_path, entries, seed=4), store.path).plan(store, False)
    (house / "bot.py").write_text((house / "bot.py").read_text() + "\n# tweaked\n")
    restarted = League(league_config(tmp_path, entries), store.path)
    with pytest.raises(LeagueError, match="the files of 'greedy' changed since it entered league 'ladder'"):
        restarted.entrants(store, restarted.plan(store, False).tid)


def test_the_web_views_see_every_commit_and_every_new_registry_version(tmp_path: Path) -> None:
    from arena.server.views import Views

    db = tmp_path / "arena.db"
    writer = Store(db)
    views = Views(db, Registry(tmp_path / "bots"))
    made: list[int] = []

    def listing() -> int:
        made.append(views.generation)
        return len(made)

    key = (views.refresh(), views.registry_signature())
    assert views.cached("x", key, listing) == views.cached("x", key, listing) == 1  # made once per key
    token = add_author(writer, "alice")  # another connection commits: the next refresh sees it
    found = views.authenticate(token)
    assert found is not None and found.name == "alice"
    revoke_author(writer, "alice")
    assert views.authenticate(token) is None  # at once, not after some expiry
    before = views.registry_signature()
    index = tmp_path / "bots" / "shark" / "versions.json"
    index.parent.mkdir(parents=True)
    index.write_text('{"versions": []}')
    assert views.registry_signature() != before
    views.close()
    writer.close()


def test_the_author_page_shows_a_versions_build_report_when_it_has_one() -> None:
    from arena.server.pages import environment
    from arena.site.urls import Crumb

    check = {"bot": "shark", "fit": True, "seconds": 1.0,
             "steps": [{"step": "manifest", "ok": True, "expected": "a bot.yaml", "got": "name shark", "advice": []}]}
    built = {**check, "steps": [{"step": "build", "ok": True, "expected": "make exits 0", "got": "built in 2.1 s",
                                 "advice": [], "stderr_tail": "cc -O2 -o bot bot.c"}, *check["steps"]]}
    build = {"ok": False, "command": "cargo build --release", "seconds": 12.5,
             "log_tail": "error[E0425]: cannot find value `x`\n --> src/main.rs:3:5"}
    html = environment().get_template("author.html").render(
        root="/site/", page={"crumbs": [Crumb("ladder", "index.html"), Crumb("alice's bots", None)]},
        league="ladder", csrf="c", author="alice", matches=[],
        bots=[{"name": "shark", "versions": [{"version": 1, "submitted_at": "2026-01-01T00:00:00Z",
                                              "files_hash": "ab" * 32, "source_hash": "ef" * 32, "check": built},
                                             {"version": 2, "submitted_at": "2026-01-02T00:00:00Z",
                                              "files_hash": "cd" * 32, "check": check, "build": build,
                                              "throttled": {"weight": 0.02, "seconds_per_match": 61.5}}]}])
    assert html.count('class="build-report"') == 1 and "Build report: failed" in html
    assert "cargo build --release" in html and "cannot find value `x`" in html
    assert html.count("Check report: passed") == 2 and 'id="no-matches"' in html
    # A compiled bot's build as a step of its check: its log is labelled as one, and the source's hash is shown.
    assert "build log (shown only to you)" in html and "cc -O2 -o bot bot.c" in html and "built from" in html
    # A version the league throttles for its slow matches is told so, with the numbers.
    assert html.count("Throttled:") == 1 and "take 61.5 s on average" in html and "plays 2% of its share" in html


def test_an_error_shown_to_the_public_names_no_server_path() -> None:
    error = StoreError("/srv/arena/results/arena.db: cannot use the store (disk I/O error) in '/srv/arena/logs/'")
    assert public_error(error) == "StoreError: arena.db: cannot use the store (disk I/O error) in 'logs'"
    assert public_error(OSError(28, "No space left on device", "/var/lib/arena/bots/.incoming/u1/fill3")) == \
        "OSError: [Errno 28] No space left on device: 'fill3'"
    assert public_error(LeagueError("league 'x' needs 2 bots")) == "LeagueError: league 'x' needs 2 bots"


def wait_until(what: str, done: Callable[[], bool], league: League, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}: {league.state.to_dict()}"
        time.sleep(0.1)


@pytest.mark.slow  # real matches, and a tmpfs filled and emptied
def test_a_full_disk_pauses_the_league_and_it_goes_on_when_space_returns(tiny_disk: Path, tmp_path: Path) -> None:
    db = tiny_disk / "arena.db"
    league = League(league_config(tmp_path, HOUSE[:2]), db)
    with league_playing(league) as thread:
        wait_until("a first batch", lambda: league.state.matches_played >= 2, league)
        filler = fill(tiny_disk, 16 * 1024)
        wait_until("the pause", lambda: league.state.state.startswith("paused: the disk is full"), league)
        assert league.state.error is not None and str(tiny_disk) not in league.state.error
        status = CliRunner().invoke(main, ["league", "status", "--db", str(db)])
        assert "paused: the disk under the store is full" in status.stdout, status.output
        played = league.state.matches_played
        filler.unlink()  # space returns: the league goes on by itself, no restart
        wait_until("the league to play again", lambda: league.state.matches_played > played, league)
        assert league.state.error is None and league.state.errors >= 1
        assert thread.is_alive()
    assert Store(db, readonly=True).status_counts(1).get("failed", 0) == 0


@pytest.mark.slow  # real matches
def test_the_league_tries_again_after_an_error_and_says_why(tmp_path: Path) -> None:
    store = Store(tmp_path / "arena.db")
    lease = store.acquire("ladder")  # another runner holds the league: every attempt to play is refused
    league = League(league_config(tmp_path, HOUSE[:2]), store.path)
    with league_playing(league) as thread:
        # Read as one snapshot, paused between tries (the state is "running" while a try is under way).
        wait_until("a second try", lambda: (now := league.state).errors >= 2
                   and now.state.startswith("paused by an error: trying again in"), league)
        assert (league.state.error or "").startswith("LeaseHeldError: league ladder is being run by PID")
        store.release(lease)  # the other runner is gone: the league goes on by itself
        wait_until("the league to play", lambda: league.state.matches_played >= 2, league)
        assert league.state.error is None and thread.is_alive()


class HeldByTheLoop(RunningRatings):
    """The league's own running ratings which, after a batch is rated (between batches, in the league's thread),
    also note how many bytes the run's code holds: the live allocations whose frame is in ``arena/run/``, by
    tracemalloc. Measured at the same point of every batch, so what is in flight does not blur it."""

    def __init__(self, league: League, every: int) -> None:
        super().__init__(league.config.rating)
        self.every = every
        self.held: list[tuple[int, int]] = []

    def after_batch(self, store: Store, tid: int) -> None:
        super().after_batch(store, tid)
        done = store.status_counts(tid).get("done", 0)
        if done >= self.every * (len(self.held) + 1):
            gc.collect()
            run_code = tracemalloc.Filter(True, str(Path(arena.run.__file__).parent / "*"))
            snapshot = tracemalloc.take_snapshot().filter_traces([run_code])
            self.held.append((done, sum(stat.size for stat in snapshot.statistics("filename"))))


@pytest.mark.slow  # 120 real matches: 32-44 s at load 12 on 2 cores, beside the league soak in the long tests
@pytest.mark.long
def test_what_a_league_holds_does_not_grow_with_its_matches(tmp_path: Path) -> None:
    """Issue 44: a league server's memory grew with the matches played. What the league's code keeps between
    batches (its ratings, tallies, timings, the loop's progress) is bounded per bot, not per match: after 40
    matches and after 120 it holds the same, within a few bytes a match (the loop's progress kept three seats a
    match, over 100 bytes each, for the leader's confidence that only a runner's display reads)."""
    config = dataclasses.replace(league_config(tmp_path, HOUSE[:2]), rules=Rules(threshold=25), workers=2,
                                 groups_per_batch=4)
    league = League(config, tmp_path / "arena.db")
    held = league.ratings = HeldByTheLoop(league, every=40)
    store = Store(league.db)
    league.claim(store)
    store.close()
    tracemalloc.start()
    try:
        with league_playing(league):
            deadline = time.monotonic() + 600  # a hang guard: 120 matches take a minute or two
            while len(held.held) < 3 and time.monotonic() < deadline:
                time.sleep(0.2)
    finally:
        tracemalloc.stop()
    assert len(held.held) == 3, held.held
    (first, first_bytes), _, (last, last_bytes) = held.held
    assert (last_bytes - first_bytes) / (last - first) < 16, held.held
