"""The referee against real bot processes: full matches, every fault kind, and nothing left running."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from arena.bots.manifest import load_bot
from arena.game.results import FaultKind, Reason
from arena.game.rules import Rules
from arena.match.matchlog import load, verify
from arena.match.protocol import Limits
from arena.match.referee import MatchResult, play_match
from arena.match.stderr import CLEAN_BYTES, FAULT_BYTES
from arena.sandbox import SandboxLimits
from arena.sandbox.process import ProcessSandbox
from tests.hostile import FAULTS, LIMIT_FIRST, leftovers, make_bot

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_bots"
FAST = Limits(hello_ms=3000, move_ms=400, bank_ms=300)
SHORT = Rules(threshold=30)


@pytest.fixture(scope="module")
def sandbox() -> ProcessSandbox:
    return ProcessSandbox()


def run(bots: list[Path], sandbox: ProcessSandbox, tmp_path: Path, seed: int = 1, limits: Limits = FAST,
        sandbox_limits: SandboxLimits = SandboxLimits()) -> MatchResult:
    return play_match([load_bot(b) for b in bots], seed, sandbox, SHORT, limits, sandbox_limits,
                      log_path=tmp_path / "match.jsonl.gz")


@pytest.mark.parametrize("seed", [1, pytest.param(2, marks=pytest.mark.slow), pytest.param(3, marks=pytest.mark.slow)])
def test_sample_bots_in_both_languages_play_whole_matches_reproducibly(sandbox, tmp_path, seed):
    bots = [SAMPLES / "greedy", SAMPLES / "random", SAMPLES / "js-greedy"]
    first = run(bots, sandbox, tmp_path, seed, Limits())
    second = run(bots, sandbox, tmp_path / "again", seed, Limits())
    assert all(player.fault is None for player in first.players), first.to_dict()
    assert min(p.place for p in first.players) == 1
    assert first.turns > 10
    assert [(p.place, p.score) for p in first.players] == [(p.place, p.score) for p in second.players]
    assert first.events == second.events
    log = load(first.log_path)
    assert verify(log) == []
    assert log.messages > first.turns  # every message exchanged is in the log




# never_reads_stdin is slow: it faults only when the pipe to it fills and a write times out.
@pytest.mark.parametrize("attack", [pytest.param(attack, marks=pytest.mark.slow) if attack == "never_reads_stdin"
                                    else attack for attack in sorted(FAULTS)])
def test_each_misbehaviour_is_a_fault_of_its_kind_and_play_goes_on(sandbox, tmp_path, attack):
    hostile = make_bot(tmp_path / "bots", attack)
    result = run([SAMPLES / "greedy", hostile, SAMPLES / "random"], sandbox, tmp_path)
    bad = result.players[1]
    assert bad.fault is not None, result.to_dict()
    assert bad.fault.kind == FAULTS[attack], bad.fault
    assert bad.fault.detail
    assert bad.place == 3, "a forfeit ranks below every seat that did not forfeit"
    others = [result.players[0], result.players[2]]
    assert all(p.fault is None for p in others)
    assert sorted(p.place for p in others) == [1, 2]
    assert result.rounds >= 1 and result.termination in ("last_standing", "forfeits")
    assert leftovers(sandbox, hostile) == []
    assert verify(load(result.log_path)) == []


def test_crash_keeps_the_bots_last_words(sandbox, tmp_path):
    hostile = make_bot(tmp_path, "crash_traceback")
    result = run([SAMPLES / "greedy", hostile], sandbox, tmp_path)
    fault = result.players[1].fault
    assert fault is not None and fault.kind == FaultKind.CRASH
    assert "boom: the bot fell over" in result.players[1].stderr_tail
    assert "exited with status 1" in fault.detail


def test_debug_text_before_a_move_is_reported_as_the_problem(sandbox, tmp_path):
    result = run([SAMPLES / "greedy", make_bot(tmp_path, "debug_then_move")], sandbox, tmp_path)
    fault = result.players[1].fault
    assert fault is not None and fault.kind == FaultKind.INVALID
    assert "not JSON" in fault.detail and "thinking about it" in fault.detail and "stderr" in fault.detail


def test_timeout_detail_says_what_was_expected(sandbox, tmp_path):
    result = run([SAMPLES / "greedy", make_bot(tmp_path, "sleep_past_deadline")], sandbox, tmp_path)
    fault = result.players[1].fault
    assert fault is not None and "no move within" in fault.detail
    assert result.players[0].place == 1 and result.termination == "forfeits"


def test_stderr_flood_while_playing_correctly_finishes_with_a_clean_seats_budget(sandbox, tmp_path):
    hostile = make_bot(tmp_path, "stderr_flood_every_turn")
    result = run([SAMPLES / "greedy", hostile, SAMPLES / "random"], sandbox, tmp_path, limits=Limits())
    assert all(p.fault is None for p in result.players), result.to_dict()
    kept = result.players[1].stderr_tail
    cut = re.search(r"\n\[\.\.\. \d+ bytes of stderr cut \.\.\.\]\n", kept)
    # a clean seat keeps the head and the tail within CLEAN_BYTES (a faulted one within FAULT_BYTES)
    assert cut is not None and len(kept.encode()) - len(cut.group(0)) == CLEAN_BYTES
    assert kept.endswith("noise ")
    flooded = make_bot(tmp_path, "stderr_flood_then_crash")
    crashed = run([SAMPLES / "greedy", flooded], sandbox, tmp_path, limits=Limits()).players[1]
    assert crashed.fault is not None and crashed.fault.kind == FaultKind.CRASH, crashed
    cut = re.search(r"\n\[\.\.\. \d+ bytes of stderr cut \.\.\.\]\n", crashed.stderr_tail)
    assert cut is not None and len(crashed.stderr_tail.encode()) - len(cut.group(0)) > FAULT_BYTES - 16  # whole lines
    assert "RuntimeError: boom after the noise" in crashed.stderr_tail


@pytest.mark.slow
def test_cpu_limit_is_a_limit_fault(sandbox, tmp_path):
    hostile = make_bot(tmp_path, "cpu_spin")
    result = run([SAMPLES / "greedy", hostile], sandbox, tmp_path, limits=LIMIT_FIRST,
                 sandbox_limits=SandboxLimits(cpu_seconds=1))
    fault = result.players[1].fault
    assert fault is not None and fault.kind == FaultKind.LIMIT, fault
    assert "cpu time" in fault.detail


def test_daemon_grandchild_does_not_outlive_the_match(sandbox, tmp_path):
    hostile = make_bot(tmp_path, "daemon_grandchild")
    result = run([SAMPLES / "greedy", hostile], sandbox, tmp_path)
    assert result.players[1].fault is None
    assert leftovers(sandbox, hostile) == []


def test_a_command_that_does_not_exist_is_a_crash_not_an_infrastructure_error(sandbox, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "bot.yaml").write_text("name: broken\ncommand: ./no-such-program --flag\n")
    result = run([SAMPLES / "greedy", broken, SAMPLES / "random"], sandbox, tmp_path)
    fault = result.players[1].fault
    assert fault is not None and fault.kind == FaultKind.CRASH
    assert fault.reason == Reason.CRASH_EXIT and fault.exit_status == 127
    assert "no-such-program" in result.players[1].stderr_tail
    assert result.players[1].place == 3


def test_two_forfeits_rank_the_earlier_one_lower(sandbox, tmp_path):
    early = make_bot(tmp_path, "declare_first_turn", "early")       # faults at its first turn
    late = make_bot(tmp_path, "sleep_past_deadline", "late")        # faults at its second turn
    result = run([early, SAMPLES / "greedy", late], sandbox, tmp_path)
    assert result.players[1].place == 1
    assert result.players[2].place == 2 and result.players[0].place == 3


@pytest.mark.slow
def test_a_bot_that_exits_at_once_ends_a_two_seat_match_at_once(sandbox, tmp_path):
    dies = tmp_path / "dies"
    dies.mkdir()
    (dies / "bot.yaml").write_text('name: dies\ncommand: python3 -c "raise SystemExit(3)"\n')
    # The other seat answers hello after 2 s, so its ready always comes after the crash (as with a bot slower to
    # start than one that dies at once): the race that makes the wait only occasional with quick bots.
    limits = Limits(hello_ms=60_000, move_ms=400, bank_ms=300)
    result = run([make_bot(tmp_path, "slow_ready"), dies], sandbox, tmp_path, limits=limits)
    fault = result.players[1].fault
    assert fault is not None and fault.kind == FaultKind.CRASH and "exited with status 3" in fault.detail
    assert result.players[0].fault is None and result.players[0].place == 1
    # Not a benchmark: the referee must not wait out the hello limit at all (the match is over at the crash).
    assert result.duration_s < limits.hello_ms / 1000 / 2, f"waited {result.duration_s:.1f} s after the crash"
