"""Unpacking an uploaded bot archive (.tar.gz or .zip) into a scratch directory, refusing anything hostile.

The league server (:mod:`arena.server`) takes bots as archives from people it does not trust, so this module
assumes every header lies. It never calls ``extractall``: each member's name and type are checked first, and each
file is written by us, byte by byte, with the bytes counted as they are decompressed, so a header that claims a
small size does not get a large file through. Refused, each with an :class:`ArchiveRejected` naming the member:

- an archive larger than ``max_archive_bytes`` (the server also caps the request body before reading it);
- absolute paths, ``..`` components, backslashes, NUL bytes (zip slip);
- symlinks and hard links, devices, FIFOs, sockets, encrypted zip members;
- more than ``max_files`` files, more than ``MAX_DIRECTORIES`` directories or ``MAX_DEPTH`` levels of them (each
  directory counts, empty or not), more than ``max_total_bytes`` unpacked, or an unpacked total larger than
  ``max_ratio`` times the archive beyond a small floor (zip and gzip bombs);
- a name listed twice.

Nothing here knows about HTTP or the store: it is a pure function of an archive file and a fresh directory, and
the registry's own guards (:func:`arena.bots.files.scan`) still run on the result.
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import tarfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from arena.bots.files import MAX_DEPTH, MAX_DIRECTORIES, MAX_FILES, MAX_TOTAL_BYTES
from arena.bots.manifest import MANIFEST

GZIP_MAGIC = b"\x1f\x8b"
ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")
IGNORED_TOP = "__MACOSX"
"""Resource forks that macOS's archiver adds; never part of a bot."""
MAX_NAME = 1024
MAX_PART = 255
"""The longest name of one file or directory, in bytes (NAME_MAX)."""
BLOCK = 1 << 16


class ArchiveRejected(ValueError):
    """An archive we refuse to unpack; the message names the member and the reason."""


@dataclass(frozen=True)
class ArchiveLimits:
    max_archive_bytes: int = 5 << 20
    max_files: int = MAX_FILES
    max_total_bytes: int = MAX_TOTAL_BYTES
    max_ratio: int = 100
    """Unpacked bytes per archive byte, enforced above ``ratio_floor`` (a tiny bot of text may compress well)."""
    ratio_floor: int = 1 << 20

    def unpacked_cap(self, archive_bytes: int) -> int:
        return min(self.max_total_bytes, max(self.ratio_floor, self.max_ratio * archive_bytes))


@dataclass(frozen=True)
class Unpacked:
    """What :func:`unpack` wrote: the bot's directory (the archive's root, or its one top directory)."""

    root: Path
    files: int
    total_bytes: int
    kind: str


def archive_kind(head: bytes) -> str | None:
    """``"tar.gz"``, ``"zip"`` or None, from the first bytes of the archive."""
    if head.startswith(GZIP_MAGIC):
        return "tar.gz"
    if head.startswith(ZIP_MAGICS):
        return "zip"
    return None


MULTIPART_PEEK = 1024
"""How much of an upload's start :func:`is_multipart` looks at: a form part's boundary and headers come first."""


def is_multipart(head: bytes) -> bool:
    r"""Whether an upload is a multipart form body (``curl -F file=@bot.tar.gz``, the usual habit) rather than the
    archive itself: a boundary line, then a part's ``Content-Disposition: form-data`` header.

    >>> is_multipart(b'--------------------------d74496d66958873e\r\nContent-Disposition: form-data; name="file"')
    True
    >>> is_multipart(b"PK\x03\x04"), is_multipart(b"--not a form")
    (False, False)
    """
    return head.startswith(b"--") and b"content-disposition: form-data" in head.lower()


def safe_name(name: str) -> PurePosixPath | None:
    """The member's relative path, None for the archive's root itself (``./``), or :class:`ArchiveRejected`.

    >>> safe_name("bot/bot.py")
    PurePosixPath('bot/bot.py')
    >>> safe_name("./")
    >>> safe_name("../etc/passwd")
    Traceback (most recent call last):
    ...
    arena.bots.archive.ArchiveRejected: '../etc/passwd': a path with '..' would land outside the bot directory
    """
    if not name or "\x00" in name or len(name) > MAX_NAME:
        raise ArchiveRejected(f"{name!r}: not a usable file name (empty, NUL byte, or longer than {MAX_NAME})")
    if "\\" in name:
        raise ArchiveRejected(f"{name!r}: a backslash in a name (a Windows path?); use / between directories")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise ArchiveRejected(f"{name!r}: an absolute path; members must be relative to the archive's root")
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise ArchiveRejected(f"{name!r}: a path with '..' would land outside the bot directory")
    for part in parts:
        if len(part.encode("utf-8", errors="surrogateescape")) > MAX_PART:
            raise ArchiveRejected(f"{part[:60]!r}...: a file or directory name longer than {MAX_PART} bytes (what "
                                  "a Linux file system holds)")
    return PurePosixPath(*parts) if parts else None


