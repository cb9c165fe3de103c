"""What the standings show (arena/stats/display.py): nothing settled on too few deals, the rank shown a bot's own 95%
interval (no shared rank that chains), a bot that lost everything never among the first, P(above) never a
certainty."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from arena.stats.confidence import GroupPlace, confidence
from arena.stats.display import MIN_GROUPS, p_text, shown
from arena.stats.standings import standings_and_confidence
from arena.store import Store
from tests.hostile import make_bot
from tests.support.runs import SAMPLES, arena, write_config

CLI_DOC = Path(__file__).parents[2] / "docs" / "CLI.md"


def test_p_above_never_prints_as_a_certainty() -> None:
    assert [p_text(1.0, 400), p_text(1.0, 100), p_text(1.0, 20)] == ["> 0.99", "> 0.97", "> 0.86"]
    assert p_text(0.9975, 400) == "> 0.98"  # one reversal in 400: the resampling cannot support > 0.99
    assert [p_text(0.0, 400), p_text(0.5, 400), p_text(0.949, 400)] == ["< 0.01", "0.50", "0.95"]
    assert all(not p_text(p / 1000, 400).endswith("1.00") for p in range(1001))


def test_a_bot_that_loses_every_deal_is_never_shown_among_the_first() -> None:
    # Five bots at two seats: bots 0-3 equal coins, bot 4 last in every match it plays. Shared ranks chained bots
    # 0-3 level and could carry bot 4 into their "1="; its own interval keeps it at the bottom.
    rng = random.Random(3)
    results = []
    for group in range(120):
        a, b = rng.sample(range(5), 2)
        for rotation in range(2):
            first = b if a == 4 else a if b == 4 else rng.choice((a, b))
            results += [GroupPlace(group, first, 1, 2 * group + rotation),
                        GroupPlace(group, a if first == b else b, 2, 2 * group + rotation)]
    sure = confidence(results, list(range(5)))
    view = shown(sure).by_bot()
    assert sure.order()[-1] == 4 and view[4].rank == "5"
    assert all(view[4].apart(view[bot]) for bot in range(4))
    assert all(not view[a].apart(view[b]) for a in range(4) for b in range(4))  # the equal four: none apart
    # The floor: with too few groups the same data rank nobody.
    assert {line.rank for line in shown(sure, min_groups=10**6).lines} == {"-"}


@pytest.mark.slow
def test_one_deal_settles_nothing(tmp_path: Path) -> None:
    # 3 bots at 3 seats, one deal: 3 matches, one group. A bootstrap over one group cannot vary: before the floor it
    # showed rank95 1-1 and P>next 1.00 for every bot.
    config = write_config(tmp_path, players=3, repeats=1, bots=[str(SAMPLES / name)
                                                                 for name in ("planner", "greedy", "random")])
    db = tmp_path / "arena.db"
    done = arena("run", config, "--db", db, "--no-site", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["note"] == f"1 deal: too few to rank (a rank needs {MIN_GROUPS} for each bot)"
    assert [(line["shared_rank"], line["rank_interval_95"], line["p_above_next"]) for line in out["standings"]] == [
        ("-", [1, 3], None)] * 3
    text = arena("standings", "--db", db)
    assert text.returncode == 0 and "not enough data: 1 deal: too few to rank" in text.stdout
    # The shape docs/CLI.md shows script authors ("JSON for scripts") is the shape printed, key for key.
    printed = json.loads(arena("standings", "--db", db, "--json").stdout)
    block = re.search(r"## JSON for scripts.*?```json\n(.*?)```", CLI_DOC.read_text(), re.DOTALL)
    assert block is not None, "docs/CLI.md has no JSON example under 'JSON for scripts'"
    documented = json.loads(block.group(1))
    assert list(printed) == list(documented)
    assert all(list(line) == list(documented["standings"][0]) for line in printed["standings"])
    rows = [row.split() for row in text.stdout.splitlines()[3:]]
    assert [(row[0], row[-2]) for row in rows] == [("-", "-")] * 3  # rank, P>next


@pytest.mark.slow
def test_a_bot_that_crashes_in_every_match_is_never_shown_at_a_rank_starting_at_1(tmp_path: Path) -> None:
    crasher = make_bot(tmp_path, "crash_traceback", name="crasher")  # raises at its second turn of every match
    bots = [str(SAMPLES / name) for name in ("planner", "greedy", "js-greedy", "random")] + [str(crasher)]
    db = tmp_path / "arena.db"
    done = arena("run", write_config(tmp_path, bots=bots, repeats=1), "--db", db, "--no-site", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["matches"] == 20
    [line] = [line for line in out["standings"] if line["bot"] == "crasher"]
    assert sum(line["faults"].values()) == line["matches"] == 8 and not line["shared_rank"].startswith("1")
    # The same store shown without the floor on deals: its own interval alone keeps it off rank 1.
    store = Store(db, readonly=True)
    table, sure = standings_and_confidence(store, store.tournaments()[0]["id"])
    [crashed] = [standing.bot_id for standing in table if standing.name == "crasher"]
    interval = shown(sure, [standing.bot_id for standing in table], min_groups=0).line(crashed).interval
    assert interval is not None and interval[0] > 1
