"""Private views: each sandbox reads the runtime and its bot through a page cache and a dentry cache of its own.

A file two sandboxes may both read is one file in the kernel's page cache: a bot in one match reads chosen pages of
a rarely read ``/usr`` file (or of its own bot directory) to set bits, and a copy of it in a later match times its
reads of the same pages and learns them (docs/SECURITY.md, "What a bot can learn"); ``stat`` of names through the
dentry cache, negative entries included, is a weaker form of the same channel. A cache belongs to a superblock, and
every mount of an erofs image gets a superblock of its own (a file-backed mount, Linux 6.12 and later; before, a
mount on a new loop device). So what a sandbox may read is packed once into read-only erofs images, kept on a ramfs
at :data:`IMAGES` (its pages are never evicted nor swapped, so a read of the image itself times the same whoever
read it before), and every launch mounts them anew (:class:`View`); its caches go when its mounts do, at the
kill.

* The **runtime image** holds the host's runtime (``/usr`` and the real ``/lib*`` directories, the few ``/etc``
  files bots read), built once per host and state of the runtime (:func:`runtime_image`, named by a hash of its
  directories' identities and times: packages install by renaming files into place, which changes them).
* A **bot image** per bot version holds its directory and arena's ``protocol/`` (:func:`bot_image`).

Where the kernel cannot mount an image file directly, loop devices are attached with ``LO_FLAGS_AUTOCLEAR``: the
kernel detaches one when its last mount goes, or when the runner that attached it dies before mounting it. The
mounts are in :data:`VIEWS` ``/mounts/PID-START/N`` (:class:`arena.procfs.Owner`'s tag), and :func:`sweep_stale`
unmounts those of runners that are gone (kill -9), which frees what they held. It needs root (mounts),
``mkfs.erofs`` (erofs-utils), erofs in the kernel and ramfs: :func:`status` says which is missing.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import hashlib
import itertools
import logging
import os
import re
import shutil
import stat
import struct
import subprocess
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from arena import procfs
from arena.bots.manifest import hash_files
from arena.sandbox import SandboxError
from arena.sandbox.common import PROTOCOL_LIB, RUNTIME_DIRS, RUNTIME_ETC, RUNTIME_EXTRA_ETC

LOGGER = logging.getLogger(__name__)

VIEWS = Path("/dev/shm/arena-views")
"""Root-only (0700): ``images/`` (a ramfs) holds the erofs images, ``mounts/`` the mount points of running
sandboxes."""
IMAGES = VIEWS / "images"
MOUNTS = VIEWS / "mounts"
MKFS = ("/usr/bin/mkfs.erofs", "/usr/sbin/mkfs.erofs", "/sbin/mkfs.erofs")
UNSHARE = "/usr/bin/unshare"
LAYOUT = "1"
"""The images' layout; a change of it names new images."""
BOT_IMAGE_AGE_S = 86400.0
"""A bot image not mounted for this long is removed by :func:`sweep_stale` (built again if its bot plays again)."""
BOT_IMAGES_MAX_BYTES = 512 << 20
"""What the bot images may hold together (they live in RAM, in ``/dev/shm``): past it :func:`sweep_stale` removes
the least recently mounted first, whatever their age, but never one mounted in the last :data:`BOT_IMAGE_KEEP_S`
(a bot in play is not built again at every launch, however large). Without it a day of them stays: this host's
test runs left 9,836 (1.2 GB)."""
BOT_IMAGE_KEEP_S = 600.0
BUILD_TIMEOUT_S = 3600

LOOP_CTL_GET_FREE = 0x4C82
LOOP_CONFIGURE = 0x4C0A
LO_FLAGS_READ_ONLY = 1
LO_FLAGS_AUTOCLEAR = 4
MS_RDONLY, MS_NOSUID, MS_NODEV = 1, 2, 4
MNT_DETACH = 2

_LIBC = ctypes.CDLL(None, use_errno=True)
_SERIAL = itertools.count()
_BUILD_LOCK = threading.Lock()


@dataclass(frozen=True)
class Part:
    """One host path in an image: ``source`` appears at ``target`` (relative to the image's root)."""

    source: str
    target: str


def _mkfs() -> str | None:
    return next((path for path in MKFS if os.access(path, os.X_OK)), None)