class _Writer:
    """Writes members into ``dest``, counting files and bytes against the limits."""

    def __init__(self, dest: Path, limits: ArchiveLimits, archive_bytes: int) -> None:
        self.dest = dest
        self.limits = limits
        self.cap = limits.unpacked_cap(archive_bytes)
        self.archive_bytes = archive_bytes
        self.files = 0
        self.directories = 0
        self.total = 0

    def _too_big(self) -> ArchiveRejected:
        if self.cap < self.limits.max_total_bytes:
            return ArchiveRejected(f"unpacks to more than {self.cap} bytes from a {self.archive_bytes}-byte archive "
                                   f"(more than {self.limits.max_ratio}x: a compression bomb?)")
        return ArchiveRejected(f"too large: unpacks to more than {self.limits.max_total_bytes >> 20} MiB "
                               f"(at most {self.limits.max_total_bytes >> 20} MiB per bot)")

    def declare(self, name: str, size: int) -> None:
        """Refuse early on what the headers claim; the real bytes are counted again in :meth:`file`."""
        if size < 0 or self.total + size > self.cap:
            raise self._too_big()

    def directory(self, relative: PurePosixPath) -> None:
        self._mkdirs(relative)

    def _mkdirs(self, relative: PurePosixPath) -> Path:
        if len(relative.parts) > MAX_DEPTH + 1:  # + 1: the archive may wrap the bot in one top directory
            raise ArchiveRejected(f"{str(relative)[:200]}...: nested too deeply (at most {MAX_DEPTH} levels of "
                                  "directories)")
        current = self.dest
        for part in relative.parts:
            current = current / part
            try:
                os.mkdir(current, 0o755)
                self.directories += 1
                if self.directories > MAX_DIRECTORIES + 1:
                    raise ArchiveRejected(f"too many directories: more than {MAX_DIRECTORIES} (a bot may hold at "
                                          f"most {MAX_DIRECTORIES}; each counts, empty or not)")
            except FileExistsError:
                # Only directories we made ourselves can be here: links are refused before anything is written.
                if not stat.S_ISDIR(os.lstat(current).st_mode):
                    raise ArchiveRejected(f"{relative}: a file and a directory of the same name") from None
        return current

    def file(self, relative: PurePosixPath, source: IO[bytes], executable: bool) -> None:
        self.files += 1
        if self.files > self.limits.max_files:
            raise ArchiveRejected(f"too many files: more than {self.limits.max_files} "
                                  f"(a bot may hold at most {self.limits.max_files})")
        parent = self._mkdirs(relative.parent)
        try:
            fd = os.open(parent / relative.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                         0o644)
        except FileExistsError:
            raise ArchiveRejected(f"{relative}: listed twice in the archive") from None
        with os.fdopen(fd, "wb") as sink:
            while block := source.read(BLOCK):
                self.total += len(block)
                if self.total > self.cap:
                    raise self._too_big()
                sink.write(block)
        os.chmod(parent / relative.name, 0o755 if executable else 0o644)


class _CountingReader(io.RawIOBase):
    """A stream that refuses to yield more than ``cap`` bytes: the gzip layer of a tar.gz bomb stops here."""

    def __init__(self, inner: IO[bytes] | gzip.GzipFile, cap: int, refuse: ArchiveRejected) -> None:
        self.inner = inner
        self.cap = cap
        self.count = 0
        self.refuse = refuse

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self.inner.read(len(buffer))
        self.count += len(data)
        if self.count > self.cap:
            raise self.refuse
        buffer[:len(data)] = data
        return len(data)


def _unpack_tar(archive: Path, writer: _Writer, compressed: bool = True) -> None:
    # Tar headers and padding are about 1 KiB per member on top of the files' bytes.
    stream_cap = writer.cap + 1024 * (writer.limits.max_files + MAX_DIRECTORIES + 4)
    with open(archive, "rb") as raw, (gzip.GzipFile(fileobj=raw) if compressed else raw) as unzipped:
        counted = io.BufferedReader(_CountingReader(unzipped, stream_cap, writer._too_big()))
        try:
            with tarfile.open(fileobj=counted, mode="r|") as tar:
                for member in tar:
                    relative = safe_name(member.name)
                    if member.isdir():
                        if relative is not None:
                            writer.directory(relative)
                        continue
                    shown = member.name if relative is None else relative.as_posix()
                    if not member.isreg():
                        raise ArchiveRejected(f"{shown}: {_tar_kind(member)}; a bot may hold only regular files and "
                                              "directories")
                    if relative is None:
                        raise ArchiveRejected(f"{member.name!r}: a file without a name")
                    if member.mode & (stat.S_ISUID | stat.S_ISGID):
                        raise ArchiveRejected(f"{shown}: has the setuid or setgid bit; remove it")
                    writer.declare(member.name, member.size)
                    if relative.parts[0] == IGNORED_TOP:
                        continue
                    source = tar.extractfile(member)
                    assert source is not None  # a regular member always has a file
                    writer.file(relative, source, bool(member.mode & 0o111))
        except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as error:
            raise ArchiveRejected(f"not a readable {'.tar.gz' if compressed else 'tar'}: {error}") from None


