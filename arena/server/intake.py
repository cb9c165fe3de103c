"""One upload, from an archive on the server's scratch disk to a new registry version, or a refusal saying why.

The order matters and is the same for every upload:

1. unpack the archive into a fresh scratch directory with every guard of :mod:`arena.bots.archive` (400 on refusal);
2. read its ``bot.yaml`` (400);
3. holding this author's lock, then the bot name's lock (so two uploads can neither both take a free name nor
   both squeeze under the rate limit): 403 if the name belongs to another author or to the organiser (a registry
   bot no author owns); 429 if the author's accepted uploads in the last hour reached the limit;
4. :meth:`arena.registry.versions.Registry.submit`: the registry's own guards, the build if the manifest has one and the
   same admission check as ``arena check`` (both in the sandbox), then the version taken atomically, its entry in
   ``versions.json`` naming the author; a bot that fails its build or its check gets 422 and its report;
5. only then is the name claimed and the submission logged (one transaction), so a rejected upload neither claims
   the name nor counts toward the limit.

The registry's index is the commit point: a version is stored together with its author's name in one atomic
rename. A crash between 4 and 5 leaves a version whose author is known but whose claim is not in the store yet;
:meth:`Intake.recover` (run when the intake starts, before any upload) finds such versions and claims them, with
the version's own submission time for the rate limit. A crash before 4's rename stores nothing and claims nothing.
So after a restart an accepted upload has both its version and its claim, and a refused one has neither.
"""

from __future__ import annotations

import calendar
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from arena.bots.archive import ArchiveLimits, ArchiveRejected, unpack
from arena.bots.files import SubmissionRejected, remove_tree
from arena.bots.manifest import ManifestError, load_bot
from arena.registry.build import DEFAULT_BUILD_LIMITS, BuildLimits
from arena.registry.check import CheckReport, check_bot
from arena.registry.versions import Registry, RegistryError
from arena.sandbox import reaper
from arena.server.authors import (
    Author,
    NameTaken,
    accepted_since,
    all_owners,
    list_authors,
    looks_alike,
    record_acceptance,
    submissions_of,
)
from arena.store import Store

LOGGER = logging.getLogger(__name__)
HOUR = 3600.0


class Checker(Protocol):
    """:func:`arena.registry.check.check_bot`'s shape: check ``directory`` in ``sandbox``, leaving a build at ``built``."""

    def __call__(self, directory: Path, sandbox: str, *, build_limits: BuildLimits, built: Path) -> CheckReport: ...