@lru_cache(maxsize=1)
def status() -> tuple[bool, str]:
    """Whether this host can give sandboxes private views, and why not."""
    if os.geteuid() != 0:
        return False, "not root: mounting an image needs root"
    if _mkfs() is None:
        return False, "mkfs.erofs is missing (Debian/Ubuntu: apt-get install erofs-utils)"
    if not os.access(UNSHARE, os.X_OK):
        return False, f"{UNSHARE} (util-linux) is missing; it stages an image's files"
    try:
        kernel = Path("/proc/filesystems").read_text()
    except OSError as error:
        return False, f"cannot read /proc/filesystems: {error}"
    if "erofs" not in kernel.split():
        return False, "the kernel has no erofs (modprobe erofs)"
    if "ramfs" not in kernel.split():
        return False, "the kernel has no ramfs to hold the images"
    release = tuple(int(part) for part in re.findall(r"\d+", os.uname().release)[:2])
    if release < (6, 12) and not os.path.exists("/dev/loop-control"):
        return False, "no /dev/loop-control: before Linux 6.12 an image is mounted on a loop device (modprobe loop)"
    return True, "erofs images on a ramfs, mounted anew per launch"


def _private_directory(path: Path) -> None:
    """Make :data:`VIEWS` and ``path`` in it directories only root reaches, or refuse ones that someone else could
    have planted (``/dev/shm`` is writable by every user)."""
    for directory in (VIEWS, path):
        try:
            directory.mkdir(mode=0o700)
        except FileExistsError:
            pass
        info = os.lstat(directory)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
            raise SandboxError(f"{directory} must be a directory of uid {os.geteuid()} with mode 0700 (found "
                               f"{stat.filemode(info.st_mode)}, uid {info.st_uid}): remove it")


def _image_store() -> None:
    """:data:`IMAGES` as a ramfs of its own, mounted once per boot; files of an older store under it are removed
    first (a tmpfs directory's files would be hidden by the mount, and still take their memory)."""
    _private_directory(IMAGES)
    if _filesystem(IMAGES) == "ramfs":
        return
    for entry in IMAGES.iterdir():
        _remove(entry)
    if _LIBC.mount(b"ramfs", str(IMAGES).encode(), b"ramfs", MS_NOSUID | MS_NODEV, b"mode=0700") != 0:
        code = ctypes.get_errno()
        raise SandboxError(f"cannot mount a ramfs at {IMAGES} for the sandboxes' images: {os.strerror(code)}")


def _filesystem(point: Path) -> str | None:
    """The type of the filesystem mounted at ``point`` last (the one seen there), or None: no mount there."""
    found = None
    for line in _mountinfo():
        fields = line.split()
        if _unescape(fields[4]) == str(point):
            found = fields[fields.index("-") + 1]
    return found


def _mountinfo() -> list[str]:
    try:
        return Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []


def _unescape(field: str) -> str:
    """A mountinfo path: the kernel writes a space, tab, newline and backslash as octal escapes."""
    return re.sub(r"\\([0-7]{3})", lambda match: chr(int(match.group(1), 8)), field)


def _remove(path: Path) -> None:
    """Remove a mount point's tree, never through a mount still under it (a stage's binds of /usr!)."""
    if mounts_under(path):
        LOGGER.error("%s still has mounts under it; left in place", path)
        return
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


# -- images -------------------------------------------------------------------------------------------------------


def runtime_parts() -> tuple[Part, ...]:
    """The runtime as the sandboxes see it: real directories of :data:`RUNTIME_DIRS` (symlinked ones, merged
    ``/usr``, stay symlinks in the sandbox) and the ``/etc`` files, symlinks resolved, as a bind resolves them."""
    parts = [Part(path, path.lstrip("/")) for path in RUNTIME_DIRS if not os.path.islink(path) and os.path.isdir(path)]
    for path in (*RUNTIME_ETC, *RUNTIME_EXTRA_ETC):
        if os.path.exists(path):
            parts.append(Part(os.path.realpath(path), path.lstrip("/")))
    return tuple(parts)


IDENTITY_DEPTH = 2
"""How deep :func:`_identity` looks into the runtime's directories (``/usr/lib/python3.11``: depth 2); below that,
the package manager's records (:data:`PACKAGE_RECORDS`) say when something changed."""
PACKAGE_RECORDS = ("/var/lib/dpkg/status", "/var/lib/rpm", "/usr/local")
"""What every install changes: dpkg's and rpm's databases, and ``/usr/local`` (where pip and ``make install`` put
things), which is walked whole."""


