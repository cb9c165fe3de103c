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
    assert newest.share is not None and newest.share > 1.0  # a new version plays its pairs up first...
    assert newest.share <= SHARE_CAP + 0.1  # ...within its cap
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
