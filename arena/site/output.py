"""Writing a built site so that a rebuild writes only what changed: a manifest of the files a build made.

The manifest (``.arena-site.json`` in the site's directory) holds, for every file a build wrote, the key of what
the file was made from (a hash of the page's data, or of a match's result and log, with the site's own code) and
the size and modification time the file got. A rebuild renders a file only when its key changed or the file on
disk is not the one the manifest describes (deleted, or written by something else), and removes the files of a
tournament it built that this build did not make. Every file is written to a temporary name and renamed over the
old one, and the manifest is saved last: a build stopped part-way leaves every file whole, some new and some
old, and the next build, finding their keys or their times not the manifest's, makes them again.

A full build goes further: it builds in a stage beside the site (:func:`stage`, hard links of the old site but the
directories made again whole) and swaps it in at the end in one step (:func:`swap`, Linux's ``renameat2`` exchange),
so that a full build stopped part-way leaves the old site whole; every build removes the stages killed builds left
(:func:`sweep_stages`).
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import os
import pickle
import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import NamedTuple

from arena import procfs

MANIFEST = ".arena-site.json"
FORMAT = 1


@dataclass(frozen=True)
class Linked:
    """A file of the site that is another file as it is (a match's event log, offered for download): a hard link
    to it where the two are on one file system (no copy of megabytes of logs), else a copy."""

    source: str


Content = str | bytes | Linked


class Entry(NamedTuple):
    """A file as the build that wrote it left it. A named tuple rather than a frozen dataclass: a big league's
    manifest is 111,000 of them, made on every load and written out as lists on every save, where a dataclass's
    construction and conversion were seconds of each rebuild."""

    key: str
    size: int
    mtime_ns: int


@cache
def code_version(*roots: Path) -> str:
    """A hash of every file under ``roots`` (directories or files: the templates and the code that renders them):
    a new version of any of them changes every key, so the next build makes every page again."""
    digest = hashlib.sha1()
    for root in roots:
        for path in sorted(root.rglob("*")) if root.is_dir() else [root]:
            if path.is_file() and "__pycache__" not in path.parts:
                name = path.relative_to(root).as_posix() if root.is_dir() else path.name
                digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def key(*parts: object) -> str:
    """The key of a file made from ``parts``: a hash of their pickle, which holds every field of the page data
    (dataclasses) like their ``repr`` would, at a fraction of the cost (a rebuild keys every page it might write:
    tens of thousands of rows). The same data made the same way pickle the same, run after run."""
    return hashlib.sha1(pickle.dumps(parts, protocol=5)).hexdigest()


def write_file(out: Path, relative: str, content: Content, staged: bool = False) -> tuple[str, int, int]:
    """Write one file of the site, whole or not at all (a temporary file renamed over it); returns its path, size
    and modification time for the manifest. Strings and ``os`` calls rather than Path objects, and the directory
    made only when it is missing: a full build writes 20,000 files, and this was a fifth of a match page's cost.
    ``staged``: ``out`` is a full build's stage, which nobody sees before it is swapped in whole, so a file not
    there yet is written in place (no rename: half a file's system time, most of the cost of a big league's
    100,000 match pages); never over a file that is there (in a stage, a hard link to the live site's)."""
    target = os.path.join(out, relative)
    directory, name = os.path.split(target)
    temporary = os.path.join(directory, f".{name}.{os.getpid()}.tmp")
    if isinstance(content, Linked):
        try:
            _link_new(temporary, content.source)
        except FileNotFoundError:
            os.makedirs(directory, exist_ok=True)
            _link_new(temporary, content.source)
        os.replace(temporary, target)
        status = os.stat(target)
        return relative, status.st_size, status.st_mtime_ns
    data = content if isinstance(content, bytes) else content.encode("utf-8")
    if staged:
        try:
            return relative, *_create(target, data)
        except FileExistsError:
            pass
        except FileNotFoundError:
            os.makedirs(directory, exist_ok=True)
            return relative, *_create(target, data)
    try:
        _write_new(temporary, data)
    except FileNotFoundError:
        os.makedirs(directory, exist_ok=True)
        _write_new(temporary, data)
    os.replace(temporary, target)
    status = os.stat(target)
    return relative, status.st_size, status.st_mtime_ns


def _create(path: str, data: bytes) -> tuple[int, int]:
    """Write a new file at ``path`` (FileExistsError when there is one); its size and modification time."""
    with open(path, "xb") as handle:
        handle.write(data)
        handle.flush()
        status = os.fstat(handle.fileno())
    return status.st_size, status.st_mtime_ns


def _link_new(path: str, source: str) -> None:
    if os.path.lexists(path):
        os.unlink(path)  # a temporary file a stopped build left
    try:
        os.link(source, path)
    except OSError as error:
        if error.errno == errno.ENOENT and not os.path.isdir(os.path.dirname(path)):
            raise FileNotFoundError(path) from error
        shutil.copyfile(source, path)  # another file system, or one without hard links


def _write_new(path: str, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)


class Manifest:
    """The files of one site directory, as the last build left them, and the files of the build under way."""

    def __init__(self, out: Path, entries: dict[str, Entry], staged: bool = False) -> None:
        self.out = out
        self.staged = staged
        """Whether ``out`` is a full build's stage (:func:`write_file`)."""
        self._root = os.path.join(out, "")
        self.old = entries
        self.new: dict[str, Entry] = {}
        self.written = 0
        self.wrote: list[str] = []
        """The files written, in order (a live build's test and log say which pages a few new matches touched)."""

    @classmethod
    def load(cls, out: Path) -> Manifest:
        """The manifest of ``out``; an empty one when there is none or it cannot be read (every file is then made
        again, which repairs whatever happened to it)."""
        try:
            raw = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
            entries = {path: Entry(*entry) for path, entry in raw["files"].items()} if raw.get("format") == FORMAT else {}
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            entries = {}
        return cls(out, entries)

    def fresh(self, relative: str, wanted: str) -> bool:
        """Whether the file at ``relative`` is the one a build made from ``wanted`` (its key) and still untouched."""
        entry = self.old.get(relative)
        if entry is None or entry.key != wanted:
            return False
        try:
            stat = os.stat(self._root + relative)  # not a Path, nor a join: this runs for every file of a rebuild
        except OSError:
            return False
        return stat.st_size == entry.size and stat.st_mtime_ns == entry.mtime_ns

    def put(self, paths: Sequence[str], wanted: str, make: Callable[[], Iterable[tuple[str, Content]]]) -> None:
        """The files at ``paths``, all made from ``wanted``: kept when fresh, else made by ``make`` and written."""
        if all(self.fresh(path, wanted) for path in paths):
            for path in paths:
                self.new[path] = self.old[path]
            return
        for path, content in make():
            self.record(wanted, *write_file(self.out, path, content, self.staged))

    def keep(self, relative: str) -> None:
        """A file this build did not make but must not remove (another tournament's page)."""
        if relative in self.old:
            self.new[relative] = self.old[relative]

    def record(self, wanted: str, relative: str, size: int, mtime_ns: int) -> None:
        self.new[relative] = Entry(wanted, size, mtime_ns)
        self.written += 1
        self.wrote.append(relative)

    def sweep(self, directories: Iterable[str]) -> int:
        """Remove every file under ``directories`` (site-relative) that this build did not make: pages that no
        longer exist, and the temporary files of a build that was stopped. Returns how many."""
        removed = 0
        root = os.path.join(self.out, "")
        for directory in directories:
            # Paths as strings cut at the root (a site's paths are POSIX), not Path objects: tens of thousands.
            for parent, _, names in os.walk(os.path.normpath(os.path.join(root, directory))):
                relative = parent[len(root):].replace(os.sep, "/") + "/"
                for name in names:
                    if relative + name not in self.new:
                        Path(parent, name).unlink(missing_ok=True)
                        removed += 1
        return removed

    def save(self) -> None:
        """Write the manifest of this build (last, and whole or not at all)."""
        files = dict(sorted(self.new.items()))  # each entry a JSON list, as a tuple is
        write_file(self.out, MANIFEST, json.dumps({"format": FORMAT, "files": files}, separators=(",", ":")))


# -- staging: a full build's new site beside the old, swapped in at the end -------------------------------------------


def stage(out: Path, rebuilt: Sequence[str] = ()) -> Path:
    """A new directory beside ``out`` holding a copy of it (hard links: cheap) but the directories ``rebuilt``
    (site-relative, made again whole: tens of thousands of files not worth linking only to unlink them), to build
    the next site in, so that a build stopped part-way (a kill, a full disk) leaves the old site whole."""
    stage = out.parent / f".{out.name}.{procfs.owner().tag}.tmp"
    shutil.rmtree(stage, ignore_errors=True)
    if out.is_dir():
        skip = {os.path.normpath(os.path.join(out, prefix)) for prefix in rebuilt}
        shutil.copytree(out, stage, copy_function=_link, symlinks=True,
                        ignore=lambda directory, names: [name for name in names
                                                         if os.path.join(directory, name) in skip])
    else:
        stage.mkdir(parents=True)
    return stage


def sweep_stages(out: Path) -> None:
    """Remove the stages (and swapped-out old sites) that builds killed part-way left beside ``out``: every build
    does, the incremental ones too, or a full build killed once would leave its copy there for good."""
    if not out.parent.is_dir():
        return
    for leftover in out.parent.glob(f".{out.name}.*"):
        pid, _, kind = leftover.name[len(out.name) + 2:].partition(".")
        # pid-start (a bare pid from before start times): a reused pid does not keep a dead build's stage
        if kind in ("tmp", "old") and (who := procfs.Owner.from_tag(pid)) is not None and not procfs.owner_alive(who):
            shutil.rmtree(leftover, ignore_errors=True)


def _link(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)  # a file system without hard links


RENAME_EXCHANGE = 2


def swap(stage: Path, out: Path) -> None:
    """Put the staged site in place of ``out`` in one step (Linux's atomic exchange of two paths), then remove
    the old one; elsewhere in two renames."""
    if not out.exists():
        os.rename(stage, out)
        return
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    at_cwd = -100
    if renameat2 is None or renameat2(at_cwd, os.fsencode(stage), at_cwd, os.fsencode(out), RENAME_EXCHANGE) != 0:
        old = out.with_name(f".{out.name}.{procfs.owner().tag}.old")
        os.rename(out, old)
        os.rename(stage, out)
        stage = old
    shutil.rmtree(stage, ignore_errors=True)
