"""A bot's files: what a bot directory may hold (the scan that both ``arena check`` and the registry start from),
what is not part of it (``.arenaignore``), the guarded copy of them, removing such a copy, and telling a stored registry version by its place.

Its own module so that the checker, the build and the registry all use it without importing each other.
"""

from __future__ import annotations

import errno
import fnmatch
import itertools
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

MAX_TOTAL_BYTES = 20 << 20
MAX_FILES = 500
MAX_DIRECTORIES = 500
"""Directories count as entries too: 40,000 empty ones once cost 176 s of an upload's unpacking and removal."""
MAX_DEPTH = 32
"""Levels of directories below a bot's root (a Java package is a handful)."""
VERSIONS_FILE = "versions.json"
"""A registry bot's index of its versions, beside their directories (:mod:`arena.registry.versions`)."""


class SubmissionRejected(ValueError):
    """A bot directory we refuse to store; the message says which file and why."""


IGNORE_FILE = ".arenaignore"
DEFAULT_IGNORE = (
    ".git*/",        # version control and CI (.git/, .github/): history that never runs, and may hold credentials
    "__pycache__/",  # Python's bytecode caches: the interpreter makes them again
    "*.pyc",
    "target/",       # cargo's build output: hundreds of files and hard links; ship the binary (docs/REGISTRY.md)
    ".venv/",        # a virtualenv: its interpreter is a symlink to this host's, which a bot may not hold
)
"""What is never part of a bot, before the bot's own ``.arenaignore``. Not ``node_modules/``: a Node bot may need
its packages, and the sandbox has no network to install them."""


@dataclass(frozen=True)
class Ignore:
    """The ignore rules of a bot directory: :data:`DEFAULT_IGNORE`, then its ``.arenaignore``, gitignore-like: one
    pattern a line, ``#`` comments, ``*``/``?``/``[...]`` within a name and ``**`` across directories, a trailing
    ``/`` for directories only, a ``/`` at the start or inside for a path from the bot's root (else a name at any
    depth), ``!`` to take a path back (the last matching line wins; nothing below an ignored directory comes back).
    ``bot.yaml`` is never ignored."""

    rules: tuple[tuple[str, bool, bool], ...]
    """Each line as (pattern, negated, directories only); an unanchored pattern starts with ``**/``."""

    @classmethod
    def of(cls, root: Path) -> Ignore:
        try:
            own = (root / IGNORE_FILE).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:  # none (or unreadable: the files step names it when it reads the file)
            own = []
        rules = []
        for line in (*DEFAULT_IGNORE, *own):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            negated = line.startswith("!")
            line = line.removeprefix("!")
            directories = line.endswith("/")
            anchored = "/" in line.rstrip("/")
            line = line.strip("/")
            if line:
                rules.append((line if anchored else f"**/{line}", negated, directories))
        return cls(tuple(rules))

    def ignored(self, relative: str, is_dir: bool) -> bool:
        """Whether the path ``relative`` (posix, from the bot's root) is not part of the bot."""
        if relative == "bot.yaml":
            return False
        parts = relative.split("/")
        verdict = False
        for pattern, negated, directories in self.rules:
            if (is_dir or not directories) and _matches(pattern.split("/"), parts):
                verdict = not negated
        return verdict


def _matches(pattern: list[str], parts: list[str]) -> bool:
    if not pattern:
        return not parts
    if pattern[0] == "**":
        return any(_matches(pattern[1:], parts[skip:]) for skip in range(len(parts) + 1))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], pattern[0]) and _matches(pattern[1:], parts[1:])


def bot_walk(root: Path, onerror: Callable[[OSError], None] | None = None
             ) -> Iterator[tuple[str, list[str], list[str]]]:
    """:func:`walk` over what is part of the bot: ignored directories are not entered, ignored files not listed
    (:class:`Ignore`). The caller may prune ``dirs`` further."""
    ignore = Ignore.of(root)
    for current, dirs, names in walk(root, onerror):
        prefix = _prefix(root, current)
        dirs[:] = [d for d in dirs if not ignore.ignored(prefix + d, True)]
        names[:] = [n for n in names if not ignore.ignored(prefix + n, False)]
        yield current, dirs, names


def _prefix(root: Path, current: str) -> str:
    """``current``'s path from ``root`` as the start of its entries' paths: ``""`` or ``"a/b/"``."""
    base = Path(current).relative_to(root).as_posix()
    return "" if base == "." else base + "/"


