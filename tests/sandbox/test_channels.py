"""No channel between two sandboxes running at the same time (the red team's H1), on both backends.

For each channel of tests/channels.py -- byte-range lock bits on a read-only /usr file, flock flags on /usr files,
inotify opens of the bot's own files (shared by two copies of one bot), lock bits on a /dev node -- a sender and a
receiver run in two sandboxes at once and the receiver must learn nothing. Each has a control: the same pair in a
sandbox whose channel rules are turned off (``close_channels=False``, which only these tests use) passes the whole
message, so the test can fail. The exchange is ordered, not raced: the receiver reads once, after the sender has
answered "set" (for inotify: the receiver watches first, then the sender opens, then the receiver reads).
"""

from __future__ import annotations

import errno
import fcntl
import os
import secrets
import shutil
import struct
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arena.bots.manifest import load_bot
from arena.sandbox import Sandbox, SandboxLimits, seccomp
from arena.sandbox.common import SYSTEM_PATH
from arena.sandbox.process import ProcessSandbox, bwrap_status
from tests.channels import FLOCK, write_probe_bot
from tests.support.docker import require_docker
from tests.support.probe import ask

LIMITS = SandboxLimits(memory_mb=160, processes=16, file_mb=4, scratch_mb=8, open_files=64, cpu_seconds=20)
NBYTES = 4
CHANNELS = ("lock_bits_usr", "flock_usr", "inotify_bot_dir", "lock_bits_dev")
REFUSED = {"lock_bits_usr": errno.ENOLCK, "flock_usr": 0, "inotify_bot_dir": errno.ENOSYS,
           "lock_bits_dev": errno.ENOLCK}
"""The errno each channel's refused call answers (arena/sandbox/seccomp.py); 0: ``flock`` succeeds and does
nothing, so the receiver reads zeros."""


def _backend(kind: str, close_channels: bool) -> Iterator[Sandbox]:
    if kind == "docker":
        from arena.sandbox.docker import DockerSandbox

        require_docker()
        docker_sandbox = DockerSandbox(warm=0, close_channels=close_channels)
        yield docker_sandbox
        docker_sandbox.close()
        return
    works, reason = bwrap_status()
    if not works:
        pytest.skip(f"this host cannot run bwrap: {reason}")
    # The controls share the host's files too: private views (each sandbox its own /usr and /bot) would close
    # these channels as well, and the control is of the seccomp rules.
    yield ProcessSandbox(isolate=True, close_channels=close_channels, private_views=None if close_channels else False)


@pytest.fixture(scope="module", params=["bwrap", pytest.param("docker", marks=pytest.mark.slow)])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def closed(backend: str) -> Iterator[Sandbox]:
    yield from _backend(backend, True)


@pytest.fixture(scope="module")
def open_(backend: str) -> Iterator[Sandbox]:
    yield from _backend(backend, False)


