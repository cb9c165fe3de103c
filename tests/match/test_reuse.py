"""Bots that stay up: several matches per process (PROTOCOL.md, "Several matches per process"), real sandboxes.

A persistent bot's lane keeps its process from one match to the next; a v1 bot, a bot that ends a match uncleanly,
holds too much memory or leaves a child behind gets a fresh process for its lane's next match, and none of that
changes any match's result.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.bots.manifest import load_bot
from arena.game.rules import Rules
from arena.match.live import LiveBots, Reuse
from arena.match.matchlog import read_records
from arena.match.protocol import Limits
from arena.match.referee import MatchResult, play_match
from arena.sandbox import Exit, Sandbox, SandboxLimits
from arena.sandbox.cgroups import Watched, cgroup_of
from arena.sandbox.process import ProcessSandbox
from tests.hostile import FAULTS, leftovers, make_bot
from tests.support.docker import require_docker

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_bots"
SHORT = Rules(threshold=30)
LIMITS = SandboxLimits(memory_mb=256)

PERSISTENT_BOT = '''\
import os, sys, time
import arena_bot

MODE = {mode!r}


class Bot(arena_bot.Bot):
    persistent = {persistent!r}
    hoard = []

    def on_turn(self, message):
        return arena_bot.play([message["hand"][0]], "deck")

    def reply(self, message):
        if message.get("type") != "match_end":
            return super().reply(message)
        if MODE == "leak":  # 160 MiB, touched, kept: more than half of its 256 MiB cap
            self.hoard.append(b"x" * (160 << 20))
        elif MODE == "fork":  # a child that outlives the match, asleep
            if os.fork() == 0:
                time.sleep(3600)
                os._exit(0)
        elif MODE == "ignore_end":  # carries on as if the match had not ended: never says done
            return None
        elif MODE == "chatty":  # done, then a line nobody asked for
            sys.stdout.write('{{"type":"done"}}\\n{{"type":"still here"}}\\n')
            sys.stdout.flush()
            return None
        elif MODE == "wrong_done":
            return {{"type": "ready"}}
        return super().reply(message)


arena_bot.run(Bot())
'''


def persistent_bot(root: Path, mode: str, persistent: bool = True) -> Path:
    directory = root / f"p-{mode}-{persistent}"
    directory.mkdir()
    (directory / "bot.py").write_text(PERSISTENT_BOT.format(mode=mode, persistent=persistent))
    (directory / "bot.yaml").write_text(f"name: p-{mode}\ncommand: python3 bot.py\n")
    return directory


@pytest.fixture(scope="module")
def sandbox() -> ProcessSandbox:
    return ProcessSandbox()


@pytest.fixture
def docker() -> Iterator[Sandbox]:
    require_docker()
    from arena.sandbox.docker import DockerSandbox

    sandbox = DockerSandbox()
    try:
        yield sandbox
    finally:
        sandbox.close()


def series(sandbox: Sandbox, bots: list[Path], seeds: list[int], tmp_path: Path,
           live: LiveBots | None) -> list[MatchResult]:
    """The matches of ``seeds`` in order, each seat in lane ``seat`` when ``live`` is given."""
    specs = [load_bot(bot) for bot in bots]
    lanes = [f"lane-{seat}" for seat in range(len(specs))] if live is not None else None
    return [play_match(specs, seed, sandbox, SHORT, Limits(), LIMITS, tmp_path / f"{seed}-{live is None}.jsonl.gz",
                       live=live, lanes=lanes) for seed in seeds]


def outcome(result: MatchResult) -> tuple[object, ...]:
    return tuple((p.place, p.score, p.fault) for p in result.players), result.events


@pytest.mark.slow
@pytest.mark.long
def test_sample_bots_play_several_matches_per_process_with_the_results_of_fresh_ones(sandbox, tmp_path):
    bots = [SAMPLES / "greedy", SAMPLES / "random", SAMPLES / "js-greedy"]
    live = LiveBots(Reuse(matches=3))
    pids: list[list[int | None]] = []
    reused = []
    for seed in (11, 12, 13, 14):
        reused += series(sandbox, bots, [seed], tmp_path, live)
        pids.append([process.pid for process in (live._lanes[f"lane-{seat}"].process for seat in range(3))]
                    if len(live) == 3 else [])
    fresh = series(sandbox, bots, [11, 12, 13, 14], tmp_path, None)
    assert [outcome(r) for r in reused] == [outcome(r) for r in fresh]
    assert all(p.fault is None for r in reused for p in r.players)
    # One process per lane for matches 1-3, a new one from the 4th (Reuse.matches=3): the same pids, then others.
    assert pids[0] == pids[1] and pids[0] and pids[3] and not set(pids[3]) & set(pids[0]), pids
    assert pids[2] == []  # the third match ended every lane (recycle.matches), which is no retirement
    assert live.retired == []
    assert [r for _, r in read_records(reused[0].log_path) if r["t"] == "retired"] == []
    live.close()
    assert leftovers(sandbox, bots[0]) == []


def test_a_v1_bot_in_a_lane_plays_each_match_in_a_fresh_process(sandbox, tmp_path):
    bots = [persistent_bot(tmp_path, "plain", persistent=False), SAMPLES / "greedy"]
    live = LiveBots()
    series(sandbox, bots, [1], tmp_path, live)
    assert list(live._lanes) == ["lane-1"]  # only the persistent greedy stays up
    live.close()


def test_lanes_started_ahead_play_their_first_match_as_launched_ones_and_end_with_the_rest(sandbox, tmp_path):
    bots = [SAMPLES / "greedy", SAMPLES / "random"]
    unused = persistent_bot(tmp_path, "plain")
    live = LiveBots()
    live.start(sandbox, {"lane-0": load_bot(bots[0]), "lane-1": load_bot(bots[1]), "lane-9": load_bot(unused)},
               LIMITS)
    started = {lane: live._started[lane].process.pid for lane in ("lane-0", "lane-1", "lane-9")}
    reused = series(sandbox, bots, [3, 4], tmp_path, live)
    # The first match took the processes started for its lanes; the second kept them.
    assert {lane: live._lanes[lane].process.pid for lane in ("lane-0", "lane-1")} == {
        lane: started[lane] for lane in ("lane-0", "lane-1")}
    assert live._started["lane-9"].process.pid == started["lane-9"]  # its lane never played: it waits, untouched
    assert [outcome(r) for r in reused] == [outcome(r) for r in series(sandbox, bots, [3, 4], tmp_path, None)]
    assert live.retired == []
    live.close()
    assert [leftovers(sandbox, bot) for bot in (*bots, unused)] == [[], [], []]


HOSTILE = {
    "leak": "recycle.memory",
    "fork": "recycle.processes",
    "ignore_end": "timeout.done",
    "chatty": "invalid.unsolicited",
    "wrong_done": "invalid.done",
}


@pytest.mark.parametrize("mode", [pytest.param(mode, marks=[] if mode == "chatty" else pytest.mark.slow)
                                  for mode in HOSTILE])
def test_a_hostile_persistent_bot_is_recycled_with_its_reason_and_costs_no_match_anything(sandbox, tmp_path, mode):
    recycled_alone(sandbox, tmp_path, mode)


def recycled_alone(sandbox: Sandbox, tmp_path: Path, mode: str) -> None:
    """A hostile persistent bot in ``mode`` and greedy play two matches: each ends the hostile bot's process with
    its reason (:data:`HOSTILE`) and no fault, as fresh processes would play them, and greedy's is kept."""
    bots = [persistent_bot(tmp_path, mode), SAMPLES / "greedy"]
    live = LiveBots()
    reused = series(sandbox, bots, [5, 6], tmp_path, live)
    fresh = series(sandbox, bots, [5, 6], tmp_path, None)
    assert [outcome(r) for r in reused] == [outcome(r) for r in fresh]
    assert all(p.fault is None for r in reused for p in r.players)
    assert [(r.lane, r.reason) for r in live.retired] == [("lane-0", HOSTILE[mode])] * 2, live.retired
    assert list(live._lanes) == ["lane-1"]  # the greedy opponent's process (its container) went on throughout
    live.close()
    assert leftovers(sandbox, bots[0]) == []


