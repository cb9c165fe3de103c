"""End to end: a bot that publishes its hand to its own copies learns nothing, in a tournament and in a league with
two workers, on both sandbox backends (the cheater bot and the check are in tests/cheaters.py).

The control plays the same bot where nothing isolates it (no bwrap: ``/tmp`` is the host's) and sees it learn other
seats' hands, so the check is known to catch a leak.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from arena.game.rules import Rules
from arena.match.protocol import Limits
from arena.match.referee import play_match
from arena.run.config import LeagueConfig, TournamentConfig
from arena.run.league import League
from arena.run.tournament import run_tournament
from arena.sandbox import Sandbox, views
from arena.sandbox.process import ProcessSandbox, bwrap_status
from arena.schedule import rotations
from arena.store import Store
from tests.cheaters import Claim, claims, claims_in, leaks, uncache, write_cache_peek, write_peek
from tests.support.docker import require_docker
from tests.support.runs import league_playing

SAMPLES = Path(__file__).resolve().parents[2] / "sample_bots"
RULES = Rules(threshold=25)
DROP = Path("/tmp/arena-peek-drop")


def needs_backend(backend: str) -> None:
    if backend == "docker":
        require_docker()


def test_the_check_catches_a_copy_that_reads_what_an_earlier_rotation_left(tmp_path: Path) -> None:
    from arena.bots.manifest import load_bot

    peek = load_bot(write_peek(tmp_path))
    others = [load_bot(SAMPLES / "greedy"), load_bot(SAMPLES / "random")]
    seed = int.from_bytes(os.urandom(7))  # a deal no earlier run of this test left a drop for
    found = []
    sandbox = ProcessSandbox(isolate=False)
    try:
        for rotation, seats in enumerate(rotations((peek, *others))):
            log = tmp_path / f"{rotation}.jsonl.gz"
            result = play_match(list(seats), seed, sandbox, RULES, Limits(move_ms=5000), log_path=log)
            found += claims_in(rotation, result)
    finally:
        sandbox.close()
    learned = leaks(found)
    # peek sits at seat 0, then 2, then 1: rotation 1 reads seat 0 (rotation 0's), rotation 2 seats 0 and 2
    assert {(claim.match_id, claim.about) for claim in learned} == {(1, 0), (2, 0), (2, 2)}, found
    assert all(claim.true for claim in found)


def play_one_deal(tmp_path: Path, sandbox: Sandbox) -> list[Claim]:
    """The page-cache cheater's three rotations of one deal, one after another, and what it claimed in each."""
    from arena.bots.manifest import load_bot

    cache = load_bot(write_cache_peek(tmp_path))
    uncache(cache.directory)
    others = [load_bot(SAMPLES / "greedy"), load_bot(SAMPLES / "random")]
    seed = int.from_bytes(os.urandom(7))
    found = []
    try:
        for rotation, seats in enumerate(rotations((cache, *others))):
            log = tmp_path / f"{rotation}.jsonl.gz"
            result = play_match(list(seats), seed, sandbox, RULES, Limits(move_ms=5000), log_path=log)
            tried = [player.stderr_tail or "" for player in result.players if player.name == "cache"]
            assert tried and "cache threshold" in tried[0], result  # it calibrated and read every region
            found += claims_in(rotation, result, bot="cache")
    finally:
        sandbox.close()
    return found


def sandbox_with_views(backend: str, private_views: bool) -> Sandbox:
    """A sandbox of ``backend`` with private views or without; the test is skipped where the host has none."""
    if backend == "docker":
        require_docker()
        from arena.sandbox.docker import DockerSandbox, views_status

        works, reason = views_status()
        if not works:
            pytest.skip(f"no private views for containers here: {reason}")
        return DockerSandbox(warm=0, private_views=private_views)
    works, reason = views.status()
    if not works or not bwrap_status()[0]:
        pytest.skip(f"no private views here: {reason if not works else bwrap_status()[1]}")
    return ProcessSandbox(isolate=True, private_views=private_views)


