"""What a bot directory may hold: the scan that both ``arena check`` and the registry's guarded copy start from.

Its own module so that the checker and the registry both use it without importing each other.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

MAX_TOTAL_BYTES = 20 << 20
MAX_FILES = 500


class SubmissionRejected(ValueError):
    """A bot directory we refuse to store; the message says which file and why."""


def skipped(relative_dir_name: str) -> bool:
    """Directories that are not part of a bot, exactly those :func:`arena.manifest.hash_files` skips."""
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

    for current, dirs, names in os.walk(root, onerror=unreadable, followlinks=False):
        base = Path(current)
        for name in sorted(dirs):
            info = os.lstat(base / name)
            if stat.S_ISLNK(info.st_mode):
                _refuse_link(root, base / name)
        dirs[:] = sorted(d for d in dirs if not skipped(d))
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
                raise SubmissionRejected(f"too large: more than {max_bytes >> 20} MiB of files "
                                         f"(at most {max_bytes >> 20} MiB per bot)")
    return files


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