@dataclass(frozen=True)
class IntakeSettings:
    db: Path
    registry: Path
    scratch: Path
    sandbox: str = "process"
    uploads_per_hour: int = 10
    archive: ArchiveLimits = ArchiveLimits()
    build: BuildLimits = DEFAULT_BUILD_LIMITS
    """The limits of an upload's ``build:`` command (``server: build_seconds, build_memory_mb``)."""
    check_slots: int = field(default_factory=lambda: max(1, (os.cpu_count() or 2) // 2))
    """Admission checks at once: they play timed matches, and an overloaded host would fail bots for being slow."""
    house: tuple[str, ...] = ()
    """The names of the league's house bots (bot directories in its ``bots:``): no author may take them or a
    look-alike."""


class Revoked(Exception):
    """The author's token was revoked while their upload was in flight."""


@dataclass(frozen=True)
class Reply:
    """An HTTP status and its JSON body."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


def refusal(status: int, error: str, **more: Any) -> Reply:
    return Reply(status, {"status": "rejected", "error": error, **more})


STOPPING = Reply(503, {"status": "rejected", "error": "the server is stopping: nothing was stored; send the upload "
                                                       "again once it is back"}, {"Retry-After": "30"})
"""The answer to an upload that came, or was being checked, as the server stopped (:meth:`Intake.stop`)."""


class _Locks:
    """One lock per key, made on first use."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}

    def __call__(self, key: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())


class Intake:
    """Takes uploads for one registry and store; safe to call from many threads at once."""

    def __init__(self, settings: IntakeSettings, checker: Checker = check_bot,
                 fault: Callable[[str], None] = lambda point: None,
                 live: Callable[[Author], bool] = lambda author: True) -> None:
        """``fault(point)`` is called at the points where a crash matters (``"checking"``: nothing is stored yet;
        ``"stored"``: the version is in the registry, its claim not yet in the store), so that a test can kill the
        process exactly there. ``live(author)`` says whether the author's token still works: asked before the
        check and again after it, just before the version is stored, so a revoked author's upload stops."""
        self.settings = settings
        self.checker = checker
        self.fault = fault
        self.live = live
        self.registry = Registry(settings.registry)
        self._author_locks = _Locks()
        self._name_locks = _Locks()
        self._check_slots = threading.BoundedSemaphore(settings.check_slots)
        self._stopping = threading.Event()
        settings.scratch.mkdir(parents=True, exist_ok=True)
        self.recovered = self.recover()

    def recover(self) -> list[str]:
        """Claim every stored version that names its author but has no submission in the store (a crash between
        storing it and claiming its name); return their labels. Runs before the intake takes any upload."""
        recovered: list[str] = []
        store = Store(self.settings.db)
        try:
            authors = {summary.author.name: summary.author for summary in list_authors(store)}
            for name in self.registry.names():
                logged = submissions_of(store, name)
                for version in self.registry.versions(name):
                    if version.author is None or version.version in logged:
                        continue
                    author = authors.get(version.author)
                    if author is None:
                        LOGGER.warning("%s: submitted by %r, who is not an author of this store: left unclaimed",
                                       version.label, version.author)
                        continue
                    at = float(calendar.timegm(time.strptime(version.submitted_at, "%Y-%m-%dT%H:%M:%SZ")))
                    try:
                        record_acceptance(store, author, name, version.version, version.files_hash, at)
                    except NameTaken:
                        LOGGER.warning("%s: submitted by %s, but the name belongs to another author: left "
                                       "unclaimed", version.label, author.name)
                        continue
                    LOGGER.warning("%s: stored before a crash, now claimed for %s", version.label, author.name)
                    recovered.append(version.label)
        finally:
            store.close()
        return recovered

    def stop(self) -> int:
        """The server stops: take no more uploads and cut the checks and builds in flight short (SIGKILL to each
        sandbox this process launched and has not reaped; the league's bots are its workers', not ours), so that a
        stop waits for no build's time limit; their uploads are answered :data:`STOPPING`. The sandboxes killed."""
        self._stopping.set()
        launched = list(reaper.LAUNCHED)
        for pid in launched:
            reaper.kill_group(pid)  # each check's own kill then reaps it, as for a bot that died
        return len(launched)

    def submit(self, author: Author, archive: Path) -> Reply:
        if self._stopping.is_set():
            return STOPPING
        scratch = Path(tempfile.mkdtemp(prefix=f"{author.name}-", dir=self.settings.scratch))
        try:
            return self._submit(author, archive, scratch)
        finally:
            remove_tree(scratch)

    def _submit(self, author: Author, archive: Path, scratch: Path) -> Reply:
        (scratch / "bot").mkdir()
        try:
            unpacked = unpack(archive, scratch / "bot", self.settings.archive)
            name = load_bot(unpacked.root).name
        except (ArchiveRejected, ManifestError) as error:
            return refusal(400, _scrub(str(error), scratch))
        with self._author_locks(author.name), self._name_locks(name):
            store = Store(self.settings.db)
            try:
                taken = self._name_problem(store, author, name)
                if taken is not None:
                    return refusal(403, taken)
                now = time.time()
                recent = accepted_since(store, author, now - HOUR)
                if len(recent) >= self.settings.uploads_per_hour:
                    wait = int(recent[0] + HOUR - now) + 1
                    return Reply(429, {"status": "rejected", "retry_after_s": wait,
                                       "error": f"rate limit: {self.settings.uploads_per_hour} accepted uploads an "
                                                f"hour; the next is possible in {wait} s"},
                                 {"Retry-After": str(wait)})
                try:
                    result = self.registry.submit(
                        unpacked.root, lambda copy, built: self._check(copy, built, name, author), author=author.name)
                except Revoked:
                    return refusal(401, "your API token was revoked while this upload was in flight; nothing stored")
                except (ManifestError, SubmissionRejected) as error:
                    return refusal(400, _scrub(str(error), scratch))
                except (RegistryError, OSError) as error:
                    return refusal(500, f"the server could not store the bot: {error}")
                report = None if result.report is None else result.report.to_dict()
                if result.status == "rejected" and self._stopping.is_set():
                    return STOPPING  # its check was cut short by the stop, not failed by the bot
                if result.status == "rejected":
                    return refusal(422, f"{result.reason} (the admission check: arena check shows it locally)",
                                   name=name, check=report)
                if result.status == "unchanged":
                    return Reply(200, {"status": "unchanged", "name": name, "version": result.version,
                                       "files_hash": result.files_hash, "reason": result.reason})
                assert result.version is not None
                self.fault("stored")
                try:
                    record_acceptance(store, author, name, result.version, result.files_hash, now)
                except NameTaken:  # cannot happen under the name lock; kept so a bug cannot hand a name over
                    return refusal(403, f"the bot name {name!r} belongs to another author")
                return Reply(201, {"status": "stored", "name": name, "version": result.version,
                                   "label": f"{name}@{result.version}", "files_hash": result.files_hash,
                                   "check": report})
            finally:
                store.close()

    def _name_problem(self, store: Store, author: Author, name: str) -> str | None:
        """Why ``author`` may not take ``name``, or None: it, or a look-alike of it (:func:`looks_alike`), is a house
        bot's, a registry bot's that no author owns (the organiser's), or another author's."""
        owners = all_owners(store)
        house = set(self.settings.house)
        for other in sorted({*self.registry.names(), *house}):
            if not looks_alike(name, other):
                continue
            owner = None if other in house else owners.get(other)
            if owner == author.name:
                continue
            whose = ("a house bot of this league" if other in house else "the organiser" if owner is None
                     else "another author")
            what = "belongs to" if other == name else f"looks like {other!r}, which belongs to"
            return f"the bot name {name!r} {what} {whose}; pick another name in bot.yaml"
        return None

    def _check(self, copy: Path, built: Path, name: str, author: Author) -> CheckReport:
        self.fault("checking")
        with self._check_slots:
            if not self.live(author):
                raise Revoked(author.name)
            report = self.checker(copy, self.settings.sandbox, build_limits=self.settings.build, built=built)
        if not self.live(author):
            raise Revoked(author.name)
        report.directory = f"upload:{name}"  # not the server's scratch path
        return report


def _scrub(message: str, scratch: Path) -> str:
    """Messages name files by the server's scratch paths; the author knows them relative to the archive."""
    return message.replace(f"{scratch / 'bot'}/", "").replace(str(scratch / "bot"), "(archive)")
