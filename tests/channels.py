"""Covert channels between two concurrently running sandboxes, as a hostile bot would use them: a sender and a
receiver for each, and a small driver that runs either in a sandbox.

The red team's finding H1: files both sandboxes see (``/usr``, ``/protocol``, a bot's own ``/bot``, the device
nodes under ``/dev``) are the same host inodes in each, and the kernel keeps locks and inotify watches per inode,
so one sandbox can set bits that another reads:

* **lock bits** (:func:`lock_bits_send`, :func:`lock_bits_receive`): a read lock (``F_SETLK``) on byte
  ``base + i`` of a read-only file for each set bit ``i``; the receiver asks ``F_GETLK`` whether a write lock on
  each byte would conflict;
* **flock flags** (:func:`flock_send`, :func:`flock_receive`): an exclusive ``flock`` on file ``i`` for each set
  bit; the receiver's non-blocking shared ``flock`` fails on exactly those;
* **inotify opens** (:func:`inotify_watch`, :func:`inotify_send`, :func:`inotify_receive`): the receiver watches
  files for ``IN_OPEN``; the sender opens file ``i`` for each set bit;
* **the page cache** (:func:`pagecache_send`, :func:`pagecache_receive`), not only between concurrent sandboxes:
  the sender reads page ``i`` of a rarely read file for each set bit, and a later receiver times its reads of the
  same pages; **the dentry cache** (:func:`dentry_send`, :func:`dentry_receive`), its weaker form: the sender looks
  up name ``i`` (one that does not exist: a negative entry) and the receiver times its lookups. Both are closed by
  private views (arena/sandbox/views.py); bench/pagecache_channel.py measures them (docs/SECURITY.md, "What a bot
  can learn");
* **the load** (:func:`load_send`, :func:`load_receive`), between two sandboxes running at the same time: the sender
  keeps the cores busy or idle in time slots, the receiver counts how far it gets in each (bench/load_channel.py).

This module imports only the standard library and reads nothing of arena, so a test bot embeds it as it is: its
source is written into the bot's directory as ``channels.py`` (:func:`write_probe_bot`), whose command is
``python3 channels.py``. The driver (:func:`serve`) takes one JSON request a line on stdin and answers one JSON
line on stdout, so a test can order the two sides exactly (the receiver reads only after the sender said "set"):

* ``{"do": "send", "channel": C, ...}`` answers ``{"set": true}`` (or ``{"refused": errno}``), then holds what it
  set until its stdin ends;
* ``{"do": "watch", "channel": "inotify", "paths": [...]}`` answers ``{"watching": true}`` or ``{"refused": ...}``;
* ``{"do": "receive", "channel": C, "nbytes": N, ...}`` answers ``{"got": hex}`` or ``{"refused": errno}``;
* ``{"do": "stat", "paths": [...]}`` answers ``{"devices": [...]}``, each path's ``st_dev`` (its filesystem);
* ``{"do": "probe"}`` answers what the sandbox lets a bot do: ``{"io_uring_setup": errno or 0, "proc_locks":
  lines, "proc_locks_errno": errno or 0}``.

A bot that publishes its hand to its copies can call the same functions with its own paths and offsets.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import os
import platform
import struct
import sys
import time
from pathlib import Path
from typing import Any

FLOCK = "hhqqi4x"
"""struct flock on 64-bit Linux: l_type, l_whence, (padding), l_start, l_len, l_pid, (padding)."""
IN_OPEN = 0x20
IN_NONBLOCK = os.O_NONBLOCK
IO_URING_SETUP = 425
"""The same number on every architecture (the unified table)."""
HELD: list[int] = []
"""Descriptors whose locks the sender keeps until it exits."""


def set_bits(message: bytes) -> list[int]:
    """The indices of the bits of ``message`` that are 1 (bit 0 is the lowest bit of the first byte)."""
    return [index for index in range(len(message) * 8) if message[index // 8] >> (index % 8) & 1]


def from_bits(indices: list[int], nbytes: int) -> bytes:
    out = bytearray(nbytes)
    for index in indices:
        out[index // 8] |= 1 << (index % 8)
    return bytes(out)


def lock_bits_send(path: str, message: bytes, base: int) -> None:
    """A read lock on byte ``base + i`` of ``path`` (opened read-only) for each set bit ``i``; held until exit."""
    fd = os.open(path, os.O_RDONLY)
    HELD.append(fd)
    for index in set_bits(message):
        fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, base + index)


def lock_bits_receive(path: str, nbytes: int, base: int) -> bytes:
    """Which bytes from ``base`` of ``path`` someone else holds a lock on (F_GETLK), as bits. Any other lock over
    those bytes (a host program's whole-file read lock) reads as all ones: pick a file nobody else locks."""
    fd = os.open(path, os.O_RDONLY)
    try:
        found = []
        for index in range(nbytes * 8):
            query = struct.pack(FLOCK, fcntl.F_WRLCK, os.SEEK_SET, base + index, 1, 0)
            kind = struct.unpack(FLOCK, fcntl.fcntl(fd, fcntl.F_GETLK, query))[0]
            if kind != fcntl.F_UNLCK:
                found.append(index)
        return from_bits(found, nbytes)
    finally:
        os.close(fd)


def flock_send(paths: list[str], message: bytes) -> None:
    """An exclusive flock on ``paths[i]`` for each set bit ``i``; held until exit."""
    for index in set_bits(message):
        fd = os.open(paths[index], os.O_RDONLY)
        HELD.append(fd)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def flock_receive(paths: list[str], nbytes: int) -> bytes:
    """Which of ``paths`` someone else holds an exclusive flock on, as bits."""
    found = []
    for index in range(nbytes * 8):
        fd = os.open(paths[index], os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            found.append(index)
        finally:
            os.close(fd)  # releases our shared lock, if we got it
    return from_bits(found, nbytes)


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def inotify_watch(paths: list[str]) -> tuple[int, dict[int, int]]:
    """An inotify descriptor watching each of ``paths`` for IN_OPEN, and each watch's index in ``paths``."""
    libc = _libc()
    fd = libc.inotify_init1(IN_NONBLOCK)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "inotify_init1")
    watches = {}
    for index, path in enumerate(paths):
        watch = libc.inotify_add_watch(fd, path.encode(), IN_OPEN)
        if watch < 0:
            raise OSError(ctypes.get_errno(), f"inotify_add_watch {path}")
        watches[watch] = index
    return fd, watches


def inotify_send(paths: list[str], message: bytes) -> None:
    """Open (and close) ``paths[i]`` for each set bit ``i``."""
    for index in set_bits(message):
        os.close(os.open(paths[index], os.O_RDONLY))


def inotify_receive(fd: int, watches: dict[int, int], nbytes: int) -> bytes:
    """The files opened since :func:`inotify_watch`, as bits (one read of what is queued, never a wait)."""
    found: set[int] = set()
    while True:
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            break
        offset = 0
        while offset < len(data):
            watch, mask, _cookie, length = struct.unpack_from("iIII", data, offset)
            offset += 16 + length
            if mask & IN_OPEN and watch in watches:
                found.add(watches[watch])
    return from_bits(sorted(index for index in found if index < nbytes * 8), nbytes)


def pagecache_send(pages: list[list[Any]], message: bytes) -> None:
    """Read one byte of page ``i`` (a [path, offset] pair) for each set bit ``i``: the kernel keeps the page in its
    cache after this process has gone, for any later reader of the same file."""
    for index in set_bits(message):
        path, offset = pages[index]
        with open(path, "rb", buffering=0) as source:
            source.seek(offset)
            source.read(1)


def pagecache_receive(pages: list[list[Any]], nbytes: int, threshold_ns: int) -> tuple[bytes, list[int]]:
    """Time one read of each page: one served from the cache takes a few microseconds, one from the disk a hundred
    or more. The bits read as 1 where the read was quicker than ``threshold_ns``, and each read's time."""
    times = []
    for path, offset in pages[:nbytes * 8]:
        with open(path, "rb", buffering=0) as source:
            source.seek(offset)
            start = time.perf_counter_ns()
            source.read(1)
            times.append(time.perf_counter_ns() - start)
    return from_bits([index for index, spent in enumerate(times) if spent < threshold_ns], nbytes), times


def dentry_send(names: list[str], message: bytes) -> None:
    """Look up ``names[i]`` for each set bit ``i`` (names that do not exist: the kernel remembers the miss)."""
    for index in set_bits(message):
        try:
            os.stat(names[index])
        except OSError:
            pass


def dentry_receive(names: list[str], nbytes: int) -> list[int]:
    """The time of one lookup of each name: a remembered one answers sooner than one that reads the directory."""
    times = []
    for name in names[:nbytes * 8]:
        start = time.perf_counter_ns()
        try:
            os.stat(name)
        except OSError:
            pass
        times.append(time.perf_counter_ns() - start)
    return times


def load_send(message: bytes, start_ns: int, slot_ns: int, spinners: int) -> None:
    """From ``start_ns`` (CLOCK_MONOTONIC, the same clock in every sandbox), one slot of ``slot_ns`` per bit: busy
    in ``spinners`` processes through a set bit's slot, asleep through a clear one's."""
    bits = [message[index // 8] >> (index % 8) & 1 for index in range(len(message) * 8)]
    children = []
    for _ in range(spinners):
        pid = os.fork()
        if pid == 0:
            try:
                for index, bit in enumerate(bits):
                    end = start_ns + (index + 1) * slot_ns
                    if bit:
                        while time.monotonic_ns() < end:
                            pass
                    else:
                        time.sleep(max(0.0, (end - time.monotonic_ns()) / 1e9))
            finally:
                os._exit(0)
        children.append(pid)
    for pid in children:
        os.waitpid(pid, 0)


def load_receive(nbytes: int, start_ns: int, slot_ns: int) -> list[int]:
    """How far this process got in each slot (loop turns): a busy machine gives it fewer."""
    counts = []
    time.sleep(max(0.0, (start_ns - time.monotonic_ns()) / 1e9))
    for index in range(nbytes * 8):
        end, turns = start_ns + (index + 1) * slot_ns, 0
        while time.monotonic_ns() < end:
            turns += 1
        counts.append(turns)
    return counts


def io_uring_setup() -> int:
    """0 when ``io_uring_setup`` gave a ring (closed at once), else its errno."""
    params = ctypes.create_string_buffer(120)  # struct io_uring_params, zeroed: the kernel's defaults
    fd = _libc().syscall(IO_URING_SETUP, 1, params)
    if fd < 0:
        return ctypes.get_errno()
    os.close(fd)
    return 0


def proc_locks() -> tuple[int, int]:
    """How many lines /proc/locks shows, and the errno that reading it failed with (0: it did not)."""
    try:
        with open("/proc/locks", "rb") as handle:
            return len(handle.read().splitlines()), 0
    except OSError as error:
        return 0, error.errno or 0


def handle(request: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    """One request of the driver (see the module docstring); a refused call answers its errno."""
    channel = request.get("channel")
    try:
        if request["do"] == "probe":
            lines, failed = proc_locks()
            return {"io_uring_setup": io_uring_setup(), "proc_locks": lines, "proc_locks_errno": failed,
                    "machine": platform.machine()}
        if request["do"] == "stat":
            return {"devices": [os.stat(path).st_dev for path in request["paths"]]}
        if request["do"] == "watch":
            state["inotify"] = inotify_watch(request["paths"])
            return {"watching": True}
        if request["do"] == "send":
            message = bytes.fromhex(request["message"])
            if channel == "lock_bits":
                lock_bits_send(request["path"], message, request["base"])
            elif channel == "flock":
                flock_send(request["paths"], message)
            elif channel == "inotify":
                inotify_send(request["paths"], message)
            elif channel == "pagecache":
                pagecache_send(request["pages"], message)
            elif channel == "dentry":
                dentry_send(request["names"], message)
            elif channel == "load":
                load_send(message, request["start_ns"], request["slot_ns"], request["spinners"])
            return {"set": True}
        if request["do"] == "receive":
            nbytes = request["nbytes"]
            if channel == "lock_bits":
                got = lock_bits_receive(request["path"], nbytes, request["base"])
            elif channel == "flock":
                got = flock_receive(request["paths"], nbytes)
            elif channel == "pagecache":
                got, times = pagecache_receive(request["pages"], nbytes, request["threshold_ns"])
                return {"got": got.hex(), "times_ns": times}
            elif channel == "dentry":
                return {"times_ns": dentry_receive(request["names"], nbytes)}
            elif channel == "load":
                return {"turns": load_receive(nbytes, request["start_ns"], request["slot_ns"])}
            else:
                if "inotify" not in state:
                    return {"refused": state.get("watch_refused", errno.EBADF)}
                got = inotify_receive(*state["inotify"], nbytes)
            return {"got": got.hex()}
    except OSError as error:
        if request["do"] == "watch":
            state["watch_refused"] = error.errno
        return {"refused": error.errno, "error": str(error)}
    return {"error": f"unknown request {request!r}"}


def serve() -> None:
    """Answer one JSON request a line until stdin ends."""
    state: dict[str, Any] = {}
    for line in sys.stdin:
        answer = handle(json.loads(line), state)
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


def write_probe_bot(directory: Path, files: int = 0) -> Path:
    """A bot directory running this module's driver, with ``files`` empty files ``c000``... to watch and lock."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "channels.py").write_text(Path(__file__).read_text())
    (directory / "bot.yaml").write_text(f"name: {directory.name}\ncommand: python3 channels.py\nlanguage: python\n")
    for index in range(files):
        (directory / f"c{index:03d}").write_text("")
    return directory


if __name__ == "__main__":
    serve()