@pytest.mark.slow
@pytest.mark.long
def test_on_docker_a_container_stays_up_across_matches_with_the_results_of_fresh_ones(docker, tmp_path):
    bots = [SAMPLES / "greedy", SAMPLES / "random"]
    live = LiveBots()
    reused = series(docker, bots, [21, 22], tmp_path, live)
    kept = [live._lanes[f"lane-{seat}"].process for seat in range(2)]
    reused += series(docker, bots, [23], tmp_path, live)
    assert [live._lanes[f"lane-{seat}"].process for seat in range(2)] == kept  # the same containers
    live.close()
    fresh = series(docker, bots, [21, 22, 23], tmp_path, None)
    assert [outcome(r) for r in reused] == [outcome(r) for r in fresh]
    assert live.retired == [] and all(p.fault is None for r in reused for p in r.players)
    assert leftovers(docker, bots[0]) == []




@pytest.mark.slow
def test_on_docker_a_chains_end_sees_its_containers_exit_rather_than_waiting_out_the_grace(docker, tmp_path):
    bots = [SAMPLES / "greedy", SAMPLES / "random"]
    live = LiveBots()
    series(docker, bots, [31], tmp_path, live)
    kept = [live._lanes[f"lane-{seat}"].process for seat in range(2)]
    began = time.monotonic()
    live.close(grace_s=120)
    # A container's exit shows only as the end of its attach stream: a close that did not read it would poll for
    # the whole grace (120 s) before killing bots that had long exited; they exit at once on the end of stdin.
    assert time.monotonic() - began < 60
    assert [process.kill() for process in kept] == [Exit(0), Exit(0)]  # exited by themselves, not killed
    assert leftovers(docker, bots[0]) == []


