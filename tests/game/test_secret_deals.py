"""Deals nobody can derive (docs/SECURITY.md, "What a bot can learn"): every deal seed is a keyed hash of a secret,
the secret is shown nowhere (site, API, CLI, logs), and a group's deal seeds, event logs and replays are public only
once every match of the group has been played.

The scan is the red team's (review C1): the first 10,000 outputs of ``random.Random`` seeded with each public string
of a config, as ``getrandbits(63)`` and as 32-bit words put together as ``getrandbits(63)`` does at every offset. The
controls show that it finds the deal seeds of the scheme it replaced, so that these tests can fail.
"""

from __future__ import annotations

import gzip
import itertools
import json
import random
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import httpx
import pytest
import yaml
from click.testing import CliRunner

from arena.cli.main import main
from arena.game.rules import Rules
from arena.run.config import ConfigError, LeagueConfig, load_config, seed_bits
from arena.run.jobs import run_job
from arena.run.league import League
from arena.run.plan import plan_tournament
from arena.run.tournament import run_tournament
from arena.schedule import deal_seed
from arena.server.public import publish
from arena.site.build import build_site
from arena.store import Store
from tests.support.docker import require_docker
from tests.support.runs import league_playing

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_bots"
HOUSE = tuple(str(SAMPLES / name) for name in ("greedy", "random", "planner"))
WORDS = 10_000


def scan(public: str | int, words: int = WORDS) -> set[int]:
    """Every 63-bit value among the first ``words`` outputs of ``random.Random(public)``: as ``getrandbits(63)``, and
    as each pair of consecutive 32-bit words (low word first, the high one shifted right by one: what
    ``getrandbits(63)`` makes of two words), at every offset."""
    rng = random.Random(public)
    found = {rng.getrandbits(63) for _ in range(words)}
    rng = random.Random(public)
    stream = [rng.getrandbits(32) for _ in range(words + 1)]
    found.update((high >> 1) << 32 | low for low, high in itertools.pairwise(stream))
    return found


def public_strings(config: dict[str, object], groups: int) -> list[str | int]:
    """What a bot could seed a generator with from a public config: its seed as it is and as text, its name, and
    the strings the old scheme seeded its deal streams with (for a config without a seed, as Python spells None)."""
    seed = config.get("seed")
    found: list[str | int] = [str(seed), f"{seed}/deals", f"{seed}/groups", f"{seed}/seats", str(config["name"]),
                              f"{config['name']}/deals"]
    found += [f"{seed}/league/{first}" for first in range(groups + 1)]
    if isinstance(seed, int):
        found.append(seed)
    return found


def deal_seeds(store: Store, name: str) -> dict[int, int]:
    """Each group's deal seed as the store holds it."""
    row = store.tournament(name)
    assert row is not None
    return {match.group: match.seed for match in store.scheduled(row["id"], "pending", "done", "failed")}


def write_config(directory: Path, **settings: object) -> Path:
    config = {"name": "t", "bots": [str(SAMPLES / "greedy"), str(SAMPLES / "random")], "players": 2,
              "repeats": 4, "rules": {"threshold": 25}, "sandbox": "process", "workers": 2} | settings
    path = directory / "t.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


# -- deal seeds ----------------------------------------------------------------------------------------------------


def test_the_scan_finds_the_old_schemes_deal_seeds() -> None:
    # The control: the red team's tournament (seed 31337, 4 deals) and a league's batch as the old code drew them.
    old = random.Random("31337/deals")
    tournament = [old.getrandbits(63) for _ in range(4)]
    assert set(tournament) <= scan("31337/deals")
    league = random.Random("2026/league/17")
    for _ in range(7):  # the tie-breaks the matchmaker drew before each group's deal
        league.random()
    found = league.getrandbits(63)
    assert found in scan("2026/league/17")
    assert deal_seed(31337, "deal", 0) not in scan("31337/deals")


@pytest.mark.parametrize("seed", [31337, None])
def test_no_deal_seed_of_a_new_tournament_comes_out_of_a_public_generator(tmp_path: Path, seed: int | None) -> None:
    settings: dict[str, object] = {} if seed is None else {"seed": seed}
    config = load_config(write_config(tmp_path, **settings))
    store = Store(tmp_path / "arena.db")
    plan_tournament(config, store)
    seeds = deal_seeds(store, "t")
    assert len(seeds) == 4 and len(set(seeds.values())) == 4
    public = set().union(*(scan(text) for text in public_strings({"name": "t", "seed": seed}, 4)))
    assert not set(seeds.values()) & public
    # Each is the keyed hash of the secret and the group's number, the secret being the seed or one kept in the store.
    row = store.tournament("t")
    assert row is not None
    secret = store.secret(row["id"])
    assert secret is not None and (secret == str(seed) if seed is not None else len(secret) == 64)
    assert seeds == {group: deal_seed(secret, "deal", group) for group in range(4)}


