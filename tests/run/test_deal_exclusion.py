"""No two matches of one deal in flight at once, on every player (arena/run/dispatch.py).

The honest observer is the bots themselves: a *witness* bot writes to its stderr, which the store keeps per seat,
the monotonic time it was born and the time of every message it reads. A match's span is from its first bot's
birth to the last message any of its bots read; the clock is the host's (no sandbox gives a bot a time namespace of
its own), so spans from different workers compare. Two matches of one deal whose spans intersect had copies of a
bot alive at two seats of that deal at once. A span ends before its bots die, so it can only understate an overlap;
the control (the exclusion turned off, as only the bench does) shows that the check still sees one.
"""

from __future__ import annotations

import re
import threading
import time
from collections import defaultdict
from contextlib import closing
from itertools import combinations, pairwise
from pathlib import Path
from typing import Self

import pytest

from arena.bots.manifest import load_bot
from arena.game.rules import Rules
from arena.match.live import Reuse
from arena.match.protocol import Limits
from arena.run import loop
from arena.run.config import LeagueConfig, load_config
from arena.run.dispatch import DealQueue, deal_of
from arena.run.jobs import MatchJob
from arena.run.league import League
from arena.run.plan import pending_jobs, plan_tournament, settings_of
from arena.run.players import DaskCluster, LocalPool
from arena.run.tournament import AllPending, run_tournament
from arena.sandbox import SandboxLimits
from arena.store import Store
from tests.support.docker import require_docker
from tests.support.runs import league_playing

ROOT = Path(__file__).resolve().parents[2]

WITNESS = '''\
"""A greedy-enough player that tells its stderr when it was born and when it last read a message."""
import json, os, sys, time

BORN = time.monotonic()
TURN_S = {turn_s}
import arena_bot


def note():
    sys.stderr.write(f"witness born={BORN!r} seen={time.monotonic()!r} pid={os.getpid()}\\n")
    sys.stderr.flush()


def name_after(hand):
    """Take the name ("comm") w + the sorted first hand: the same in every match of the deal at this seat, so the
    test, reading the host's /proc, sees two matches of one deal as two live processes of one name."""
    with open("/proc/self/comm", "w") as comm:
        comm.write("w" + "".join(sorted(hand)))


class Witness(arena_bot.Bot):
    named = False

    def on_message(self, message):
        if message["type"] == "round_start" and not self.named:
            self.named = True
            name_after(message["hand"])

    def on_turn(self, message):
        time.sleep(TURN_S)
        if message["may_declare"] and arena_bot.total(message["hand"]) <= 5:
            return arena_bot.declare()
        return arena_bot.play([max(message["hand"], key=arena_bot.value)], "deck")


bot = Witness()
note()
for line in sys.stdin.buffer:
    note()
    answer = bot.reply(json.loads(line))
    if answer is not None:
        sys.stdout.write(json.dumps(answer) + "\\n")
        sys.stdout.flush()
note()
'''


def witnesses(directory: Path, count: int = 3, turn_s: float = 0.0, persistent: bool = False) -> list[Path]:
    """``count`` witness bots (the same code under different names), in ``directory``, each taking ``turn_s``
    seconds a turn; ``persistent`` ones play several matches per process when reuse is on."""
    bots = []
    code = WITNESS.replace("{turn_s}", repr(turn_s))
    if persistent:
        code = code.replace("    named = False\n", "    named = False\n    persistent = True\n")
    for number in range(1, count + 1):
        bot = directory / f"witness{number}"
        bot.mkdir(parents=True)
        (bot / "bot.py").write_text(code)
        (bot / "bot.yaml").write_text(f"name: witness{number}\ncommand: python3 bot.py\nlanguage: python\n")
        bot.chmod(0o755)
        bots.append(bot)
    directory.chmod(0o755)  # the sandbox runs bots as users of their own
    return bots


def write_config(directory: Path, workers: int = 2, repeats: int = 4, turn_s: float = 0.0, threshold: int = 25,
                 seed: int = 5, sandbox: str = "process", reuse: int | None = None) -> Path:
    bots = ", ".join(str(bot) for bot in witnesses(directory / "bots", turn_s=turn_s, persistent=reuse is not None))
    path = directory / "t.yaml"
    path.write_text(f"name: t\nbots: [{bots}]\nplayers: 3\nrepeats: {repeats}\nseed: {seed}\n"
                    f"rules: {{threshold: {threshold}}}\nlimits: {{move_ms: 5000}}\nworkers: {workers}\n"
                    f"sandbox: {sandbox}\n" + ("" if reuse is None else f"reuse: {{matches: {reuse}}}\n"))
    return path


SPAN = re.compile(r"witness born=([0-9.e+-]+) seen=([0-9.e+-]+)")