CACHES = Ignore(tuple((f"**/{pattern.rstrip('/')}", False, pattern.endswith("/"))
                      for pattern in ("__pycache__/", "*.pyc")))
"""Python's caches: left out like the rest, but the interpreter's own, so they need no copy to hide them."""


def has_ignored(root: Path) -> str | None:
    """The first path under ``root`` its ignore rules leave out (Python's caches aside), or None: a directory with
    one plays from a copy without them (:func:`arena.registry.build.playable`, ``arena check``), as it would be
    stored."""
    ignore = Ignore.of(root)
    for current, dirs, names in walk(root):
        prefix = _prefix(root, current)
        for name in (*dirs, *names):
            path, is_dir = prefix + name, name in dirs
            if ignore.ignored(path, is_dir) and not CACHES.ignored(path, is_dir):
                return path
    return None


@dataclass(frozen=True)
class FileEntry:
    relative: str
    size: int
    executable: bool


def scan(root: Path, max_files: int = MAX_FILES, max_bytes: int = MAX_TOTAL_BYTES) -> list[FileEntry]:
    """The regular files of a bot directory, or :class:`SubmissionRejected` naming the first thing we refuse.

    Never follows a link: ``lstat`` throughout, and a symlink anywhere (to a file or a directory, inside or out) is
    refused, because the stored copy must not depend on anything outside itself.
    """
    root = Path(root)
    files: list[FileEntry] = []
    total = 0
    def unreadable(error: OSError) -> None:
        raise SubmissionRejected(f"{error.filename}: cannot read it: {error.strerror}")

    directories = 0
    for current, dirs, names in bot_walk(root, onerror=unreadable):
        base = Path(current)
        for name in sorted(dirs):
            info = os.lstat(base / name)
            if stat.S_ISLNK(info.st_mode):
                _refuse_link(root, base / name)
        dirs.sort()
        directories += len(dirs)
        if directories > MAX_DIRECTORIES:
            raise SubmissionRejected(f"too many directories: more than {MAX_DIRECTORIES} (a bot may hold at most "
                                     f"{MAX_DIRECTORIES})")
        if dirs and len(base.relative_to(root).parts) >= MAX_DEPTH:
            raise SubmissionRejected(f"{(base / dirs[0]).relative_to(root).as_posix()[:200]}...: nested too deeply "
                                     f"(at most {MAX_DEPTH} levels of directories)")
        for name in sorted(names):
            path = base / name
            relative = path.relative_to(root).as_posix()
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                _refuse_link(root, path)
            if not stat.S_ISREG(info.st_mode):
                raise SubmissionRejected(f"{relative}: a {_kind(info.st_mode)}, not a regular file; a bot may hold "
                                         "only regular files and directories")
            _refuse_special_bits(root, path, info)
            if info.st_nlink > 1:
                # A hard link may be a second name of a file outside the bot (a secret of whoever runs submit).
                raise SubmissionRejected(f"{relative}: has {info.st_nlink} hard links; submit a plain copy")
            files.append(FileEntry(relative, info.st_size, bool(info.st_mode & 0o111)))
            total += info.st_size
            if len(files) > max_files:
                raise SubmissionRejected(f"too many files: more than {max_files} (a bot may hold at most {max_files})")
            if total > max_bytes:
                raise _too_large(max_bytes)
    return files


def _too_large(max_bytes: int) -> SubmissionRejected:
    # One wording whether the scan counted the bytes or the copy did (a file that grew after the scan).
    return SubmissionRejected(f"too large: more than {max_bytes >> 20} MiB of files (at most {max_bytes >> 20} MiB "
                              "per bot)")


def _refuse_link(root: Path, path: Path) -> None:
    relative = path.relative_to(root).as_posix()
    target = os.readlink(path)
    try:
        inside = (path.parent / target).resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):  # a loop of links
        inside = False
    where = "inside" if inside else "outside"
    raise SubmissionRejected(f"{relative}: a symlink to {target!r} (pointing {where} the bot directory); "
                             "a bot may not hold symlinks, copy the file instead")


def _refuse_special_bits(root: Path, path: Path, info: os.stat_result) -> None:
    if info.st_mode & (stat.S_ISUID | stat.S_ISGID):
        raise SubmissionRejected(f"{path.relative_to(root).as_posix()}: has the setuid or setgid bit; remove it")