@pytest.mark.parametrize("seed", [2026, None])
def test_no_deal_seed_of_a_new_league_comes_out_of_a_public_generator(tmp_path: Path, seed: int | None) -> None:
    store = Store(tmp_path / "arena.db")
    config = LeagueConfig(name="ladder", entries=HOUSE, players=2, seed=seed, registry=tmp_path / "bots")
    league = League(config, store.path)
    tid = league.plan(store, False).tid
    league.schedule(store, tid, league.entrants(store, tid), 12)
    seeds = deal_seeds(store, "ladder")
    assert len(seeds) == 12
    public = set().union(*(scan(text) for text in public_strings({"name": "ladder", "seed": seed}, 12)))
    assert not set(seeds.values()) & public
    secret = store.secret(tid)
    assert secret is not None and (secret == str(seed) if seed is not None else len(secret) == 64)
    assert seeds == {group: deal_seed(secret, "league", group) for group in range(12)}
    # A restarted league deals its next groups from the secret it kept.
    store.close()
    store = Store(tmp_path / "arena.db")
    again = League(config, store.path)
    again.schedule(store, again.plan(store, False).tid, again.entrants(store, tid), 2)
    assert deal_seeds(store, "ladder") == {group: deal_seed(secret, "league", group) for group in range(14)}


def test_a_generated_secret_survives_a_resume_and_fresh_makes_a_new_one(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path))
    assert config.seed is None
    store = Store(tmp_path / "arena.db")
    first = plan_tournament(config, store)
    store.close()
    store = Store(tmp_path / "arena.db")
    resumed = plan_tournament(config, store)
    assert resumed.secret == first.secret and len(first.secret) == 64
    assert [m.seed for m in resumed.schedule] == [m.seed for m in first.schedule]
    fresh = plan_tournament(config, store, fresh=True)
    assert fresh.secret != first.secret
    assert not {m.seed for m in fresh.schedule} & {m.seed for m in first.schedule}


def test_a_configured_seed_gives_the_same_deals_in_any_store(tmp_path: Path) -> None:
    seed = secrets.token_hex(16)
    made = []
    for where in ("a", "b"):
        (tmp_path / where).mkdir()
        config = load_config(write_config(tmp_path / where, seed=seed))
        made.append([(m.index, m.seed, m.bots) for m in plan_tournament(config, Store(tmp_path / where / "a.db"))
                     .schedule])
    assert made[0] == made[1]


def test_a_run_stored_before_keyed_deals_resumes_on_its_own_deals(tmp_path: Path) -> None:
    # A store written before the secret column: its config holds the seed, its matches the old scheme's seeds.
    config = load_config(write_config(tmp_path, seed=9))
    store = Store(tmp_path / "arena.db")
    plan_tournament(config, store)
    old = random.Random("9/deals")
    old_seeds = [old.getrandbits(63) for _ in range(4)]
    with store.atomic() as db:
        for group, seed in enumerate(old_seeds):
            db.execute("UPDATE matches SET seed = ? WHERE grp = ?", (seed, group))
        db.execute("UPDATE tournaments SET config = json_set(config, '$.seed', 9)")
        db.execute("ALTER TABLE tournaments DROP COLUMN secret")
        db.execute("DROP INDEX matches_not_done")
        db.execute("DELETE FROM _migrations WHERE name = '0007_deal_secrets'")
    store.close()
    # Read as a read-only command reads it, before any run migrates it: the seed is in no row shown, and every
    # group (none played) is sealed.
    reader = Store(tmp_path / "arena.db", readonly=True)
    row = reader.tournament("t")
    assert row is not None and "seed" not in json.loads(row["config"])
    assert all(match.sealed and match.to_dict()["seed"] is None for match in reader.matches(row["id"]))
    reader.close()
    store = Store(tmp_path / "arena.db")  # migrates: the seed moves out of the config into the secret
    row = store.tournament("t")
    assert row is not None and "seed" not in json.loads(row["config"]) and store.secret(row["id"]) == "9"
    plan = plan_tournament(config, store)
    assert {m.group: m.seed for m in plan.schedule} == dict(enumerate(old_seeds))


