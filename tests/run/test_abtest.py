"""arena test end to end (real bots, real store) and its pieces: the paired schedule, the order-independent
tally, the verdicts and exit statuses, resuming, and the deals past the verdict dropped from the store."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from arena.cli.main import main
from arena.run import abtest
from arena.stats.sprt import Settings
from arena.store import Store

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_bots"


def run(*args: str) -> tuple[int, dict, str]:
    result = CliRunner().invoke(main, ["test", *args, "--threshold", "25", "--workers", "2", "--no-site", "--json"],
                                catch_exceptions=False)
    return result.exit_code, json.loads(result.stdout) if result.stdout.strip() else {}, result.stderr


@pytest.fixture()
def greedy_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "greedy-new"
    shutil.copytree(SAMPLES / "greedy", copy)
    return copy


def test_the_table_seats_new_and_base_together_in_every_seat_and_order() -> None:
    test = abtest.make_test(SAMPLES / "greedy", SAMPLES / "random", (SAMPLES / "planner", SAMPLES / "js-greedy"),
                            None, Settings(), 480, seed=5)
    assert test.config.players == 4 and test.matches_per_deal == 8 and test.places_per_side == 8
    matches = abtest.schedule(test)
    for deal in range(test.deals):
        mine = [m for m in matches if m.group == deal]
        assert len(mine) == 8 and len({m.seed for m in mine}) == 1
        assert sorted(m.bots.index(abtest.NEW) for m in mine) == sorted(m.bots.index(abtest.BASE) for m in mine) \
            == [0, 0, 1, 1, 2, 2, 3, 3]
        # NEW sits right before BASE in half the matches and right after in the other half
        assert sum((m.bots.index(abtest.BASE) - m.bots.index(abtest.NEW)) % 4 == 1 for m in mine) == 4


def test_the_field_pairs_new_and_base_on_the_same_deal_and_seats() -> None:
    test = abtest.make_test(SAMPLES / "greedy", SAMPLES / "random", (SAMPLES / "planner", SAMPLES / "js-greedy"),
                            3, Settings(), 600, seed=5, pairing="field")
    matches = abtest.schedule(test)
    assert len(matches) == 600 and test.matches_per_deal == 6
    for deal in range(test.deals):
        mine = [m for m in matches if m.group == deal]
        assert len({m.seed for m in mine}) == 1
        for new, base in zip(mine[0::2], mine[1::2]):
            # same seats, NEW in one where BASE is in the other
            assert [abtest.BASE if s == abtest.NEW else s for s in new.bots] == list(base.bots)
        assert sorted(m.bots.index(abtest.NEW) for m in mine[0::2]) == [0, 1, 2]  # every seat once
    assert len({m.seed for m in matches}) == test.deals
    heads_up = abtest.schedule(abtest.make_test(SAMPLES / "greedy", SAMPLES / "random", (), None, Settings(), 40, 5))
    assert [m.bots for m in heads_up[:2]] == [(0, 1), (1, 0)] and heads_up[0].seed == heads_up[1].seed


def test_the_tally_does_not_depend_on_the_order_of_arrival() -> None:
    test = abtest.make_test(SAMPLES / "greedy", SAMPLES / "random", (SAMPLES / "planner",), 2, Settings(), 400, 1,
                            pairing="field")
    rng = random.Random(7)
    matches = abtest.schedule(test)
    places = {m.index: rng.sample([1, 2], 2) for m in matches}
    def course(order: list[int]) -> list[tuple[int, float]]:
        tally, seen = abtest.Tally(test), []
        for index in order:
            for slot, place in zip(matches[index].bots, places[index]):
                moved = tally.add(matches[index].group, slot, place)
                if moved is not None:
                    seen.append((moved.samples, moved.llr))
        return seen
    in_order = course([m.index for m in matches])
    shuffled = [m.index for m in matches]
    rng.shuffle(shuffled)
    # out of order several deals may complete at once, so fewer steps are seen, but each is a step of the
    # in-order course (the same prefix of deals), and the end is the same
    seen = course(shuffled)
    assert seen[-1] == in_order[-1] and set(seen) <= set(in_order)


@pytest.mark.slow  # a second whole A/B test: the fast profile keeps the next one; "not better" is test_sprt's
def test_identical_bots_are_not_better_and_a_rerun_resumes_to_the_same_verdict(tmp_path: Path,
                                                                              greedy_copy: Path) -> None:
    db = str(tmp_path / "arena.db")
    code, found, _ = run(str(greedy_copy), str(SAMPLES / "greedy"), "--db", db)
    # greedy is deterministic: from both seats of a deal the two copies trade places exactly, every difference is
    # 0; a gain of the margin (0.2 heads-up at the table) would need +1 in a fifth of the deals, never seen, and each
    # deal of 0 costs it log(0.8): 14 deals to the bound log(0.05 / 0.95)
    assert code == 1 and found["verdict"] == "not better" and found["stopped"] == "verdict", found
    assert (found["new"], found["base"]) == ("greedy@new", "greedy@base")
    assert found["margin"] == 0.2 and found["deals"] == 14 and found["matches"] == 28
    # the interval, with no spread in the data: a share of deals other than 0 that 14 zeros leave a 2.5% chance of
    assert found["difference"] == 0.0 and found["interval_95"] == [-0.2316, 0.2316]
    assert found["bounds"][0] - 0.23 < found["llr"] <= found["bounds"][0]  # one deal past the bound, no sentinel
    again = CliRunner().invoke(main, ["test", str(greedy_copy), str(SAMPLES / "greedy"), "--threshold", "25",
                                      "--no-site", "--db", db])
    assert again.exit_code == 1, again.stderr
    assert again.stdout == ("not better: greedy@new is not better than greedy@base. The test was set to detect a gain "
                            "of 0.2 places per match head to head at the table; estimated gain +0.00 [-0.23, +0.23] "
                            "places per match, after 28 matches (14 deals).\n")
    standings = CliRunner().invoke(main, ["standings", found["tournament"], "--db", db, "--json"])
    assert standings.exit_code == 0
    assert sum(line["matches"] for line in json.loads(standings.stdout)["standings"]) == 56


@pytest.mark.slow  # a whole A/B test to its verdict
def test_a_clear_improvement_is_better_and_the_deals_past_the_verdict_are_dropped(tmp_path: Path) -> None:
    db = tmp_path / "arena.db"
    code, found, _ = run(str(SAMPLES / "greedy"), str(SAMPLES / "random"), "--db", str(db), "--max-matches", "400")
    assert code == 0 and found["verdict"] == "better" and found["difference"] > 0.5, found
    assert found["llr"] >= found["bounds"][1]
    # the estimate at the stop and its interval, which holds it; the plain mean is reported beside them
    low, high = found["interval_95"]
    assert 0 < low <= found["difference"] <= high and found["mean_difference"] > 0.5
    store = Store(db)
    tid = store.tournament(found["tournament"])["id"]
    # two workers may have finished matches of later deals before the verdict: they are gone, the run is finished
    statuses = store.status_counts(tid)
    assert statuses == {"done": found["matches"]}, statuses
    assert store.tournament(found["tournament"])["finished_at"] is not None


@pytest.mark.slow
def test_the_cap_leaves_it_undecided(tmp_path: Path, greedy_copy: Path) -> None:
    code, found, _ = run(str(greedy_copy), str(SAMPLES / "greedy"), "--db", str(tmp_path / "a.db"),
                         "--max-matches", "40", "--margin", "0.001", "--alpha", "0.001", "--beta", "0.001")
    assert code == 3 and found["verdict"] == "undecided" and found["stopped"] == "cap" and found["matches"] == 40


@pytest.mark.parametrize("args, message", [
    (["--players", "3"], "--players: 3 seats with --pairing table need 1 --opponents, got 0"),
    (["--opponents", str(SAMPLES / "random"), "--players", "2"], "--opponents: a heads-up table has no seat"),
    (["--pairing", "field"], "--players: 2 seats with --pairing field need 1 --opponents, got 0"),
    (["--max-matches", "1"], "--max-matches: expected at least 2 (one deal), got 1"),
    (["--margin", "1"], "--margin: expected fewer places than a deal's largest difference, 1 at 2 seats, got 1.0"),
    (["--alpha", "0.7"], "--alpha: expected an error rate"),
    (["--margin", "0"], "--margin: expected a positive difference"),
    (["--opponents", str(SAMPLES / "greedy")], "a bot directory is named twice"),
])
def test_bad_options_are_usage_errors(tmp_path: Path, args: list[str], message: str) -> None:
    code, found, stderr = run(str(SAMPLES / "planner"), str(SAMPLES / "greedy"), "--db", str(tmp_path / "a.db"), *args)
    assert code == 2 and message in found["error"] and found["exit_code"] == 2 and not stderr, (found, stderr)


@pytest.mark.slow
def test_match_games_prints_totals_per_bot_over_seat_rotations(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["match", str(SAMPLES / "greedy"), str(SAMPLES / "random"), "--games", "5",
                                       "--threshold", "25", "--workers", "2", "--log", str(tmp_path / "logs"),
                                       "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    found = json.loads(result.stdout)
    greedy, random_ = found["bots"]
    assert (greedy["bot"], random_["bot"]) == ("greedy", "random")
    # heads-up, so every match has exactly one first place, shared or not
    assert greedy["matches"] == random_["matches"] == 5
    assert greedy["wins"] + random_["wins"] + (greedy["ties"] + random_["ties"]) // 2 == 5
    assert greedy["place"]["mean"] < random_["place"]["mean"]
    assert greedy["place"]["low"] <= greedy["place"]["mean"] <= greedy["place"]["high"]
    assert len(list((tmp_path / "logs").glob("*.jsonl.gz"))) == 5
    text = CliRunner().invoke(main, ["match", str(SAMPLES / "greedy"), str(SAMPLES / "greedy"), "--games", "2",
                                     "--threshold", "25", "--log", str(tmp_path / "logs2")])
    assert text.exit_code == 0 and text.stdout.startswith("Score of greedy#1 vs greedy#2: 2 matches"), text.stdout