@pytest.mark.slow  # three matches, one after another
@pytest.mark.parametrize("backend", ["process", "docker"])
def test_a_page_cache_cheater_learns_nothing_across_the_rotations_of_a_deal(tmp_path: Path, backend: str) -> None:
    found = play_one_deal(tmp_path, sandbox_with_views(backend, True))
    assert leaks(found) == [], found


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["process", "docker"])
def test_control_with_shared_caches_the_page_cache_cheater_reads_earlier_rotations(tmp_path: Path,
                                                                                   backend: str) -> None:
    """The same deal with the host's page cache shared (no private views): each later rotation reads the hand the
    rotation before it left (cache sits at seat 0, then 2, then 1; a region once read reads as all ones after, so
    rotation 2 cannot read seat 0's again), so the test above can fail."""
    learned = leaks(play_one_deal(tmp_path, sandbox_with_views(backend, False)))
    assert {(claim.match_id, claim.about) for claim in learned} == {(1, 0), (2, 2)}, learned


def tournament(tmp_path: Path, backend: str, repeats: int) -> TournamentConfig:
    bots = (str(write_peek(tmp_path)), str(SAMPLES / "greedy"), str(SAMPLES / "random"))
    return TournamentConfig(name="cheat", bots=bots, players=3, repeats=repeats, seed=None, rules=RULES,
                            sandbox=backend, workers=2)


@pytest.mark.slow  # 102 matches (docker: 36), two at a time: 63 s (docker: 44 s) at load 13 on 2 cores
@pytest.mark.long
@pytest.mark.parametrize("backend", ["process", "docker"])
def test_a_cheater_learns_nothing_in_a_tournament_with_two_workers(tmp_path: Path, backend: str) -> None:
    needs_backend(backend)
    repeats = 34 if backend == "process" else 12
    store = Store(tmp_path / "arena.db")
    report = run_tournament(tournament(tmp_path, backend, repeats), store, workers=2)
    tid = store.latest_tournament()["id"]
    played = [match for match in store.matches(tid) if match.result is not None]
    assert len(played) == 3 * repeats, report
    assert leaks(claims(store, tid)) == []
    tried = [player.stderr_tail for match in played for player in match.result.players if player.name == "peek"]
    assert all("locks refused" in tail for tail in tried), tried[:2]  # it tried, and was told no


def run_league(league: League, store: Store, matches: int, seconds: float = 300.0) -> int:
    deadline = time.monotonic() + seconds
    with league_playing(league, join_s=120) as thread:
        while True:
            tid = store.latest_tournament()["id"] if store.latest_tournament() else None
            done = 0 if tid is None else store.status_counts(tid).get("done", 0)
            if done >= matches:
                return tid
            assert thread.is_alive() and time.monotonic() < deadline, league.state.to_dict()
            time.sleep(0.2)


@pytest.mark.slow  # a league's 100 matches (docker: 36), two at a time: 108 s (docker: 65 s) at load 13 on 2 cores
@pytest.mark.long
@pytest.mark.parametrize("backend", ["process", "docker"])
def test_a_cheater_learns_nothing_in_a_league_with_two_workers(tmp_path: Path, backend: str) -> None:
    needs_backend(backend)
    matches = 100 if backend == "process" else 36
    entries = (str(write_peek(tmp_path)), str(SAMPLES / "greedy"), str(SAMPLES / "random"))
    # keep_stderr: a league forgets the stderr of a bot's older matches, and with it what they claimed
    config = LeagueConfig(name="ladder", entries=entries, players=3, rules=RULES, workers=2, throttle=False,
                          keep_stderr=1000, sandbox=backend, registry=tmp_path / "bots")
    store = Store(tmp_path / "arena.db")
    tid = run_league(League(config, store.path), store, matches)
    assert leaks(claims(store, tid)) == []
    tried = [player.stderr_tail for match in store.matches(tid) if match.result is not None
             for player in match.result.players if player.name == "peek"]
    assert len(tried) >= matches and all("locks refused" in tail for tail in tried), tried[:2]


@pytest.fixture(autouse=True)
def no_drop_left() -> None:
    yield
    shutil.rmtree(DROP, ignore_errors=True)
