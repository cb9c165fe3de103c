"""A bot's files: what a bot directory may hold (the scan that both ``arena check`` and the registry start from), the
guarded copy of them, removing such a copy, and telling a stored registry version by its place.

Its own module so that the checker, the build and the registry all use it without importing each other.
"""

from __future__ import annotations

import errno
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


def skipped(relative_dir_name: str) -> bool:
    """Directories that are not part of a bot, exactly those :func:`arena.bots.manifest.hash_files` skips."""
    return relative_dir_name == "__pycache__" or relative_dir_name.startswith(".git")


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
    for current, dirs, names in walk(root, onerror=unreadable):
        base = Path(current)
        for name in sorted(dirs):
            info = os.lstat(base / name)
            if stat.S_ISLNK(info.st_mode):
                _refuse_link(root, base / name)
        dirs[:] = sorted(d for d in dirs if not skipped(d))
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
            if path.suffix == ".pyc":
                continue
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
