"""The bot registry: immutable, numbered versions of submitted bots, and the guarded copy that puts them there.

Layout of a registry directory (by default ``bots/`` beside the results store, ``results/bots/``)::

    bots/
      .lock                  flock(2) held while a submission takes its version number
      .incoming/             copies being checked; a crashed submit leaves at most a stale temp dir here
      greedy/
        versions.json        {"name": "greedy", "versions": [{"version": 1, "files_hash": ..., "source_hash": ...,
                                                          "author": ..., "check": {...}}, ...]}
        1/                   version 1's files, read-only
        2/

A bot with a ``build:`` in its manifest is built during its check (:mod:`arena.registry.build`), in a scratch copy of the
submitted copy; what is stored is the built tree (sources and outputs). ``files_hash`` is the hash of the stored
tree (what :func:`arena.bots.manifest.load_bot` computes when a tournament loads it); ``source_hash`` is the hash of the
files as submitted, which decides "identical content is not a new version" *before* anything is built (builds need
not be byte-for-byte reproducible, and an identical upload should not cost a build). Without a build they are equal.

A submission is copied into ``.incoming/`` first and checked *there*, so what is stored is exactly what passed the
check, whatever happens to the author's directory meanwhile. Only then, under the lock, is it renamed into place
(a rename within one filesystem is atomic) and ``versions.json`` replaced (write a temp file, then rename). A reader
never sees half a version. The copy refuses whatever could hurt the host that later runs the bot: symlinks, hard
links, devices, FIFOs, sockets, setuid or setgid bits, too many files, too many bytes.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import re
import stat
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena import procfs
from arena.bots.files import VERSIONS_FILE, SubmissionRejected, remove_tree, safe_copy, scan, version_of, walk
from arena.bots.manifest import MANIFEST, NAME_PATTERN, BotSpec, hash_files, load_bot

if TYPE_CHECKING:
    from arena.registry.check import CheckReport

INCOMING = ".incoming"
LOCK_FILE = ".lock"
REGISTRY_PREFIX = "registry:"
VERSION_MODES = ("latest", "all")
"""What ``registry:NAME`` and ``registry:*`` enter in a tournament: the latest version of each bot, or every one."""


class RegistryError(ValueError):
    """A registry that cannot be read, or a ``registry:`` entry that names nothing in it."""



HOLDER = re.compile(r"[a-z0-9][a-z0-9_-]*?-(\d+)-[a-z0-9_]{8}")
UNOWNED_HOLDER_AGE_S = 3600
"""A holder without a pid in its name (made before names carried one) is swept once this old."""


def sweep_incoming(root: Path) -> list[Path]:
    """Remove what submits that are gone left in ``root/.incoming/`` (a server or ``arena submit`` killed during a
    check or a build leaves its copy, and whatever the build wrote, there): the server's ``uploads/`` scratch
    (only a starting server calls this), and every holder whose submitting process is not running. Returns what
    was removed."""
    incoming = root / INCOMING
    removed: list[Path] = []
    try:
        entries = list(incoming.iterdir())
    except OSError:
        return removed
    for entry in entries:
        match = HOLDER.fullmatch(entry.name)
        if entry.name == "uploads":
            stale = True
        elif match is not None:
            pid = int(match.group(1))
            stale = pid == os.getpid() or not procfs.running(pid)
        else:
            try:
                stale = time.time() - entry.lstat().st_mtime > UNOWNED_HOLDER_AGE_S
            except OSError:
                continue
        if stale:
            remove_tree(entry)
            removed.append(entry)
    return removed


def default_registry(db_path: Path) -> Path:
    """The registry that belongs to a results store: ``bots/`` beside it (``results/arena.db`` -> ``results/bots``)."""
    return db_path.parent / "bots"


def make_read_only(root: Path) -> None:
    """Strip every write bit: a stored version must never change under the tournaments that played it."""
    directories = []
    for current, _, names in walk(root):
        directories.append(current)
        for name in names:
            path = Path(current, name)
            os.chmod(path, stat.S_IMODE(os.lstat(path).st_mode) & ~0o222)
    for directory in reversed(directories):  # the deepest first: a parent stays writable until its children are done
        os.chmod(directory, 0o555)


@dataclass(frozen=True)
class Version:
    """One stored version of a bot."""

    name: str
    version: int
    files_hash: str
    submitted_at: str
    directory: Path
    check: dict[str, Any] | None = None
    source_hash: str = ""
    """The hash of the files as submitted (before the build); ``files_hash`` when the bot has no build."""
    author: str | None = None
    """Who submitted it through a league server; None for a local ``arena submit`` (the organiser's)."""

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def fit(self) -> bool:
        return bool(self.check and self.check.get("fit"))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "files_hash": self.files_hash,
                "source_hash": self.source_hash or self.files_hash, "author": self.author,
                "submitted_at": self.submitted_at, "directory": str(self.directory), "check": self.check}