# -- the seed in the config ----------------------------------------------------------------------------------------


def test_a_short_seed_is_warned_about_without_being_shown(tmp_path: Path) -> None:
    runner = CliRunner()
    short = runner.invoke(main, ["run", str(write_config(tmp_path, seed=31337)), "--dry-run", "--json"])
    assert short.exit_code == 0, short.output
    (warning,) = short.stderr.splitlines()
    assert warning.startswith(f"warning: {tmp_path / 't.yaml'}: seed: easy to guess") and "leave seed out" in warning
    assert "31337" not in warning and "31337" not in short.stdout
    for quiet in ({}, {"seed": secrets.token_hex(16)}):
        result = runner.invoke(main, ["run", str(write_config(tmp_path, **quiet)), "--dry-run", "--json"])
        assert result.exit_code == 0 and result.stderr == ""
    assert seed_bits("correcthorse") < 64 <= seed_bits(secrets.token_hex(16)) and seed_bits(2**63 - 1) < 64


@pytest.mark.parametrize("seed, words", [(-4, "got a negative integer"), ([1, 2], "got a list"),
                                         ("", "got a string of 0 characters")])
def test_a_bad_seed_is_refused_without_being_echoed(tmp_path: Path, seed: object, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(write_config(tmp_path, seed=seed))
    assert f"{tmp_path / 't.yaml'}: seed: expected a non-negative integer or a string" in str(caught.value)
    assert words in str(caught.value)


# -- what is shown, and when ---------------------------------------------------------------------------------------


def site_text(out: Path) -> dict[str, str]:
    """Every file of a built site as text (gzip-compressed logs decompressed)."""
    found = {}
    for path in out.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            found[str(path.relative_to(out))] = (gzip.decompress(data) if path.suffix == ".gz" else data).decode(
                errors="replace")
    return found


def holding(texts: dict[str, str], needle: str) -> list[str]:
    return [name for name, text in texts.items() if needle in text]


def cli_outputs(db: Path, match_ids: Iterable[int]) -> str:
    runner = CliRunner()
    said = [runner.invoke(main, [*command, "--db", str(db)]) for command in (
        ["standings", "--json"], ["standings"], ["matches", "--json"], ["matches"],
        *(["show", str(match_id), *extra] for match_id in match_ids for extra in ([], ["--json"])))]
    assert all(result.exit_code == 0 for result in said), [result.output for result in said]
    return "\n".join(result.output for result in said)


@pytest.mark.slow  # a real tournament of 8 matches in the process sandbox, and two site builds
def test_the_secret_is_shown_nowhere_and_a_groups_seeds_only_once_it_is_played(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path))
    store = Store(tmp_path / "arena.db")
    report = run_tournament(config, store, workers=2)
    assert report.played == 8 and report.failed == 0
    tid = store.tournament("t")["id"]  # type: ignore[index]
    secret = store.secret(tid)
    assert secret is not None
    seeds = deal_seeds(store, "t")
    assert seeds == {group: deal_seed(secret, "deal", group) for group in range(4)}
    # Group 3 as a run leaves it when one of its rotations failed: it will be played again, so it is sealed.
    done, again = [m for m in store.matches(tid) if m.result is not None and seeds[3] == m.seed]
    store.record_failure(tid, again.idx, "attempt 1: the sandbox went away", 1)
    assert store.sealed_groups(tid) == {3}
    out = tmp_path / "site"
    build_site(store, out)
    texts = site_text(out)
    assert not holding(texts, secret)
    assert not holding(texts, str(seeds[3]))  # in no page, listing, download, data file or log
    assert all(holding(texts, str(seeds[group])) for group in range(3))
    assert f"t/t/matches/{done.id}.html" in texts and f"t/t/matches/{done.id}.jsonl.gz" not in texts
    assert f"t/t/matches/{done.id}.js" not in texts and "once every rotation of its deal" in texts[
        f"t/t/matches/{done.id}.html"]
    said = cli_outputs(store.path, [m.id for m in store.matches(tid)])
    assert secret not in said and str(seeds[3]) not in said and str(seeds[0]) in said
    # The run resumed plays the failed rotation on its group's deal; the group is over, and all is published.
    again_run = CliRunner().invoke(main, ["run", str(tmp_path / "t.yaml"), "--db", str(store.path), "--json",
                                          "--site", str(out)])
    assert again_run.exit_code == 0, again_run.output
    assert json.loads(again_run.stdout)["played"] == 1 and secret not in again_run.output
    assert store.sealed_groups(tid) == frozenset() and deal_seeds(store, "t") == seeds
    texts = site_text(out)
    assert not holding(texts, secret) and holding(texts, str(seeds[3]))
    assert f"t/t/matches/{done.id}.jsonl.gz" in texts and f"t/t/matches/{done.id}.js" in texts
    verified = CliRunner().invoke(main, ["replay", str(out / f"t/t/matches/{done.id}.jsonl.gz"), "--verify"])
    assert verified.exit_code == 0, verified.output
    # What the builds made of the group while it was sealed (no think times, no log) is all made again: the site
    # is the one a build from scratch makes.
    build_site(store, tmp_path / "scratch")
    fresh = site_text(tmp_path / "scratch")
    assert {name for name in texts if texts[name] != fresh.get(name)} <= {".arena-site.json"}
    assert secret not in cli_outputs(store.path, [m.id for m in store.matches(tid)])