@pytest.mark.slow
@pytest.mark.long
@pytest.mark.parametrize("attack", [attack for attack in sorted(FAULTS) if attack != "never_reads_stdin"])
def test_the_hostile_bot_suite_with_reuse_on_faults_alike_and_costs_the_other_lanes_nothing(sandbox, tmp_path,
                                                                                         attack):
    hostile = make_bot(tmp_path / "bots", attack)
    source = hostile / "bot.py"
    source.write_text(source.read_text().replace("class Hostile(arena_bot.Bot):\n",
                                                 "class Hostile(arena_bot.Bot):\n    persistent = True\n"))
    bots = [SAMPLES / "greedy", hostile, SAMPLES / "random"]
    live = LiveBots()
    # Not compared with fresh processes move for move: some attacks race the referee (a line that lands while a
    # turn is asked for is an invalid move, else unsolicited), with a fresh process as with a kept one.
    reused = series(sandbox, bots, [7, 8], tmp_path, live)
    for result in reused:
        assert result.players[1].fault is not None and result.players[1].fault.kind == FAULTS[attack]
        assert result.players[0].fault is None and result.players[2].fault is None
    assert sorted(live._lanes) == ["lane-0", "lane-2"]  # the faulting bot's process is never kept
    live.close()
    assert leftovers(sandbox, hostile) == []


@pytest.mark.slow
@pytest.mark.long
def test_arena_check_plays_a_persistent_bots_matches_in_one_process_and_says_what_ended_it(tmp_path):
    from arena.registry.check import check_bot

    clean = check_bot(persistent_bot(tmp_path, "plain"))
    assert clean.fit, [step.to_dict() for step in clean.steps]
    broken = check_bot(persistent_bot(tmp_path, "ignore_end"))
    [step] = [step for step in broken.steps if step.name == "vs greedy"]
    assert step.ok is False and "timeout.done" in step.got and "done" in step.advice[0]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["leak", "fork"])
def test_on_docker_a_leaking_or_forking_persistent_bot_is_recycled_and_a_clean_one_kept(docker, tmp_path, mode):
    # Without usage from the container's cgroup a leak is kept until its cap kills it in the next match (a fault
    # there), and a child left behind is kept for good.
    recycled_alone(docker, tmp_path, mode)


@pytest.mark.slow
def test_on_docker_a_kept_bot_reports_its_own_processes_and_its_memory(docker, tmp_path):
    from arena.sandbox.docker import DockerBot

    bots = [persistent_bot(tmp_path, "fork"), SAMPLES / "greedy"]
    live = LiveBots(Reuse(memory_fraction=1.0))
    series(docker, bots, [5], tmp_path, live)
    [child_left] = [r.detail for r in live.retired]
    # The container's init is the sandbox's: the bot and its child are two, the greedy bot alone is one.
    assert child_left.startswith("runs 2 processes"), child_left
    kept = live._lanes["lane-1"].process
    usage = kept.usage()
    assert usage is not None and usage.processes == 1
    # A Python interpreter's pages, charged to its container: more than nothing, less than its 256 MiB cap.
    assert usage.memory_bytes is not None and 1 << 20 < usage.memory_bytes < LIMITS.memory_mb << 20, usage
    # The engine's pid is trusted only with the container's id in its cgroup's path (another host's pid names
    # another process here); files gone with their container read as unknown, never as an error.
    assert isinstance(kept, DockerBot) and isinstance(kept._cgroup, Watched)
    assert cgroup_of(kept.container.attrs["State"]["Pid"], "f" * 64) is None
    live.close()
    assert (kept._cgroup.memory_bytes(), kept._cgroup.processes(), kept.usage()) == (None, None, None)
    assert leftovers(docker, bots[0]) == []