@dataclass(frozen=True)
class SubmitResult:
    """What ``submit`` did: ``stored`` a new version, found the content ``unchanged``, or ``rejected`` it."""

    status: str
    name: str
    files_hash: str
    version: int | None = None
    directory: Path | None = None
    reason: str = ""
    report: CheckReport | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "name": self.name, "version": self.version, "files_hash": self.files_hash,
                "directory": None if self.directory is None else str(self.directory), "reason": self.reason,
                "check": None if self.report is None else self.report.to_dict()}


class Registry:
    """A registry directory. Reading needs no lock: versions.json and version directories only ever appear whole."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve()

    # -- reading ------------------------------------------------------------------------------------------------

    def names(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(entry.name for entry in self.root.iterdir()
                      if NAME_PATTERN.fullmatch(entry.name) and (entry / VERSIONS_FILE).is_file())

    def versions(self, name: str) -> list[Version]:
        path = self.root / name / VERSIONS_FILE
        if not NAME_PATTERN.fullmatch(name) or not path.is_file():
            return []
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return [Version(name=name, version=int(item["version"]), files_hash=item["files_hash"],
                            submitted_at=item["submitted_at"], directory=self.root / name / str(item["version"]),
                            check=item.get("check"), source_hash=item.get("source_hash", item["files_hash"]),
                            author=item.get("author"))
                    for item in data["versions"]]
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise RegistryError(f"{path}: unreadable registry index: {error}") from None

    def latest(self, name: str) -> Version | None:
        found = self.versions(name)
        return found[-1] if found else None

    def resolve(self, entry: str, versions: str = "latest") -> list[Version]:
        """The versions a config's ``registry:`` entry names: ``*``, ``NAME`` or ``NAME@VERSION``.

        ``versions`` ("latest" or "all") says what an unpinned entry means; a pinned one is always that version.
        """
        assert versions in VERSION_MODES
        if entry == "*":
            found = [v for name in self.names() for v in self._pick(self.versions(name), versions)]
            if not found:
                raise RegistryError(f"registry:*: the registry {self.root} holds no bots (submit some with "
                                    "arena submit)")
            return found
        name, at, number = entry.partition("@")
        if not NAME_PATTERN.fullmatch(name):
            raise RegistryError(f"registry:{entry}: expected registry:*, registry:NAME or registry:NAME@VERSION")
        stored = self.versions(name)
        if not stored:
            known = ", ".join(self.names()) or "none"
            raise RegistryError(f"registry:{entry}: no bot {name!r} in the registry {self.root} (known: {known})")
        if not at:
            return self._pick(stored, versions)
        if not number.isdigit():
            raise RegistryError(f"registry:{entry}: expected a version number after @, got {number!r}")
        for version in stored:
            if version.version == int(number):
                return [version]
        raise RegistryError(f"registry:{entry}: {name!r} has versions "
                            f"{', '.join(str(v.version) for v in stored)}, not {number}")

    @staticmethod
    def _pick(stored: list[Version], versions: str) -> list[Version]:
        return list(stored) if versions == "all" else stored[-1:]

    # -- submitting ---------------------------------------------------------------------------------------------

    def submit(self, directory: str | os.PathLike[str], check: Callable[[Path, Path], CheckReport],
               author: str | None = None) -> SubmitResult:
        """Copy, check and store the bot in ``directory`` as its next version.

        ``check(copy, built)`` checks the copy; for a bot with a ``build:`` it leaves the built tree at ``built``,
        which is then what is stored. ``author`` is recorded in the version's entry, in the same atomic write that
        makes the version visible (a league server's intake claims the name from it, see
        :mod:`arena.server.intake`). Raises :class:`ManifestError` or :class:`SubmissionRejected` for input we
        refuse outright; a bot that fails ``check`` (or its build) comes back as a ``rejected`` result with the
        report. Nothing is stored unless it passed.
        """
        spec = load_bot(directory)
        if self.root.is_relative_to(spec.directory):
            raise SubmissionRejected(f"the registry {self.root} is inside the bot directory {spec.directory}: run "
                                     "arena submit from the directory above the bot, or pass --registry")
        files = scan(spec.directory)
        incoming = self.root / INCOMING
        incoming.mkdir(parents=True, exist_ok=True)
        # The pid in the name: sweep_incoming removes the holders of submits that are gone (a kill -9 mid-build).
        holder = Path(tempfile.mkdtemp(prefix=f"{spec.name}-{os.getpid()}-", dir=incoming))
        copy = holder / "bot"
        built = holder / "built"
        try:
            safe_copy(spec.directory, copy, files)
            # Load the copy: its manifest is the one we store, whatever the original says by now.
            stored_spec = load_bot(copy)
            source_hash = hash_files(copy)
            if stored_spec.name != spec.name:
                raise SubmissionRejected(f"{MANIFEST}: changed while being copied")
            latest = self.latest(spec.name)
            if latest is not None and latest.source_hash == source_hash:
                return self._unchanged(latest)
            report = check(copy, built)
            if not report.fit:
                failed = next((step for step in report.steps if step.ok is False), None)
                reason = ("the bot failed the check" if failed is None else f"the build failed: {failed.got}"
                          if failed.name == "build" else f"the bot failed the check's {failed.name} step: {failed.got}")
                return SubmitResult("rejected", spec.name, source_hash, reason=reason, report=report)
            tree = built if stored_spec.build is not None else copy
            if not tree.is_dir():
                raise RegistryError(f"the check passed but left no built tree at {tree}")
            files_hash = hash_files(tree)
            make_read_only(tree)
            with self._locked():
                latest = self.latest(spec.name)
                if latest is not None and latest.source_hash == source_hash:
                    return self._unchanged(latest)  # an identical submit won the race
                number = 1 if latest is None else latest.version + 1
                home = self.root / spec.name
                home.mkdir(mode=0o755, exist_ok=True)
                final = home / str(number)
                if final.exists():
                    # A submit killed between this rename and the index write below left it: never indexed, so
                    # never read by anyone; without this, every later submit of the bot would fail here.
                    remove_tree(final)
                os.rename(tree, final)
                entry = {"version": number, "files_hash": files_hash, "source_hash": source_hash,
                         "submitted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                         "check": report.to_dict()}
                if author is not None:
                    entry["author"] = author
                self._write_index(spec.name, [v.to_dict() for v in self.versions(spec.name)] + [entry])
            return SubmitResult("stored", spec.name, files_hash, number, final, report=report)
        finally:
            remove_tree(holder)

    @staticmethod
    def _unchanged(latest: Version) -> SubmitResult:
        return SubmitResult("unchanged", latest.name, latest.files_hash, latest.version, latest.directory,
                            reason=f"identical to the latest version, {latest.label}: nothing new to store")

    def _write_index(self, name: str, versions: list[dict[str, Any]]) -> None:
        for item in versions:
            item.pop("directory", None)  # derived from the layout, so a moved registry still reads right
            item.pop("name", None)
            if item.get("author") is None:
                item.pop("author", None)
        path = self.root / name / VERSIONS_FILE
        temporary = path.with_name(f".{VERSIONS_FILE}.{os.getpid()}")
        temporary.write_text(json.dumps({"name": name, "versions": versions}, indent=1) + "\n", encoding="utf-8")
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.root.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.root / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)


def entrant_names(bots: Sequence[BotSpec]) -> list[BotSpec]:
    """Give registry bots a versioned name (``greedy@2``) where their plain name would not be unique in a
    tournament: two versions of one bot, or a registry bot beside a directory bot of the same name."""
    counts: dict[str, int] = {}
    for bot in bots:
        counts[bot.name] = counts.get(bot.name, 0) + 1
    named = []
    for bot in bots:
        stored = version_of(bot.directory)
        if stored is not None and counts[bot.name] > 1:
            bot = dataclasses.replace(bot, name=f"{bot.name}@{stored[1]}")
        named.append(bot)
    return named