def _kind(mode: int) -> str:
    for test, kind in ((stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device"), (stat.S_ISDIR, "directory")):
        if test(mode):
            return kind
    return "special file"


def safe_copy(source: Path, target: Path, files: Sequence[FileEntry], max_bytes: int = MAX_TOTAL_BYTES) -> None:
    """Copy the scanned ``files`` from ``source`` into the new directory ``target``, world-readable (the sandbox runs
    bots as an unprivileged uid), dirs 0755, files 0644 or 0755.

    Each file is opened with O_NOFOLLOW and checked again on its descriptor, and bytes are counted as they are
    copied: a file swapped for a link or grown after :func:`scan` is refused, not copied.
    """
    target.mkdir(mode=0o755)
    os.chmod(target, 0o755)
    copied = 0
    for entry in files:
        destination = target / entry.relative
        for parent in reversed(destination.relative_to(target).parents[:-1]):
            (target / parent).mkdir(mode=0o755, exist_ok=True)
            os.chmod(target / parent, 0o755)
        try:
            fd = os.open(source / entry.relative, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise SubmissionRejected(f"{entry.relative}: became a symlink while being copied") from None
            raise SubmissionRejected(f"{entry.relative}: cannot read it: {error.strerror}") from None
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise SubmissionRejected(f"{entry.relative}: changed into a non-regular file while being copied")
            out = os.open(destination, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
            with os.fdopen(out, "wb") as sink:
                for block in iter(lambda: handle.read(1 << 16), b""):
                    copied += len(block)
                    if copied > max_bytes:
                        raise _too_large(max_bytes)
                    sink.write(block)
        os.chmod(destination, 0o755 if entry.executable else 0o644)


def walk(root: Path, onerror: Callable[[OSError], None] | None = None) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk(root, followlinks=False)``, in the same order and with the same lists (a symlink to a directory is
    in ``dirs``, never entered), but without recursion: Python 3.11's recurses, and a tree 1,100 levels deep
    raised RecursionError in every walk of it. The caller may prune ``dirs`` in place."""
    pending = [str(root)]
    while pending:
        current = pending.pop()
        try:
            with os.scandir(current) as entries:
                listed = [(entry.name, _is_dir(entry), entry.is_symlink()) for entry in entries]
        except OSError as error:
            if onerror is not None:
                onerror(error)
            continue
        dirs = [name for name, is_dir, _ in listed if is_dir]
        names = [name for name, is_dir, _ in listed if not is_dir]
        links = {name for name, _, link in listed if link}
        yield current, dirs, names
        pending.extend(os.path.join(current, name) for name in reversed(dirs) if name not in links)


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def remove_tree(path: Path) -> None:
    """Delete a copy we made, read-only parts included, however deep or wide (what a build left): without recursion
    and with at most two descriptors open. Each directory's subdirectories are first moved up to the top one, so
    no path ever grows; errors are skipped, as ``shutil.rmtree(ignore_errors=True)`` does."""
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            os.unlink(path)
            return
        os.chmod(path, 0o700)
        top = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    moved = itertools.count()
    stuck: set[str] = set()
    try:
        while True:
            with os.scandir(top) as entries:
                batch = [(entry.name, entry.is_dir(follow_symlinks=False))
                         for entry in itertools.islice((e for e in entries if e.name not in stuck), 1024)]
            if not batch:
                break
            for name, is_dir in batch:
                try:
                    if is_dir:
                        _empty_into(top, name, moved)
                        os.rmdir(name, dir_fd=top)
                    else:
                        os.unlink(name, dir_fd=top)
                except OSError:
                    stuck.add(name)
    finally:
        os.close(top)
    try:
        os.rmdir(path)
    except OSError:
        pass


def _empty_into(top: int, name: str, moved: Iterator[int]) -> None:
    """Remove the files of ``top``'s subdirectory ``name`` and move its subdirectories up into ``top``."""
    os.chmod(name, 0o700, dir_fd=top)
    inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=top)
    try:
        with os.scandir(inner) as entries:
            listed = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
        for child, is_dir in listed:
            if not is_dir:
                os.unlink(child, dir_fd=inner)
                continue
            while True:
                try:
                    os.rename(child, f".removing-{next(moved)}", src_dir_fd=inner, dst_dir_fd=top)
                    break
                except FileExistsError:
                    continue
                except OSError as error:
                    if error.errno != errno.ENOTEMPTY:
                        raise
    finally:
        os.close(inner)


def version_of(directory: Path) -> tuple[str, int] | None:
    """(name, version) when ``directory`` is a stored registry version, else None."""
    index = directory.parent / VERSIONS_FILE
    if not directory.name.isdigit() or not index.is_file():
        return None
    return directory.parent.name, int(directory.name)