def spans(store: Store, tid: int) -> dict[int, tuple[int, float, float]]:
    """Each stored match's (deal seed, first birth, last message read) by schedule index, from its seats' stderr."""
    found = {}
    for match in store.matches(tid):
        if match.result is None:
            continue
        times = [(float(born), float(seen)) for seat in match.result.players
                 for born, seen in SPAN.findall(seat.stderr_tail)]
        assert len({born for born, _ in times}) == len(match.result.players), \
            f"match {match.idx}: a seat's witness lines are missing: {[p.stderr_tail for p in match.result.players]}"
        found[match.idx] = (match.seed, min(born for born, _ in times), max(seen for _, seen in times))
    return found


def overlaps(found: dict[int, tuple[int, float, float]]) -> list[tuple[int, int]]:
    """Pairs of matches of one deal whose spans intersect."""
    by_deal: dict[int, list[tuple[float, float, int]]] = defaultdict(list)
    for index, (seed, start, end) in found.items():
        by_deal[seed].append((start, end, index))
    pairs = []
    for matches in by_deal.values():
        matches.sort()
        for (_, end_a, a), (start_b, _, b) in pairwise(matches):
            if start_b < end_a:
                pairs.append((a, b))
    return pairs


Life = tuple[dict[int, int], float]
"""A bot process's matches (deal seed -> schedule index) and the last message it read in any of them."""


def lives(store: Store, tid: int) -> dict[float, Life]:
    """Each bot process (by its birth time) that played a stored match, and its :data:`Life`. With reuse a process
    plays several matches, so its life spans theirs."""
    found: dict[float, Life] = {}
    for match in store.matches(tid):
        if match.result is None:
            continue  # not played (yet)
        for seat in match.result.players:
            for born, seen in SPAN.findall(seat.stderr_tail):
                deals, last = found.get(float(born), ({}, 0.0))
                found[float(born)] = (deals | {match.seed: match.idx}, max(last, float(seen)))
    return found


def lives_overlapping_on_a_deal(found: dict[float, Life]) -> list[tuple[float, float]]:
    """Pairs of processes whose lives intersect and that played one deal in different matches: the one that played
    it first was alive, holding a seat's cards of it, while the other played it (the seats of one match share their
    deal, and live at once, by design)."""
    return [(a, b) for a, b in combinations(sorted(found), 2) if b < found[a][1]
            and any(found[b][0].get(seed, index) != index for seed, index in found[a][0].items())]


def shared_deals(found: dict[int, tuple[int, float, float]]) -> int:
    """How many matches share their deal with another (the check means nothing without any)."""
    seeds = [seed for seed, _, _ in found.values()]
    return sum(seeds.count(seed) > 1 for seed in seeds)


# -- the dispatcher alone ---------------------------------------------------------------------------------------

def job(index: int, seed: int) -> MatchJob:
    bot = load_bot(ROOT / "sample_bots" / "greedy")
    return MatchJob(index, seed, (bot, bot), Rules(), Limits(), SandboxLimits(), "process", f"/nowhere/{index}", 0)


def test_a_deal_in_flight_holds_back_its_next_job_and_the_next_deal_goes_instead() -> None:
    batch = [job(0, 7), job(1, 7), job(2, 7), job(3, 9), job(4, 9), job(5, 11)]
    deals = DealQueue(batch)
    first, second, third = deals.take(), deals.take(), deals.take()
    assert [first.index, second.index, third.index] == [0, 3, 5]  # one of each deal, in schedule order
    assert deals.take() is None and deals.waiting == 3  # every waiting job's deal is in flight
    deals.done(second)
    assert deals.take().index == 4  # the freed deal's next job, though deal 7's job 1 is earlier: 7 is busy
    deals.done(first)
    deals.done(first)  # twice (a result seen twice): deal 7's next job must not be freed by it
    nxt = deals.take()
    assert nxt.index == 1 and deals.take() is None
    deals.done(first)
    assert deals.take() is None, "a done job that was not the one in flight freed its deal"
    deals.done(nxt)
    assert deals.take().index == 2 and not deals