def _identity(parts: tuple[Part, ...]) -> str:
    """A hash of the parts' state, cheap enough for every runner's start: the inode, times, mode and owner of each
    directory down to :data:`IDENTITY_DEPTH` (of all of ``/usr/local``) and of :data:`PACKAGE_RECORDS`. A package
    install renames files into place and updates its records; a file edited in place below that depth is not noticed
    (remove the image to have it built again)."""
    digest = hashlib.sha256(f"{LAYOUT}\0".encode())
    roots = [(part.source, IDENTITY_DEPTH) for part in parts] + [(path, 64) for path in PACKAGE_RECORDS]
    for root, depth in roots:
        stack = [(root, 0)]
        while stack:
            current, level = stack.pop()
            try:
                info = os.lstat(current)
            except OSError:
                continue
            digest.update(f"{current}\0{info.st_ino}\0{info.st_size}\0{info.st_mtime_ns}\0{info.st_ctime_ns}\0"
                          f"{info.st_mode}\0{info.st_uid}\0".encode())
            if not stat.S_ISDIR(info.st_mode) or level >= depth:
                continue
            try:
                entries = sorted(os.scandir(current), key=lambda entry: entry.name)
            except OSError:
                continue
            stack += [(entry.path, level + 1) for entry in entries if entry.is_dir(follow_symlinks=False)]
    return digest.hexdigest()[:20]


@lru_cache(maxsize=1)
def _runtime_name() -> str:
    """Looked up once per runner (:func:`_identity`)."""
    return f"runtime-{_identity(runtime_parts())}.erofs"


OFF_SWITCH = "ARENA_PRIVATE_VIEWS"
"""Set to 0, the runner's sandboxes share the host's files even where the image is built: for a bot that must see
its directory change while it plays (a test's gate), never for a competition."""
NOT_BUILT = ("no runtime image for this host's /usr yet: `arena sandbox build-views` builds it once (as large as "
             "/usr, held in RAM: docs/SECURITY.md)")


def ready(can: tuple[bool, str] | None = None) -> tuple[bool, str]:
    """Whether sandboxes get private views without asking: the host can (``can``, default :func:`status`) and the
    runtime image of its ``/usr`` as it is now is built. Building it is an organiser's decision (``arena sandbox
    build-views``): it takes a minute or more and holds as much RAM as ``/usr`` takes on disk, which a laptop
    running the demo should not pay unasked."""
    works, reason = status() if can is None else can
    if works and os.environ.get(OFF_SWITCH) == "0":
        return False, f"turned off for this runner by {OFF_SWITCH}=0"
    if works and not (IMAGES / _runtime_name()).exists():
        return False, NOT_BUILT
    return works, reason


def runtime_image() -> Path:
    """The runtime image for the runtime as it is now, built if missing (once per host and state of the runtime:
    a minute or more for a large ``/usr``), named by :func:`_identity`, looked up once per runner."""
    return _ensure(IMAGES / _runtime_name(), runtime_parts(), replaces="runtime-")


@lru_cache(maxsize=1)
def _protocol_hash() -> str:
    return hash_files(PROTOCOL_LIB)


def bot_image(directory: Path, files_hash: str) -> Path:
    """The image of one bot version: its directory at ``bot/`` and arena's ``protocol/`` at ``protocol/``."""
    name = hashlib.sha256(f"{LAYOUT}\0{directory}\0{files_hash}\0{_protocol_hash()}".encode()).hexdigest()[:20]
    parts = (Part(str(directory), "bot"), Part(str(PROTOCOL_LIB), "protocol"))
    return _ensure(IMAGES / f"bot-{name}.erofs", parts)