LEAGUE = """\
league:
  name: ladder
  bots: [{greedy}, {random}]
  players: 2
  rules: {{threshold: 25}}
  workers: 1
"""


@pytest.mark.slow  # a league server playing real matches for a few seconds
def test_a_league_keeps_its_secret_from_the_api_the_site_and_its_log(tmp_path: Path) -> None:
    config = tmp_path / "league.yaml"
    config.write_text(LEAGUE.format(greedy=SAMPLES / "greedy", random=SAMPLES / "random"))
    db = tmp_path / "results" / "arena.db"
    port = free_port()
    with open(tmp_path / "serve.log", "wb") as log:
        server = subprocess.Popen([sys.executable, "-m", "arena", "serve", str(config), "--port", str(port),
                                   "--db", str(db)], stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
    answers = []
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                league = httpx.get(f"http://127.0.0.1:{port}/api/league", timeout=5).json()
                if league["matches"].get("done", 0) >= 4:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.3)
        else:
            raise AssertionError("the league played no 4 matches: " + (tmp_path / "serve.log").read_text()[-2000:])
        for path in ("/api/league", "/api/standings", "/api/bots", "/", "/site/index.html"):
            answer = httpx.get(f"http://127.0.0.1:{port}{path}", timeout=30)
            assert answer.status_code == 200, path
            answers.append(answer.text)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    store = Store(db)
    tid = store.tournament("ladder")["id"]  # type: ignore[index]
    secret = store.secret(tid)
    assert secret is not None and len(secret) == 64  # made when the league was created: none was configured
    status = [CliRunner().invoke(main, ["league", "status", *extra, "--db", str(db)]) for extra in ([], ["--json"])]
    assert all(result.exit_code == 0 for result in status)
    served = "\n".join(answers + [result.output for result in status]) + (tmp_path / "serve.log").read_text()
    assert secret not in served
    # One more group scheduled and not played: its deal seed, like the secret, is in no file of the public site.
    league = League(load_league(config, tmp_path), db)
    plan = league.plan(store, False)
    league.schedule(store, plan.tid, league.entrants(store, tid), 1)
    sealed = {deal_seeds(store, "ladder")[group] for group in store.sealed_groups(tid)}
    out = tmp_path / "published"
    publish(store, "ladder", out)
    texts = site_text(out)
    assert sealed and not holding(texts, secret) and not any(holding(texts, str(seed)) for seed in sealed)
    over = [seed for group, seed in deal_seeds(store, "ladder").items() if group not in store.sealed_groups(tid)]
    assert over and all(holding(texts, str(seed)) for seed in over)
    # Played (in the process sandbox, as the league plays them), the groups are over: the next publish shows them.
    for job in league.pending_jobs(store, plan):
        played = run_job(job)
        assert played.result is not None, played.error
        store.record_match(tid, job.index, played.result, played.attempts)
    assert store.sealed_groups(tid) == frozenset()
    publish(store, "ladder", out)
    texts = site_text(out)
    assert all(holding(texts, str(seed)) for seed in sealed) and not holding(texts, secret)


def load_league(config: Path, root: Path) -> LeagueConfig:
    from arena.server.config import load_serve_config

    return load_serve_config(config, root / "results" / "bots").league


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# -- a cheater: a bot that searches for its deal's seed from its own view ------------------------------------------

