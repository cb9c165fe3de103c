"""The league's matchmaker (arena/run/matchmaking.py) alone, on synthetic leagues: the spread it promises (every pair
within a bounded ratio, every bot near its fair share), the extra meetings of uncertain pairs, its determinism
from the seed, and the throttle of a slow bot. bench/league.py plays the same league with real bots and a store."""

from __future__ import annotations

import random

import pytest

from arena.run.matchmaking import (
    CLOSE_WEIGHT,
    SHARE_CAP,
    Spread,
    Tally,
    choose_groups,
    closeness_of,
    pair,
    spread,
    throttle_weights,
)


def play_league(players: int, bots: int, matches: int, swap_at: int | None, seed: int = 1, per_batch: int = 1,
                closeness: dict[tuple[int, int], float] | None = None) -> tuple[Tally, list[int], list[tuple[int, ...]]]:
    """Schedule ``matches`` matches over ``bots`` bots, bot 0 replaced by a new version after ``swap_at``."""
    tally = Tally(players)
    active = list(range(bots))
    made: list[tuple[int, ...]] = []
    while len(made) * players < matches:
        if swap_at is not None and len(made) * players >= swap_at and 0 in active:
            active = [*active[1:], bots]
        made.extend(choose_groups(tally, active, per_batch, random.Random(f"{seed}/{len(made)}"), closeness))
    return tally, active, made


def assert_spread_as_promised(found: Spread) -> None:
    assert found.ratio is not None and found.ratio >= 1 / 3, found
    assert all(share.share is not None and share.share <= 1.25 for share in found.bots), found


@pytest.mark.parametrize("players, bots, per_batch", [(3, 5, 1), (3, 5, 4), (2, 5, 1), (4, 7, 2), (2, 3, 1)])
def test_the_new_users_league_spreads_its_matches(players: int, bots: int, per_batch: int) -> None:
    # The audit's league: house greedy and random and three uploads, one of which sends a new version mid-way.
    tally, active, made = play_league(players, bots, 500, swap_at=250, per_batch=per_batch)
    found = spread(tally, active)
    assert_spread_as_promised(found)
    assert found.least >= 1 and found.pairs == bots * (bots - 1) // 2
    newest = next(share for share in found.bots if share.bot == bots)
    # A new version plays its share from its entry (its pairs are due what an even schedule gives them from then
    # on, not what the others met before it came), within its cap.
    assert newest.share is not None and 0.95 <= newest.share <= SHARE_CAP + 0.1
    assert all(len(set(group)) == players for group in made)


def test_without_entrants_every_pair_meets_equally_often() -> None:
    tally, active, _ = play_league(3, 5, 600, swap_at=None)
    found = spread(tally, active)
    assert found.most - found.least <= 2 and all(0.95 <= (share.share or 0) <= 1.05 for share in found.bots)


def test_an_uncertain_pair_meets_more_often_within_the_bound() -> None:
    tally, _, _ = play_league(3, 5, 1500, swap_at=None, closeness={(1, 2): 1.0})
    close = tally.meetings[(1, 2)]
    others = [count for key, count in tally.meetings.items() if key != (1, 2)]
    assert close >= 1.4 * max(others)  # the toss-up gets the spare meetings...
    assert close <= (1 + CLOSE_WEIGHT) * 1.15 * min(others)  # ...but no more than the bound allows
    assert_spread_as_promised(spread(tally, range(5)))  # and no bot plays much more for it


def test_groups_follow_the_seed_and_do_not_lock_into_fixed_tables() -> None:
    first = play_league(3, 6, 300, swap_at=None, seed=1)[2]
    assert first == play_league(3, 6, 300, swap_at=None, seed=1)[2]  # deterministic given the seed
    assert first != play_league(3, 6, 300, swap_at=None, seed=2)[2]
    # 20 possible tables of 3 among 6 bots: a randomised rule visits them all, not a fixed cycle of a few.
    assert len({frozenset(group) for group in first}) == 20


def test_a_large_field_stays_spread_with_a_sampled_pool() -> None:
    tally = Tally(4)
    bots = list(range(120))  # over POOL: the other seats come from a sample of the field
    for batch in range(30):
        choose_groups(tally, bots, 10, random.Random(batch))
    shares = [share.share for share in spread(tally, bots).bots if share.share is not None]
    assert len(shares) == 120 and max(shares) <= 1.15 and min(shares) >= 0.85


def test_closeness_is_one_for_a_toss_up_and_zero_when_settled() -> None:
    close = closeness_of({(1, 2): 0.5, (2, 1): 0.5, (1, 3): 0.99, (3, 1): 0.01, (2, 3): 0.2, (3, 2): 0.8}, [3, 1, 2])
    assert close == pytest.approx({(1, 2): 1.0, (1, 3): 0.02, (2, 3): 0.4})
    assert pair(3, 1) == (1, 3)