def _tar_kind(member: tarfile.TarInfo) -> str:
    if member.issym():
        return f"a symlink to {member.linkname!r}"
    if member.islnk():
        return f"a hard link to {member.linkname!r}"
    if member.ischr() or member.isblk():
        return "a device file"
    if member.isfifo():
        return "a FIFO"
    return "a special member (not a file or a directory)"


def _unpack_zip(archive: Path, writer: _Writer) -> None:
    try:
        with zipfile.ZipFile(archive) as bundle:
            members = bundle.infolist()
            if len(members) > writer.limits.max_files * 2 + 16:  # files plus directory entries, before any work
                raise ArchiveRejected(f"too many files: {len(members)} members "
                                      f"(a bot may hold at most {writer.limits.max_files})")
            writer.declare("(all members)", sum(info.file_size for info in members))
            for info in members:
                relative = safe_name(info.filename)
                mode = info.external_attr >> 16 if info.create_system == 3 else 0  # Unix mode, when made on Unix
                kind = stat.S_IFMT(mode)
                if kind == stat.S_IFLNK:
                    raise ArchiveRejected(f"{info.filename}: a symlink; a bot may not hold symlinks, copy the file")
                if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
                    raise ArchiveRejected(f"{info.filename}: a device, FIFO or socket; a bot may hold only regular "
                                          "files and directories")
                if info.flag_bits & 0x1:
                    raise ArchiveRejected(f"{info.filename}: encrypted; upload a plain archive")
                if mode & (stat.S_ISUID | stat.S_ISGID):
                    raise ArchiveRejected(f"{info.filename}: has the setuid or setgid bit; remove it")
                if info.is_dir() or kind == stat.S_IFDIR:
                    if relative is not None:
                        writer.directory(relative)
                    continue
                if relative is None:
                    raise ArchiveRejected(f"{info.filename!r}: a file without a name")
                if relative.parts[0] == IGNORED_TOP:
                    continue
                with bundle.open(info) as source:
                    writer.file(relative, source, bool(mode & 0o111))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, zlib.error) as error:
        raise ArchiveRejected(f"not a readable .zip: {error}") from None
    except RuntimeError as error:  # zipfile's way of saying "encrypted" or "bad password"
        raise ArchiveRejected(f"not a readable .zip: {error}") from None


def bot_root(dest: Path) -> Path:
    """The archive's root when it holds ``bot.yaml``, else its one top directory when that does."""
    if (dest / MANIFEST).is_file():
        return dest
    entries = [entry for entry in dest.iterdir() if entry.name != IGNORED_TOP]
    if len(entries) == 1 and entries[0].is_dir() and (entries[0] / MANIFEST).is_file():
        return entries[0]
    raise ArchiveRejected(f"no {MANIFEST} at the archive's root or under one top directory "
                          f"(found: {', '.join(sorted(e.name for e in entries)[:10]) or 'nothing'})")


def unpack_tar(archive: Path, dest: Path, limits: ArchiveLimits = ArchiveLimits()) -> Unpacked:
    """Unpack the plain (uncompressed) tar ``archive`` into the empty directory ``dest`` with the same guards as
    :func:`unpack`: what a build leaves comes out of its sandbox this way (:mod:`arena.registry.build`)."""
    size = archive.stat().st_size
    writer = _Writer(dest, limits, size)
    _unpack_tar(archive, writer, compressed=False)
    return Unpacked(bot_root(dest), writer.files, writer.total, "tar")


def unpack(archive: Path, dest: Path, limits: ArchiveLimits = ArchiveLimits()) -> Unpacked:
    """Unpack ``archive`` into the empty directory ``dest``, or raise :class:`ArchiveRejected`.

    On rejection ``dest`` may hold part of the archive: it is the caller's scratch area, to be removed.
    """
    size = archive.stat().st_size
    if size > limits.max_archive_bytes:
        raise ArchiveRejected(f"too large: the archive is {size} bytes (at most {limits.max_archive_bytes})")
    with open(archive, "rb") as handle:
        head = handle.read(MULTIPART_PEEK)
    kind = archive_kind(head)
    writer = _Writer(dest, limits, size)
    if kind == "tar.gz":
        _unpack_tar(archive, writer)
    elif kind == "zip":
        _unpack_zip(archive, writer)
    elif is_multipart(head):
        raise ArchiveRejected("a multipart form (curl -F), not an archive: send the raw .tar.gz or .zip as the "
                              "request body, e.g. curl --data-binary @bot.tar.gz -H 'Content-Type: application/gzip' "
                              "(or use arena submit --server)")
    else:
        raise ArchiveRejected("not a .tar.gz or a .zip (expected gzip or zip magic bytes at the start)")
    return Unpacked(bot_root(dest), writer.files, writer.total, kind)