SEARCHER = '''\
"""Greedy, plus a search at round 1 for the deal seed among what the public config gives: the old scheme's streams
from the config's seed, and the keyed scheme with every small secret. It reports what it learnt on stderr."""
import hashlib, hmac, json, os, random, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import arena_bot
from greedy import GreedyBot
from arena.game.engine import Match
from arena.game.rules import Rules

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "public.json")) as known:
    KNOWN = json.load(known)  # what the author knows: the public seed, the kind of run, how many groups
PUBLIC = KNOWN["public"]


def keyed(secret, *identity):
    digest = hmac.new(str(secret).encode(), "/".join(map(str, identity)).encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def candidates():
    if KNOWN["kind"] == "league":
        for first in range(KNOWN["groups"]):  # each batch's stream, as getrandbits(63) at every word offset
            old = random.Random(f"{PUBLIC}/league/{first}")
            words = [old.getrandbits(32) for _ in range(100)]
            yield from ((high >> 1) << 32 | low for low, high in zip(words, words[1:]))
    else:
        old = random.Random(f"{PUBLIC}/deals")
        yield from (old.getrandbits(63) for _ in range(64))
    for secret in [PUBLIC, *range(KNOWN["secrets"])]:
        yield from (keyed(secret, KNOWN["kind"], group) for group in range(KNOWN["groups"]))


class Searcher(GreedyBot):
    def on_hello(self, message):
        super().on_hello(message)
        self.players = len(message["players"])

    def on_message(self, message):
        if message.get("type") != "round_start" or message["round"] != 1:
            return
        rules = Rules.from_dict(self.rules)
        tried = 0
        for seed in candidates():
            tried += 1
            match = Match(self.players, seed, rules)
            if sorted(match.hands[self.seat]) == sorted(message["hand"]) and list(match.floor) == message["floor"]:
                arena_bot.log("LEARNED " + json.dumps({"seed": seed, "hands": [list(h) for h in match.hands]}))
                return
        arena_bot.log(f"LEARNED nothing ({tried} seeds tried)")


if __name__ == "__main__":
    arena_bot.run(Searcher())
'''


def searcher(where: Path, public: str, kind: str = "deal", groups: int = 8, secrets_below: int = 1000) -> Path:
    """The searcher bot, with the engine's own code beside it (a bot may ship any code) and the config's seed as its
    author knows it."""
    bot = where / "searcher"
    (bot / "arena" / "game").mkdir(parents=True)
    (bot / "arena" / "__init__.py").write_text("")
    for module in ("__init__", "cards", "rules", "results", "engine"):
        (bot / "arena" / "game" / f"{module}.py").write_text((ROOT / "arena" / "game" / f"{module}.py").read_text())
    (bot / "greedy.py").write_text((SAMPLES / "greedy" / "bot.py").read_text())
    (bot / "bot.py").write_text(SEARCHER)
    (bot / "public.json").write_text(json.dumps({"public": public, "kind": kind, "groups": groups,
                                                 "secrets": secrets_below}))
    (bot / "bot.yaml").write_text("name: searcher\ncommand: python3 bot.py\n")
    return bot


@pytest.mark.slow  # three 4-match tournaments with workers: 2 in the sandbox
@pytest.mark.parametrize("sandbox", ["process", "docker"])
def test_a_bot_that_searches_for_its_deals_seed_learns_nothing_unless_the_seed_is_short(
        tmp_path: Path, sandbox: str) -> None:
    if sandbox == "docker":
        require_docker()
    learnt = {}
    for case, seed in (("generated", None), ("long", secrets.token_hex(16)), ("short", 7)):
        where = tmp_path / case
        where.mkdir()
        # What its author can know: a configured seed is as secret as the generated one (docs/SECURITY.md), so
        # the bot tries the seed of no config ("None", the old scheme's streams), and every small secret.
        bot = searcher(where, "None")
        settings: dict[str, object] = {"bots": [str(bot), str(SAMPLES / "random")], "repeats": 2,
                                       "sandbox": sandbox, "limits": {"move_ms": 2000, "hello_ms": 10000}}
        if seed is not None:
            settings["seed"] = seed
        config = load_config(write_config(where, **settings))
        store = Store(where / "arena.db")
        report = run_tournament(config, store, workers=2)
        assert report.played == 4 and report.failed == 0
        said = []
        for match in store.matches(store.tournament("t")["id"]):  # type: ignore[index]
            assert match.result is not None and match.log_path is not None
            (seat,) = [p for p in match.result.players if p.name == "searcher"]
            assert seat.fault is None, seat.fault
            (line,) = [line for line in seat.stderr_tail.splitlines() if line.startswith("LEARNED")]
            events = [json.loads(record)["event"] for record in gzip.decompress(match.log_path.read_bytes())
                      .splitlines() if b'"t":"event"' in record]
            dealt = next(event for event in events if event["type"] == "round_start")["hands"]
            said.append((line, dealt))
        learnt[case] = said
    for case in ("generated", "long"):  # the search ran, and found nothing
        assert all(line == "LEARNED nothing (8072 seeds tried)" for line, _ in learnt[case]), learnt[case]
    # The control: a seed of a few bits is found from a bot's own hand, and with it every hand, as the log has them.
    for line, dealt in learnt["short"]:
        assert line.startswith("LEARNED {") and json.loads(line.removeprefix("LEARNED "))["hands"] == dealt