class CountingPAbove(dict[tuple[int, int], float]):
    """P(above) of a field of a thousand bots, counting the pairs asked for (as the bootstrap's would cost) and
    the pairs looked for."""

    def __init__(self, bots: int) -> None:
        super().__init__()
        self.bots, self.asked, self.tested = bots, 0, 0

    def __getitem__(self, key: tuple[int, int]) -> float:
        a, b = key
        if a == b or not (0 <= a < self.bots and 0 <= b < self.bots):
            raise KeyError(key)
        self.asked += 1
        return 0.5 if abs(a - b) < 50 else 1.0 if a < b else 0.0

    def __contains__(self, key: object) -> bool:
        self.tested += 1
        return isinstance(key, tuple) and all(0 <= bot < self.bots for bot in key) and key[0] != key[1]


def test_closeness_over_a_large_field_costs_only_the_pairs_looked_at() -> None:
    p_above = CountingPAbove(1000)
    close = closeness_of(p_above, range(1000))
    assert p_above.asked == 0  # half a million pairs: none worked out until asked
    assert close[(3, 40)] == 1.0 and close[(3, 700)] == 0.0 and close.get((40, 3), -1.0) == -1.0
    assert close.get((3, 5000), -1.0) == -1.0 and p_above.asked == 2
    assert close[(3, 40)] == 1.0 and p_above.asked == 2  # each worked out once
    tally = Tally(4)
    choose_groups(tally, list(range(1000)), 8, random.Random(1), close)
    assert 0 < p_above.asked <= p_above.tested <= 8 * 48 * 4 * 4  # per group, its pool against the seats chosen


def test_a_slow_bot_is_scheduled_for_its_share_of_worker_time() -> None:
    # Bot 4's matches take 100 times the others': it gets 1/100 of a share, so it costs about one share of time.
    weights = throttle_weights({0: (30, 30.0), 1: (30, 33.0), 2: (30, 27.0), 3: (30, 30.0), 4: (30, 3000.0)})
    assert set(weights) == {4} and weights[4] == pytest.approx(0.01)
    assert throttle_weights({0: (2, 2.0), 1: (2, 900.0)}) == {}  # too few matches to judge
    tally = Tally(3)
    for batch in range(400):
        choose_groups(tally, range(5), 1, random.Random(batch), weights=weights)
    # A match takes as long as its slowest seat: bot 4's seats hold their workers 100 times as long.
    slow_groups = tally.played[4] // 3
    seat_seconds = slow_groups * 3 * 100.0
    total = (400 - slow_groups) * 3 * 3 * 1.0 + slow_groups * 3 * 3 * 100.0
    assert seat_seconds <= 1.25 * total / 5  # at most about its share of the workers' time...
    assert slow_groups >= 2 and min(tally.played[bot] for bot in range(4)) >= 850  # ...and it still plays
    found = spread(tally, range(5), weights)
    assert found.pairs == 6 and found.ratio is not None and found.ratio >= 1 / 3  # its pairs are not counted


def test_late_entrants_are_spread_over_the_field_not_seated_with_each_other() -> None:
    # 6 bots at 4 seats, two entering late (bot 6 after 160 matches, bot 7 after 320): with all-time meetings each
    # was the other's least-met bot and they sat together in most of the newest one's groups.
    tally, made = Tally(4), []
    for batch in range(160):
        active = [*range(6), *([6] if batch >= 40 else []), *([7] if batch >= 80 else [])]
        made.extend(choose_groups(tally, active, 1, random.Random(batch)))
    newest = [group for group in made[80:] if 7 in group]
    # even: 3 of its 7 others, 0.43 (all-time meetings: 0.49)
    assert sum(6 in group for group in newest) / len(newest) <= 0.47
    found = spread(tally, list(range(8)))
    assert found.judged == 28 and found.balance is not None and found.balance >= 0.8, found  # all-time: 0.67
    assert found.ratio is not None and found.ratio < found.balance  # all-time counts blame the late entry


@pytest.mark.parametrize("toss_ups", [False, True])
@pytest.mark.parametrize("players, bots", [(2, 4), (3, 6), (4, 8)])
def test_a_new_version_meets_every_bot_of_the_field_first(players: int, bots: int, toss_ups: bool) -> None:
    # The head start: a field that has met evenly, then a new version, and the league's next batch seats it in
    # every group with bots it has never met, until it has met them all (where its cap allows: here, the fewest
    # groups that can). Without it, an old pair and a new one on schedule tie and a coin decides; with every pair a
    # toss-up (as before any result), the old pairs' meetings count half and they win every time.
    newest, old = bots - 1, list(range(bots - 1))
    needed = -(-(bots - 1) // (players - 1))  # groups it needs to have met all of the field once
    closeness = {pair(a, b): 1.0 for a in range(bots) for b in range(a + 1, bots)} if toss_ups else None
    for seed in range(10):
        tally = Tally(players)
        choose_groups(tally, old, 60, random.Random(f"{seed}/old"), closeness)
        first = choose_groups(tally, [*old, newest], needed, random.Random(f"{seed}/new"), closeness)
        assert all(newest in group for group in first), (seed, first)
        assert {bot for group in first for bot in group} == {*old, newest}, (seed, first)
        for batch in range(20):
            choose_groups(tally, [*old, newest], needed, random.Random(f"{seed}/{batch}"), closeness)
        found = spread(tally, [*old, newest])
        assert all(share.share is None or share.share <= 1.25 for share in found.bots), found
        assert found.balance is not None and found.balance >= 0.5, found