@pytest.fixture
def exclusive() -> Iterator[None]:
    """One channel exchange at a time on this host: two controls flocking the same /usr files at once (another
    worker, another checkout's run) would read each other's bits."""
    with open(os.path.join(tempfile.gettempdir(), "arena-channel-tests.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def python_stdlib_files(count: int) -> list[str]:
    """``count`` files of the bots' Python's standard library, under /usr in every sandbox."""
    python = os.path.realpath(shutil.which("python3", path=SYSTEM_PATH) or "/usr/bin/python3")
    library = Path("/usr/lib") / Path(python).name
    inodes: dict[int, str] = {}
    for path in sorted(library.glob("*.py")):
        if not path.is_symlink():
            inodes.setdefault(path.stat().st_ino, str(path))  # two names of one file would be one bit
    files = sorted(inodes.values())
    assert len(files) >= count, f"{library} holds {len(files)} modules, the test needs {count}"
    return files[:count]


def unlocked_device() -> str:
    """A device node of every sandbox's /dev that no host program holds a lock on (this host's /dev/null carries a
    whole-file read lock of some program, which would answer every query of the receiver)."""
    held = {line.split()[5] if line.split()[1] != "->" else "" for line in Path("/proc/locks").read_text().splitlines()
            if len(line.split()) > 5}
    for path in ("/dev/zero", "/dev/full", "/dev/urandom", "/dev/random", "/dev/null"):
        info = os.stat(path)
        if f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}" not in held:
            return path
    pytest.fail("every device node of the sandbox's /dev is locked by some host program")


def exchange(sandbox: Sandbox, bot_dir: Path, channel: str, message: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run ``channel``'s sender and receiver in two sandboxes at once; their answers to "send" and "receive"."""
    bot = load_bot(bot_dir)
    nbytes = len(message)
    base = secrets.randbelow(1 << 40) + (1 << 40)  # far from any lock another program takes on the same file
    request: dict[str, Any] = {
        "lock_bits_usr": {"channel": "lock_bits", "path": python_stdlib_files(1)[0], "base": base},
        "lock_bits_dev": {"channel": "lock_bits", "path": unlocked_device(), "base": base},
        "flock_usr": {"channel": "flock", "paths": python_stdlib_files(nbytes * 8)},
        "inotify_bot_dir": {"channel": "inotify", "paths": [f"/bot/c{index:03d}" for index in range(nbytes * 8)]},
    }[channel]
    sender = receiver = None
    try:
        if request["channel"] == "inotify":
            receiver = sandbox.launch(bot, LIMITS)
            ask(receiver, {"do": "watch", **request})
        sender = sandbox.launch(bot, LIMITS)
        sent = ask(sender, {"do": "send", "message": message.hex(), **request})
        if receiver is None:
            receiver = sandbox.launch(bot, LIMITS)
        got = ask(receiver, {"do": "receive", "nbytes": nbytes, **request})
    finally:
        for process in (sender, receiver):
            if process is not None:
                process.kill()
    return sent, got


def a_message() -> bytes:
    while True:
        message = secrets.token_bytes(NBYTES)
        if any(message):
            return message


@pytest.mark.parametrize("channel", CHANNELS)
def test_two_sandboxes_learn_nothing_through(closed: Sandbox, tmp_path: Path, channel: str, exclusive: None) -> None:
    assert closed.guarantees()["no_shared_locks"][0]
    message = a_message()
    sent, got = exchange(closed, write_probe_bot(tmp_path / "probe", NBYTES * 8), channel, message)
    # The receiver's call is refused with an errno a program can handle, or it reads nothing.
    assert got.get("refused") == REFUSED[channel] or (not REFUSED[channel] and got == {"got": "00" * NBYTES}), got
    assert got.get("got") != message.hex()
    if channel == "inotify_bot_dir":
        assert sent == {"set": True}  # the inotify sender only opens files, which stays allowed
    else:
        assert sent == ({"refused": REFUSED[channel], "error": sent.get("error")} if REFUSED[channel]
                        else {"set": True}), sent


@pytest.mark.parametrize("channel", CHANNELS)
def test_control_the_same_pair_passes_the_message_without_the_rules(open_: Sandbox, backend: str, tmp_path: Path,
                                                                    channel: str, exclusive: None,
                                                                    request: pytest.FixtureRequest) -> None:
    if backend == "docker" and channel == "lock_bits_dev":
        # runc makes each container's device nodes with mknod: its /dev/null is an inode of its own.
        request.applymarker(pytest.mark.xfail(strict=True, reason="a container's device nodes are its own"))
    assert not open_.guarantees()["no_shared_locks"][0]
    message = a_message()
    sent, got = exchange(open_, write_probe_bot(tmp_path / "probe", NBYTES * 8), channel, message)
    assert sent == {"set": True}
    assert got == {"got": message.hex()}


def test_io_uring_is_refused_and_proc_locks_shows_nothing(closed: Sandbox, tmp_path: Path) -> None:
    """While the runner holds an open-file-description lock of its own, which an unmasked /proc/locks would list
    from inside any pid namespace."""
    held = tmp_path / "held.lock"
    with open(held, "w") as handle:
        fcntl.fcntl(handle, fcntl.F_OFD_SETLK, struct.pack(FLOCK, fcntl.F_WRLCK, 0, 0, 1, 0))
        assert any(f":{os.stat(held).st_ino} " in line for line in Path("/proc/locks").read_text().splitlines())
        process = closed.launch(load_bot(write_probe_bot(tmp_path / "probe")), LIMITS)
        try:
            answer = ask(process, {"do": "probe"})
        finally:
            process.kill()
    assert answer["io_uring_setup"] == errno.ENOSYS, answer
    # Empty (docker: /dev/null masks it) or unreadable (bwrap: /dev/null bound on a nodev mount, EACCES).
    assert answer["proc_locks"] == 0 and answer["proc_locks_errno"] in (0, errno.EACCES), answer


def test_control_io_uring_works_without_the_rules(open_: Sandbox, tmp_path: Path) -> None:
    try:
        disabled = int(Path("/proc/sys/kernel/io_uring_disabled").read_text())
    except (OSError, ValueError):
        disabled = 0  # kernels before 6.6 have no such switch
    if disabled:
        pytest.skip(f"this host turns io_uring off (kernel.io_uring_disabled={disabled})")
    process = open_.launch(load_bot(write_probe_bot(tmp_path / "probe")), LIMITS)
    try:
        answer = ask(process, {"do": "probe"})
    finally:
        process.kill()
    assert answer["io_uring_setup"] == 0, answer


# -- the rules themselves, for an architecture this host cannot run ------------------------------------------------

def run_bpf(code: bytes, nr: int, arch: int, args: tuple[int, ...] = ()) -> int:
    """Classic BPF as the kernel runs a seccomp filter (only the instructions seccomp.py emits): its return value."""
    data = struct.pack("<II8x6Q", nr, arch, *(list(args) + [0] * (6 - len(args))))
    rows = [struct.unpack("=HBBI", code[i:i + 8]) for i in range(0, len(code), 8)]
    accumulator, pc = 0, 0
    while True:
        op, jt, jf, k = rows[pc]
        if op == 0x20:  # ld [k]
            accumulator = struct.unpack_from("<I", data, k)[0]
        elif op == 0x06:  # ret k
            return int(k)
        else:
            taken = {0x15: accumulator == k, 0x35: accumulator >= k, 0x45: bool(accumulator & k)}[op]
            pc += jt if taken else jf
        pc += 1


@pytest.mark.parametrize("machine", sorted(seccomp.ABIS))
def test_the_filter_refuses_what_it_says_on_each_architecture(machine: str) -> None:
    abi = seccomp.ABIS[machine]
    code, base = seccomp.program(abi), seccomp.program(abi, channels=False)
    n = abi.numbers
    allow, errno_ = 0x7FFF0000, 0x00050000

    def verdict(call: str, *args: int, program: bytes = code) -> int:
        return run_bpf(program, n[call], abi.audit_arch, args)

    assert verdict("fcntl", 3, fcntl.F_GETLK) == errno_ | errno.ENOLCK
    assert verdict("fcntl", 3, fcntl.F_OFD_SETLK) == errno_ | errno.ENOLCK
    assert verdict("fcntl", 3, fcntl.F_GETLK | 1 << 32) == errno_ | errno.ENOLCK  # the kernel reads 32 bits
    assert verdict("fcntl", 3, fcntl.F_NOTIFY) == errno_ | errno.EINVAL
    assert verdict("fcntl", 3, fcntl.F_GETFL) == allow and verdict("fcntl", 3, fcntl.F_DUPFD_CLOEXEC) == allow
    assert verdict("flock", 3, fcntl.LOCK_EX) == errno_ | 0  # returns 0, does nothing
    assert verdict("inotify_init1", 0) == errno_ | errno.ENOSYS
    assert verdict("io_uring_setup", 1, 0) == errno_ | errno.ENOSYS
    assert verdict("fadvise64", 3, 0, 0, 4) == errno_ | errno.EINVAL
    assert verdict("fadvise64", 3, 0, 0, 3) == allow  # POSIX_FADV_WILLNEED
    assert verdict("unshare", seccomp.CLONE_NEWUSER) == errno_ | errno.EPERM
    assert verdict("clone", 0x11) == allow  # a fork
    assert verdict("keyctl", 0) == errno_ | errno.EPERM
    assert run_bpf(code, 0, 0x40000003) == errno_ | errno.ENOSYS  # another ABI (i386)
    # Without the channel rules the locks pass and the rest stays.
    assert verdict("fcntl", 3, fcntl.F_GETLK, program=base) == allow
    assert verdict("flock", 3, fcntl.LOCK_EX, program=base) == allow
    assert verdict("keyctl", 0, program=base) == errno_ | errno.EPERM
    # The docker profile says the same, comparing fcntl's command on its low 32 bits only.
    profile = seccomp.docker_profile(abi)
    assert profile["architectures"] == [abi.docker_arch]
    rules = profile["syscalls"]
    assert isinstance(rules, list)
    getlk = [rule for rule in rules if rule["names"] == ["fcntl"] and rule["args"][0]["valueTwo"] == fcntl.F_GETLK]
    assert getlk == [{"names": ["fcntl"], "action": "SCMP_ACT_ERRNO", "errnoRet": errno.ENOLCK,
                      "args": [{"index": 1, "value": 0xFFFFFFFF, "valueTwo": fcntl.F_GETLK,
                                "op": "SCMP_CMP_MASKED_EQ"}]}]