@pytest.mark.slow  # two leagues with workers: 2 playing 8 matches or more each in the sandbox
@pytest.mark.parametrize("sandbox", ["process", "docker"])
def test_a_bot_that_searches_for_its_deals_seed_in_a_league_learns_nothing_unless_the_seed_is_short(
        tmp_path: Path, sandbox: str) -> None:
    if sandbox == "docker":
        require_docker()
    for case, seed in (("generated", None), ("short", 7)):
        where = tmp_path / case
        where.mkdir()
        bot = searcher(where, "None", kind="league", groups=40, secrets_below=100)
        config = LeagueConfig(name="ladder", entries=(str(bot), str(SAMPLES / "random")), players=2, seed=seed,
                              rules=Rules(threshold=25), sandbox=sandbox, workers=2, groups_per_batch=2,
                              registry=where / "bots")
        store = Store(where / "arena.db")  # made before the league opens it: never read half made
        league = League(config, where / "arena.db")
        with league_playing(league):
            deadline = time.monotonic() + 120
            while (row := store.tournament("ladder")) is None or store.status_counts(row["id"]).get("done", 0) < 8:
                assert time.monotonic() < deadline, f"the league played too little: {league.state.to_dict()}"
                time.sleep(0.3)
        lines = []
        for match in store.matches(row["id"]):
            if match.result is None or match.log_path is None:
                continue
            (seat,) = [p for p in match.result.players if p.name == "searcher"]
            assert seat.fault is None, seat.fault
            (line,) = [line for line in seat.stderr_tail.splitlines() if line.startswith("LEARNED")]
            events = [json.loads(record)["event"] for record in gzip.decompress(match.log_path.read_bytes())
                      .splitlines() if b'"t":"event"' in record]
            lines.append((line, next(event for event in events if event["type"] == "round_start")["hands"]))
        assert len(lines) >= 8
        if case == "generated":
            assert all(line.startswith("LEARNED nothing") for line, _ in lines), lines
        else:  # the control: a short secret is found, and every hand with it
            assert all(line.startswith("LEARNED {") and json.loads(line.removeprefix("LEARNED "))["hands"] == dealt
                       for line, dealt in lines), lines


def test_a_group_sealed_at_one_build_is_published_whole_by_the_next(tmp_path: Path) -> None:
    from tests.sitestore import fill_store

    store = Store(tmp_path / "arena.db")
    tid = fill_store(store, think=True)  # every fifth match has a forfeit, every move a think time
    faulted = next(m for m in store.matches(tid) if m.result and any(p.fault for p in m.result.players))
    sibling = next(m for m in store.matches(tid) if m.seed == faulted.seed and m.id != faulted.id)
    assert sibling.result is not None
    store.record_failure(tid, sibling.idx, "attempt 1: the sandbox went away", 1)
    out = tmp_path / "site"
    build_site(store, out, workers=1)
    sealed = site_text(out)
    assert f"t/t/matches/{faulted.id}.js" not in sealed and not holding(sealed, str(faulted.seed))
    store.record_match(tid, sibling.idx, sibling.result, 2)  # played again: the group is over
    build_site(store, out, workers=1)
    build_site(store, tmp_path / "scratch", workers=1)
    texts, fresh = site_text(out), site_text(tmp_path / "scratch")
    assert holding(texts, str(faulted.seed)) and f"t/t/matches/{faulted.id}.js" in texts
    # The forfeit's replay step, the think times and every page are what a build from scratch makes.
    assert {name for name in texts if texts[name] != fresh.get(name)} <= {".arena-site.json"}