def test_the_queue_follows_schedule_order_when_nothing_is_in_flight() -> None:
    batch = [job(index, 100 + index // 3) for index in range(9)]
    deals = DealQueue(batch)
    order = []
    while deals:
        taken = deals.take()
        assert taken is not None
        order.append(taken.index)
        deals.done(taken)
    assert order == list(range(9))
    assert deal_of(batch[4]) == batch[4].seed


def test_near_the_end_the_deal_with_most_jobs_left_goes_first() -> None:
    """Two workers, deals of three jobs: with deal 7 in flight and deals 9 (one job left) and 11 (three) free, the
    batch's end is near, and deal 11 goes before deal 9's last job, so that the workers finish together."""
    batch = [job(0, 7), job(1, 7), job(2, 7), job(3, 9), job(4, 9), job(5, 9), job(6, 11), job(7, 11), job(8, 11)]
    deals = DealQueue(batch, workers=2)
    first, second = deals.take(), deals.take()
    assert (first.index, second.index) == (0, 3)  # far from the end: schedule order
    deals.done(second)
    assert deals.take().index == 4
    assert deals.waiting == 6  # two workers' deals of three: the end is near
    deals.done(batch[4])
    assert deals.take().index == 6, "deal 9's last job went before deal 11's three"


def test_a_held_deal_waits_until_it_is_released() -> None:
    batch = [job(0, 7), job(1, 9), job(2, 7)]
    deals = DealQueue(batch)
    deals.hold(7)  # a cancelled match of deal 7 plays on somewhere
    assert deals.take().index == 1 and deals.take() is None
    deals.release(7)
    assert deals.take().index == 0 and deals.take() is None
    deals.hold(7)
    deals.done(batch[0])  # deal 7 is free of our match, but held: job 2 waits
    assert deals.take() is None and deals.waits_for(7)
    deals.release(7)
    assert deals.take().index == 2 and not deals


def test_without_the_exclusion_the_queue_hands_out_in_batch_order() -> None:
    batch = [job(0, 7), job(1, 7), job(2, 9)]
    deals = DealQueue(batch, one_per_deal=False)
    assert [deals.take().index for _ in batch] == [0, 1, 2] and deals.take() is None


# -- real runs ---------------------------------------------------------------------------------------------------

def backend(sandbox: str) -> str:
    """``sandbox``, once it is known to work here: the docker backend needs an engine (without one the test skips,
    or fails under ``ARENA_REQUIRE_DOCKER=1``)."""
    if sandbox == "docker":
        require_docker()
    return sandbox


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", ["process", "docker"])
def test_two_workers_never_play_two_matches_of_one_deal_at_once(sandbox: str, tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, sandbox=backend(sandbox)))
    store = Store(tmp_path / "arena.db")
    report = run_tournament(config, store)
    assert report.played == 12 and report.failed == 0
    found = spans(store, report.tid)
    assert shared_deals(found) == 12
    assert overlaps(found) == []
    # Both workers played: the run was parallel, only never on one deal.
    starts = sorted((start, end) for _, start, end in found.values())
    assert any(later < end for (_, end), (later, _) in pairwise(starts)), "no two matches overlapped at all"


@pytest.mark.slow
def test_with_reuse_no_process_that_played_a_deal_is_alive_while_another_plays_it(tmp_path: Path) -> None:
    # 4 groups in blocks of 2: 2 blocks of 3 chains of 2 matches; a block's chains one after another, the blocks'
    # side by side on the 2 workers.
    config = load_config(write_config(tmp_path, reuse=2))
    store = Store(tmp_path / "arena.db")
    report = run_tournament(config, store)
    assert report.played == 12 and report.failed == 0
    found = lives(store, report.tid)
    assert sorted(len(deals) for deals, _ in found.values()) == [2] * 18  # 6 chains x 3 bots, kept up a chain
    assert lives_overlapping_on_a_deal(found) == []
    # The check can fail: processes of different blocks did live at once.
    assert any(b < found[a][1] for a, b in combinations(sorted(found), 2) if not found[a][0].keys() & found[b][0].keys())


@pytest.mark.slow
def test_the_overlap_check_sees_two_matches_of_one_deal_when_the_exclusion_is_off(tmp_path: Path) -> None:
    """The control: the same run with the exclusion off (as only bench/serial.py does) on a pool whose two workers
    are already up, so the first two jobs (two rotations of one deal) start together."""
    config = load_config(write_config(tmp_path))
    store = Store(tmp_path / "arena.db")
    warm = load_config(write_config(tmp_path / "warm", repeats=1))
    with closing(LocalPool(2, one_per_deal=False)) as pool:
        loop.run(Store(tmp_path / "warm.db"), AllPending(warm), pool)
        report = loop.run(store, AllPending(config), pool)
    assert report.played == 12 and report.failed == 0
    assert overlaps(spans(store, report.tid)), "two rotations of one deal played at once, and the check missed it"


@pytest.mark.slow
def test_a_dask_cluster_never_plays_two_matches_of_one_deal_at_once(tmp_path: Path) -> None:
    pytest.importorskip("distributed", reason="the cluster extra is not installed (pip install 'least-score-arena[cluster]')")
    config = load_config(write_config(tmp_path))
    store = Store(tmp_path / "arena.db")
    report = run_tournament(config, store, cluster="local:2")
    assert report.played == 12 and report.failed == 0 and report.cluster is not None
    assert len(report.cluster.per_worker) == 2  # both workers played
    found = spans(store, report.tid)
    assert shared_deals(found) == 12 and overlaps(found) == []


def league_played(tmp_path: Path, reuse: Reuse | None = None) -> tuple[Store, int]:
    """A league of witnesses (persistent ones with ``reuse``) on 2 workers, played until 12 matches are in."""
    bots = witnesses(tmp_path / "bots", persistent=reuse is not None)
    config = LeagueConfig(name="ladder", entries=tuple(str(bot) for bot in bots), players=3, seed=3, workers=2,
                          groups_per_batch=2 if reuse is None else 4, registry=tmp_path / "registry",
                          rules=Rules.from_dict({"threshold": 25}), reuse=reuse)
    league = League(config, tmp_path / "league.db")
    with league_playing(league):
        deadline = time.monotonic() + 180
        while league.state.matches_played < 12 and league.state.error is None:
            assert time.monotonic() < deadline, f"the league plays: {league.state}"
            time.sleep(0.1)
    assert league.state.error is None
    store = Store(tmp_path / "league.db")
    return store, store.tournament("ladder")["id"]


@pytest.mark.slow
def test_a_league_with_two_workers_never_plays_two_matches_of_one_deal_at_once(tmp_path: Path) -> None:
    store, tid = league_played(tmp_path)
    found = spans(store, tid)
    assert len(found) >= 12 and shared_deals(found) == len(found)
    assert overlaps(found) == []


@pytest.mark.slow
def test_a_league_with_reuse_never_keeps_a_process_that_played_a_deal_alive_while_another_plays_it(
        tmp_path: Path) -> None:
    store, tid = league_played(tmp_path, Reuse(2))  # batches of 4 groups: 2 blocks of 3 chains of 2 matches
    found = lives(store, tid)
    assert len(found) >= 18 and max(len(deals) for deals, _ in found.values()) == 2
    assert lives_overlapping_on_a_deal(found) == []


class NameWatch:
    """Reads the host's /proc over and over in a thread: the most processes of one witness name (one deal's seat)
    seen alive at once, and every such name seen."""

    def __init__(self) -> None:
        self.most = 0
        self.names: set[str] = set()
        self.twice: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._stop.is_set():
            seen: dict[str, int] = defaultdict(int)
            for comm in Path("/proc").glob("[0-9]*/comm"):
                try:
                    name = comm.read_text().strip()
                except OSError:
                    continue  # gone meanwhile
                if re.fullmatch(r"w(?:[2-9TJQKA][CDHS]){3,}", name):
                    seen[name] += 1
            self.names |= set(seen)
            self.twice |= {name for name, count in seen.items() if count > 1}
            self.most = max(self.most, *seen.values(), 0)
            time.sleep(0.005)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@pytest.mark.slow
def test_a_cluster_holds_back_a_deal_whose_cancelled_match_plays_on(tmp_path: Path) -> None:
    """Dask cannot stop a running task: a play closed early (a stop, a verdict, a league paused by an error) leaves
    its matches playing on the workers. The next play on the cluster must not start another match of their deals
    until they end. The first play is a quick match (witnesses that answer at once) beside a slow one (30 ms a
    turn, ten times as long): it is closed at the quick one's result, and the next play asks for the slow deal's
    next rotation while its cancelled first rotation plays on."""
    pytest.importorskip("distributed", reason="the cluster extra is not installed (pip install 'least-score-arena[cluster]')")
    quick_config = load_config(write_config(tmp_path / "quick", repeats=2, threshold=10, seed=6))
    slow_config = load_config(write_config(tmp_path / "slow", repeats=1, turn_s=0.03, threshold=10))
    quick = pending_jobs(plan_tournament(quick_config, Store(tmp_path / "quick" / "arena.db")), settings_of(quick_config))[3]
    slow = pending_jobs(plan_tournament(slow_config, Store(tmp_path / "slow" / "arena.db")), settings_of(slow_config))[:2]
    assert quick.seed != slow[0].seed == slow[1].seed and quick.index not in (slow[0].index, slow[1].index)
    with NameWatch() as watch, closing(DaskCluster("local:2")) as cluster:
        first = cluster.play([quick, slow[0]], tick=lambda: None)
        got = next(first)
        first.close()  # the slow match is cancelled, and plays on
        assert got.index == quick.index, "the slow match ended first: it cannot show what this test is about"
        again = list(cluster.play([slow[1]], tick=lambda: None))
    assert [result.index for result in again] == [slow[1].index] and again[0].result is not None
    assert len(watch.names) >= 3, f"the watch saw too few witnesses to mean anything: {watch.names}"
    assert watch.most == 1, f"two matches of one deal played at once (seen twice: {sorted(watch.twice)})"
