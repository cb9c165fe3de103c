"""Bot processes that stay up between matches: which live process plays a seat, and when one is retired.

A bot that answers ``hello`` with ``"persistent": true`` may play several matches on the same pipes (PROTOCOL.md,
"Several matches per process"). The runner names a *lane* for each seat of a match; the schedule decides the lanes
(arena/run/lanes.py), so which earlier matches a process remembers is part of the config, never of which worker was
free. :class:`LiveBots` keeps each lane's process between that lane's matches, for the same bot version under the
same limits, and retires it (the next match of the lane starts a fresh one) when it has played
:attr:`Reuse.matches` matches, holds more than :attr:`Reuse.memory_fraction` of its memory cap, runs a process
besides its own, or did not end its match cleanly (the referee's business: it says why in a :class:`Retired`).
It knows processes and limits, not the rules: the referee decides what a clean end is.

A worker that knows a chain's lanes ahead may start each lane's first process before the chain's first match
(:meth:`LiveBots.start`): all at once, so that a backend whose start-up is slow (containers) pays one start per
chain rather than one for each match that brings in a bot not yet seen. Such a process has played nothing; the
lane's first match takes it as it would take a process launched for it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from arena.bots.manifest import BotSpec
from arena.sandbox import BotProcess, Sandbox, SandboxError, SandboxLimits

LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True)
class Reuse:
    """When a live bot process is recycled (a tournament's ``reuse:``)."""

    matches: int = 16
    """A process plays at most this many matches (the lane's length in the schedule, too)."""
    memory_fraction: float = 0.5
    """A process that holds more than this share of its memory cap after a match is recycled before its next one,
    rather than killed by the cap in the middle of it."""


@dataclass(frozen=True)
class Retired:
    """Why a live process ended before its lane did: a fault code after ``match_end`` (``timeout.done``,
    ``invalid.unsolicited``, ``crash.exit``, ``limit.memory``, ...) or a recycling (``recycle.memory``,
    ``recycle.processes``, ``recycle.gone``). ``recycle.matches`` is a lane's normal end and not recorded."""

    lane: str
    reason: str
    detail: str


@dataclass
class Live:
    """One lane's process, and how many matches it has finished."""

    lane: str
    key: tuple[str, tuple[str, ...], SandboxLimits]
    process: BotProcess
    played: int = 0


@dataclass
class LiveBots:
    """The live processes of one worker, by lane."""

    reuse: Reuse = field(default_factory=Reuse)
    retired: list[Retired] = field(default_factory=list)
    """Every retirement, in order (for the log and the tests)."""
    _lanes: dict[str, Live] = field(default_factory=dict)
    _started: dict[str, Live] = field(default_factory=dict)
    """Processes started ahead of their lane's first match (:meth:`start`), which have played nothing yet."""

    def start(self, sandbox: Sandbox, lanes: Mapping[str, BotSpec], limits: SandboxLimits) -> None:
        """Start the first process of each of ``lanes`` (lane: its bot) at once, for the lane's first match to
        take. Raises :class:`SandboxError` as a launch does, having started none."""
        names = [lane for lane in lanes if lane not in self._lanes and lane not in self._started]
        bots = [lanes[lane] for lane in names]
        # Other chains of the same bots usually follow on this worker: where the backend starts bots ahead (docker's
        # warm pool), their first lanes can then take started ones too.
        sandbox.expect(bots, limits)
        processes = sandbox.launch_all(bots, limits)
        for lane, process in zip(names, processes):
            self._started[lane] = self.fresh(lane, lanes[lane], limits, process)

    def take(self, lane: str, bot: BotSpec, limits: SandboxLimits) -> Live | None:
        """The lane's live process for ``bot`` under ``limits``, taken out of the pool (None: start a fresh one).
        A process left for another bot version or other limits, dead, or with bytes on its stdout that nobody
        asked for, is retired first. A process started for the lane (:meth:`start`) has played no match: it is
        the lane's first match's as it stands, whatever it did since its start, as a process launched for the
        match would be."""
        started = self._started.pop(lane, None)
        if started is not None:
            if started.key == _key(bot, limits):
                return started
            self._retire(started, "recycle.version", "started for another bot version or other limits")
        live = self._lanes.pop(lane, None)
        if live is None:
            return None
        if live.key != _key(bot, limits):
            self._retire(live, "recycle.version", "the lane's next match has another bot version or other limits")
            return None
        ended = live.process.poll()
        if ended is not None:
            self._retire(live, "crash.exit", f"between matches: {ended.describe()}")
            return None
        for fd in live.process.read_fds():
            for stream, data in live.process.read(fd):
                if stream == "stdout":
                    what = "closed its stdout" if not data else f"wrote {len(data)} bytes nobody asked for"
                    self._retire(live, "invalid.unsolicited", f"between matches: {what}")
                    return None
        return live

    def fresh(self, lane: str, bot: BotSpec, limits: SandboxLimits, process: BotProcess) -> Live:
        return Live(lane, _key(bot, limits), process)

    def keep(self, live: Live) -> str | None:
        """``live`` finished a match cleanly: keep it for the lane's next match, or say why not (the caller then
        kills it)."""
        live.played += 1
        if live.played >= self.reuse.matches:
            return "recycle.matches"
        usage = live.process.usage()
        cap = live.key[2].memory_mb << 20
        if usage is not None and usage.memory_bytes is not None and usage.memory_bytes > self.reuse.memory_fraction * cap:
            return self._noted(live, "recycle.memory", f"holds {usage.memory_bytes >> 20} MiB after match "
                               f"{live.played} (more than {self.reuse.memory_fraction:.0%} of its {cap >> 20} MiB)")
        if usage is not None and usage.processes is not None and usage.processes > 1:
            return self._noted(live, "recycle.processes", f"runs {usage.processes} processes after match "
                               f"{live.played}: a child left behind")
        self._lanes[live.lane] = live
        return None

    def note(self, live: Live, reason: str, detail: str) -> None:
        """The referee ends ``live`` for ``reason`` (a fault code after the match's end)."""
        self._noted(live, reason, detail)

    def _noted(self, live: Live, reason: str, detail: str) -> str:
        self.retired.append(Retired(live.lane, reason, detail))
        LOGGER.info("lane %s retired after %d matches: %s: %s", live.lane, live.played, reason, detail)
        return reason

    def _retire(self, live: Live, reason: str, detail: str) -> None:
        self._noted(live, reason, detail)
        try:
            live.process.kill()
        except SandboxError as error:
            LOGGER.warning("lane %s: %s", live.lane, error)

    def close(self, grace_s: float = 1.0) -> None:
        """End every live process (the end of its lanes) and every one started for a lane that never played:
        stdin closed, as after a one-match life, and ``grace_s`` to exit by itself before its tree is killed. The
        lanes end side by side: a container's end is a few calls to its engine, which one lane after another
        would add up at every chain's end. Returns once every one has ended."""
        lanes = [*self._lanes.values(), *self._started.values()]
        self._lanes, self._started = {}, {}
        if not lanes:
            return
        deadline = time.monotonic() + grace_s
        with ThreadPoolExecutor(max_workers=len(lanes), thread_name_prefix="arena-lane-end") as pool:
            ends = [pool.submit(_end, live, deadline) for live in lanes]
        for end in ends:
            end.result()  # every lane has ended by now: an error from one is raised only after that

    def __len__(self) -> int:
        return len(self._lanes)


def _end(live: Live, deadline: float) -> None:
    """Close ``live``'s stdin, give it until ``deadline`` to exit, then kill what is left of it."""
    process = live.process
    process.close_stdin()
    while process.poll() is None and time.monotonic() < deadline:
        # What it still writes is nobody's now, but read it: a container's exit shows as the end of its attach
        # stream, and only a read sees that (unread, its poll would wait out the whole grace).
        for fd in process.read_fds():
            process.read(fd)
        time.sleep(0.002)
    try:
        process.kill()
    except SandboxError as error:
        LOGGER.warning("lane %s: %s", live.lane, error)


def _key(bot: BotSpec, limits: SandboxLimits) -> tuple[str, tuple[str, ...], SandboxLimits]:
    return bot.files_hash, bot.command, limits