def _ensure(path: Path, parts: tuple[Part, ...], replaces: str | None = None) -> Path:
    if path.exists():
        return path
    _image_store()
    # One build at a time on the host (a lock file that other runners wait on), and in this process.
    with _BUILD_LOCK, open(IMAGES / ".build.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            return path
        if replaces:
            LOGGER.warning("building the sandboxes' runtime image %s (once per host and state of /usr)", path)
        build_image(path, parts)
        if replaces:
            # An older state's image: unlinking it is safe while sandboxes still have it mounted (their mounts
            # hold the file), and frees its memory when they are done.
            for old in IMAGES.glob(f"{replaces}*.erofs"):
                if old != path:
                    old.unlink(missing_ok=True)
    return path


def build_image(path: Path, parts: tuple[Part, ...]) -> None:
    """Pack ``parts`` into an uncompressed erofs image at ``path`` (owners, modes and times kept): staged by bind
    mounts in a mount namespace of its own, so nothing is copied but by ``mkfs.erofs`` itself."""
    mkfs = _mkfs()
    if mkfs is None:
        raise SandboxError(status()[1])
    tag = procfs.owner().tag
    stage = IMAGES / f".stage-{tag}-{next(_SERIAL)}"
    partial = IMAGES / f".{path.name}.{tag}.partial"
    stage.mkdir(mode=0o755)
    try:
        binds: list[str] = []
        for part in parts:
            target = stage / part.target
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
            if os.path.isdir(part.source):
                target.mkdir(mode=0o755, exist_ok=True)
            else:
                target.touch(mode=0o644)
            binds += [part.source, str(target)]
        script = ('set -e; while [ $# -gt 3 ]; do mount --rbind "$1" "$2"; shift 2; done; '
                  'exec "$1" --quiet --preserve-mtime "$2" "$3"')
        done = subprocess.run([UNSHARE, "--mount", "--propagation", "private", "/bin/sh", "-c", script, "stage",
                               *binds, mkfs, str(partial), str(stage)], capture_output=True, timeout=BUILD_TIMEOUT_S,
                              stdin=subprocess.DEVNULL, check=False)
        if done.returncode != 0:
            lines = (done.stderr or done.stdout).decode(errors="replace").strip().splitlines()
            raise SandboxError(f"cannot build the image {path}: {lines[-1] if lines else f'status {done.returncode}'}")
        os.chmod(partial, 0o600)
        os.rename(partial, path)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SandboxError(f"cannot build the image {path}: {error}") from error
    finally:
        partial.unlink(missing_ok=True)
        _remove(stage)


# -- mounts -------------------------------------------------------------------------------------------------------


def _attach(image: Path) -> tuple[str, int]:
    """A free loop device backed by ``image``, read-only and cleared when its last user goes: its path and an open
    descriptor (hold it until the mount is made, else the device clears at once)."""
    control = os.open("/dev/loop-control", os.O_RDWR | os.O_CLOEXEC)
    backing = os.open(image, os.O_RDONLY | os.O_CLOEXEC)
    try:
        for _ in range(64):  # another runner may take the free device between our two calls: ask again
            number = fcntl.ioctl(control, LOOP_CTL_GET_FREE)
            device = f"/dev/loop{number}"
            fd = os.open(device, os.O_RDONLY | os.O_CLOEXEC)
            # struct loop_config: fd, block_size, struct loop_info64 (lo_flags at byte 52 of it), 64 reserved bytes
            info = bytearray(232)
            struct.pack_into("=I", info, 52, LO_FLAGS_READ_ONLY | LO_FLAGS_AUTOCLEAR)
            config = struct.pack("=II", backing, 0) + bytes(info) + bytes(64)
            try:
                fcntl.ioctl(fd, LOOP_CONFIGURE, config)
            except OSError as error:
                os.close(fd)
                if error.errno == errno.EBUSY:
                    continue
                raise
            return device, fd
        raise OSError(errno.EBUSY, "every free loop device was taken before it could be configured")
    finally:
        os.close(backing)
        os.close(control)


def _mount(source: str, target: Path) -> None:
    if _LIBC.mount(source.encode(), str(target).encode(), b"erofs", MS_RDONLY | MS_NOSUID | MS_NODEV, None) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"mount {source} on {target}: {os.strerror(code)}")


FILE_BACKED = [True]
"""Whether this kernel mounts an erofs image file directly; the first ENOTBLK says no, and later mounts go through a
loop device."""


def mount_image(image: Path, target: Path) -> None:
    """Mount ``image`` at ``target`` with a superblock, and so caches, of its own."""
    if FILE_BACKED[0]:
        try:
            _mount(str(image), target)
            return
        except OSError as error:
            if error.errno != errno.ENOTBLK:
                raise
            FILE_BACKED[0] = False
    device, fd = _attach(image)
    try:
        _mount(device, target)
    finally:
        os.close(fd)  # the mount holds the device now; autoclear detaches it at the unmount


def _unmount(target: str) -> None:
    """Detach the mount at ``target`` (lazily: a sandbox still dying keeps its copy until it is gone)."""
    if _LIBC.umount2(target.encode(), MNT_DETACH) != 0 and ctypes.get_errno() not in (errno.EINVAL, errno.ENOENT):
        code = ctypes.get_errno()
        raise OSError(code, f"umount {target}: {os.strerror(code)}")


