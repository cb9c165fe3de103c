"""The docker backend's warm pool: started containers that wait for their bot's next launch (:class:`WarmPool`)."""

from __future__ import annotations

import logging
import multiprocessing.util
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Generic, Protocol, TypeVar

from arena.bots.manifest import BotSpec
from arena.sandbox import SandboxError, SandboxLimits

LOGGER = logging.getLogger(__name__)

WARM_LABEL = "arena.warm"
"""On containers started ahead of their bot's launch (:class:`WarmPool`)."""
WARM_CONTAINERS = 8
"""How many started, idle containers a sandbox keeps ready for the bots it launched last (see :class:`WarmPool`)."""
SEEN_KEYS = 4096
"""How many bots (with their limits) the warm pool remembers as launched once."""


class Waiting(Protocol):
    """A started container waiting for its bot (arena/sandbox/docker.py's DockerBot)."""

    @property
    def container(self) -> Any: ...
    def wake(self) -> bool: ...
    def discard(self) -> None: ...


P = TypeVar("P", bound=Waiting)


class WarmPool(Generic[P]):
    """Started containers that wait for their bot's next launch, so that a match does not wait for the engine.

    A container start is the engine's work (namespaces, mounts, the init: about a quarter of a second on a quiet
    host), and a match's seats start together. After each launch of a bot in the runtime image, a background thread
    starts one more container of the same bot with the same limits, which waits in a shell
    (:data:`arena.sandbox.docker.WARM_SCRIPT`, :data:`arena.sandbox.fifos.WARM_SCRIPT`); the bot's next launch
    takes it and sends the line that makes it the bot: no process of the bot lives before its match. The engine's
    work is the same; it is done while the previous match plays instead of while the next one waits.

    A bot's first launch only marks it as seen: a bot launched once (a check, a single match) is not paid for twice;
    from its second launch on, each launch leaves one waiting. At most ``size`` containers wait; when more would,
    those of the bot launched longest ago go first. They end by themselves when the runner dies (their stdin ends)
    and a later runner's stale sweep removes them.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._idle: OrderedDict[Hashable, list[P]] = OrderedDict()
        self._taken: set[str] = set()
        self._seen: OrderedDict[Hashable, None] = OrderedDict()
        self._closed = False
        self._warming = ThreadPoolExecutor(max_workers=1, thread_name_prefix="arena-warm") if size > 0 else None
        if self._warming is not None:
            # Also in a pool worker, which ends through os._exit: multiprocessing runs these finalizers first.
            multiprocessing.util.Finalize(self, self.close, exitpriority=10)

    @staticmethod
    def key(bot: BotSpec, limits: SandboxLimits, image: str) -> Hashable:
        """What makes two launches interchangeable: everything
        :meth:`arena.sandbox.docker.DockerSandbox.container_options` reads."""
        return image, bot.name, bot.command, str(bot.directory), limits

    def take(self, key: Hashable) -> P | None:
        """A waiting container of ``key``, woken into its bot; None when none waits (or none still lives)."""
        while True:
            with self._lock:
                waiting = self._idle.get(key)
                if not waiting:
                    return None
                process = waiting.pop()
                self._taken.add(process.container.id)
            if process.wake():
                return process
            process.discard()  # it died while it waited: take the next

    def expect(self, key: Hashable) -> None:
        """Count ``key`` as launched once already: more launches of it are known to come, so its next launch
        leaves one waiting."""
        with self._lock:
            self._see(key)

    def _see(self, key: Hashable) -> bool:
        """Mark ``key`` as launched; whether it had been before."""
        seen = key in self._seen
        self._seen[key] = None
        self._seen.move_to_end(key)
        while len(self._seen) > SEEN_KEYS:
            self._seen.popitem(last=False)
        return seen

    def refill(self, key: Hashable, start: Callable[[], P | None]) -> None:
        """Start one more waiting container of ``key`` in the background (``start`` makes it, or None when its bot
        could not start: then none waits)."""
        if self._warming is None or self._closed:
            return
        with self._lock:
            if not self._see(key):
                return
            self._idle.setdefault(key, [])
            self._idle.move_to_end(key)
        try:
            self._warming.submit(self._add, key, start)
        except RuntimeError:  # closed meanwhile
            pass

    def lacks(self, key: Hashable) -> bool:
        """Whether no container of ``key`` waits (one still being started for it is not counted)."""
        with self._lock:
            return not self._idle.get(key) and not self._closed

    def _add(self, key: Hashable, start: Callable[[], P | None]) -> None:
        try:
            process = start()
        except SandboxError as error:
            LOGGER.debug("no warm container: %s", error)  # the next launch starts cold and says why if it fails
            return
        if process is None:
            return
        surplus = []
        with self._lock:
            if self._closed:
                surplus.append(process)
            else:
                self._idle.setdefault(key, []).append(process)
                count = sum(len(waiting) for waiting in self._idle.values())
                for waiting in self._idle.values():  # least recently launched first
                    while waiting and count > self.size:
                        surplus.append(waiting.pop(0))
                        count -= 1
        for extra in surplus:
            _kill_quietly(extra)

    def settle(self) -> None:
        """Wait until the containers being started have joined the pool (for tests and benches)."""
        if self._warming is not None and not self._closed:
            try:
                self._warming.submit(lambda: None).result()
            except RuntimeError:  # closed meanwhile
                pass

    def waiting(self) -> int:
        """How many containers wait now."""
        with self._lock:
            return sum(len(processes) for processes in self._idle.values())

    def idle(self, container: Any) -> bool:
        """Whether ``container`` is one of the pool's (waiting, or being started), not a launched bot's."""
        with self._lock:
            return container.labels.get(WARM_LABEL) == "1" and container.id not in self._taken

    def close(self) -> None:
        """Stop warming and remove every waiting container."""
        with self._lock:
            self._closed = True
        if self._warming is not None:
            self._warming.shutdown(wait=True, cancel_futures=True)  # one being started goes as it joins (_add)
        with self._lock:
            waiting = [process for processes in self._idle.values() for process in processes]
            self._idle.clear()
        if waiting:
            # Side by side: a removal is a few calls to the engine, which one after another would add to the end
            # of every run (a worker closes its pool as it exits).
            with ThreadPoolExecutor(max_workers=len(waiting), thread_name_prefix="arena-warm-end") as ends:
                list(ends.map(_kill_quietly, waiting))


def _kill_quietly(process: Waiting) -> None:
    try:
        process.discard()
    except SandboxError as error:
        LOGGER.debug("could not remove a warm container: %s", error)