class View:
    """One sandbox's private mounts of the runtime image and its bot's image: a fresh superblock each, hence a page
    cache and a dentry cache no other sandbox shares. :meth:`close` after the kill."""

    def __init__(self, runtime: Path, bot: Path) -> None:
        _private_directory(MOUNTS)
        self.directory = MOUNTS / procfs.owner().tag / str(next(_SERIAL))
        self.runtime = self.directory / "runtime"
        self.bot = self.directory / "bot"
        self.mounted: list[Path] = []
        try:
            self.directory.mkdir(parents=True, mode=0o755)
            for image, target in ((runtime, self.runtime), (bot, self.bot)):
                target.mkdir(mode=0o755)
                os.utime(image)  # in use: the sweep keeps images mounted within a day
                mount_image(image, target)
                self.mounted.append(target)
        except OSError as error:
            self.close()
            raise SandboxError(f"cannot mount the sandbox's private view: {error}") from error

    def close(self) -> None:
        """Unmount both (their loop devices then clear themselves) and remove the mount points; safe to call twice."""
        for target in reversed(self.mounted):
            try:
                _unmount(str(target))
            except OSError as error:
                LOGGER.error("%s; the sweep of a later runner retries", error)
                return
        self.mounted = []
        _remove(self.directory)


def mounts_under(directory: Path) -> list[str]:
    """The mount points at or below ``directory`` in this mount namespace, deepest first."""
    prefix = str(directory).rstrip("/") + "/"
    found = []
    for line in _mountinfo():
        point = _unescape(line.split()[4])
        if point.startswith(prefix) or point == prefix.rstrip("/"):
            found.append(point)
    return sorted(found, key=len, reverse=True)


def sweep_stale() -> list[Path]:
    """Unmount and remove the views of runners that are gone (killed before their bots' kill), the partial images
    of builds that died, and bot images unused for :data:`BOT_IMAGE_AGE_S`; return the views removed."""
    removed: list[Path] = []
    try:
        owners = list(MOUNTS.iterdir())
    except OSError:
        owners = []
    for entry in owners:
        owner = procfs.Owner.from_tag(entry.name)
        if owner is not None and procfs.owner_alive(owner):
            continue
        try:
            for point in mounts_under(entry):
                _unmount(point)
        except OSError as error:
            LOGGER.error("cannot sweep the stale view %s: %s", entry, error)
            continue
        _remove(entry)
        removed.append(entry)
    try:
        images = list(IMAGES.iterdir())
    except OSError:
        images = []
    for image in images:
        name = image.name
        if name.startswith("."):
            tag = name.split("-", 1)[1] if name.startswith(".stage-") else name.rsplit(".", 2)[-2]
            owner = procfs.Owner.from_tag("-".join(tag.split("-")[:2]))
            if owner is not None and not procfs.owner_alive(owner):
                _remove(image)  # a stage's binds were in its build's own mount namespace, gone with it
    sweep_bot_images()
    return removed


def sweep_bot_images(directory: Path = IMAGES, max_age_s: float = BOT_IMAGE_AGE_S,
                     max_bytes: int = BOT_IMAGES_MAX_BYTES, keep_s: float = BOT_IMAGE_KEEP_S) -> list[str]:
    """Remove the bot images in ``directory`` not mounted for ``max_age_s``, and those past the first ``max_bytes``
    of the most recently mounted, but none mounted in the last ``keep_s``; return the names removed. A mounted one
    stays readable by its mounts, and a launch that loses its image to a sweep between its check and its mount
    builds it again (:func:`open_view`)."""
    found: list[tuple[float, int, str]] = []  # (last mounted, bytes, name)
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.name.startswith("bot-"):
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    found.append((info.st_mtime, info.st_size, entry.name))
    except OSError:
        return []
    found.sort(reverse=True)  # the most recently mounted first
    now = time.time()
    held = 0
    removed = []
    for mounted, size, name in found:
        held += size
        if now - mounted <= keep_s or (now - mounted <= max_age_s and held <= max_bytes):
            continue
        try:
            (directory / name).unlink()
        except OSError:
            continue
        removed.append(name)
    return removed


def open_view(directory: Path, files_hash: str) -> View:
    """A private view for one launch of the bot in ``directory`` (version ``files_hash``), building the images it
    lacks. Tried twice: another runner's sweep may remove a day-old bot image between its check and its mount."""
    for attempt in range(2):
        runtime, bot = runtime_image(), bot_image(directory, files_hash)
        try:
            return View(runtime, bot)
        except SandboxError:
            if attempt or (runtime.exists() and bot.exists()):
                raise
    raise AssertionError("unreachable")
