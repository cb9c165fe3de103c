"""The seccomp rules of both backends: what a bot may not ask the kernel, and with which errno it is refused.

One table (:data:`BASE_RULES` and :data:`CHANNEL_RULES`) serves both backends: :func:`program` assembles it into
the classic BPF filter the ``process`` backend's bwrap installs (``--seccomp FD``, just before it execs the bot),
and :func:`docker_profile` writes it as the JSON profile the ``docker`` backend gives each container.

**Keyrings and user namespaces** (:data:`BASE_RULES`). Kernel keyrings are not namespaced: a key a bot adds to its
uid's keyring (``add_key`` to ``@u``) outlives the bot, and per-bot uids are reused, so a later bot of another
author would read it -- a channel between bots. A user namespace gives a bot a fresh set of capabilities over new
namespaces: more kernel surface than a bot needs. So ``add_key``, ``request_key`` and ``keyctl``, and
``clone``/``unshare`` with ``CLONE_NEWUSER``, get EPERM; ``clone3`` (whose flags a classic BPF filter cannot read)
gets ENOSYS, on which libc falls back to ``clone``.

**Channels between concurrently running bots** (:data:`CHANNEL_RULES`, the red team's H1). ``/usr``,
``/protocol``, a bot's own ``/bot`` and the device nodes under bwrap's ``/dev`` are the same host inodes in every
sandbox, and the kernel keeps locks and watches per inode, across uids, namespaces and runners: a read lock on
byte N of ``/usr/lib/python3/os.py`` taken in one sandbox is seen by ``F_GETLK`` in another, a ``flock`` is a flag
another sandbox's ``LOCK_NB`` sees, and an inotify watch reports another sandbox's opens. Two copies of one bot
holding different seats of one duplicate deal told each other their hands this way. So the filter refuses:

* ``fcntl``'s lock commands (``F_GETLK``, ``F_SETLK``, ``F_SETLKW``, their 64-bit twins 12-14 which a 64-bit
  kernel only knows from 32-bit callers, and the open-file-description ``F_OFD_GETLK``/``SETLK``/``SETLKW`` 36-38)
  with **ENOLCK**, what a filesystem without locking (NFS without its lock daemon) answers: a failure of that one
  operation, which programs report (SQLite: "database is locked") rather than crash on;
* ``flock`` **succeeds without doing anything** (a seccomp "errno" of 0): no lock is taken, so another sandbox's
  ``LOCK_NB`` never sees one, and the bit is never set. An error would break programs that flock their own files
  and treat any failure as fatal or, worse, say so on stdout: the JVM flocks its ``/tmp/hsperfdata_USER/PID`` file
  and, when that fails, prints "Cannot use file ... because flock() failed" on **stdout** (seen under docker,
  whose uid 65534 is named ``nobody``), which broke the Java template's protocol; cargo 1.95 stops at "failed
  to lock file ... No locks available" on ENOLCK. The cost: a bot's own processes get no exclusion from
  ``flock`` (within one sandbox only the bot's own processes exist);
* ``fcntl``'s leases (``F_SETLEASE``, ``F_GETLEASE``) and directory notification (``F_NOTIFY``, dnotify) with
  **EINVAL**, what a filesystem without leases and a kernel without dnotify answer;
* ``inotify_init``, ``inotify_init1`` and ``fanotify_init`` with **ENOSYS**, as on a kernel built without them:
  file watchers (Python's watchdog, Node's ``fs.watch``) fall back to polling or report that watching is
  unsupported;
* ``io_uring_setup``, ``io_uring_enter`` and ``io_uring_register`` with **ENOSYS**: the operations of a ring are
  not system calls, so the filter never sees them (a ring's reads and fadvise would make the page-cache probes
  below), and it is a large kernel surface; libuv (Node) probes it at start
  and falls back to its thread pool on ENOSYS;
* the page-cache residency probes that would make a shared file's cache a channel: ``cachestat`` (ENOSYS), and
  ``preadv2``/``pwritev2`` (ENOSYS; their ``RWF_NOWAIT`` tells whether a page is cached; glibc falls back to
  ``preadv``/``pwritev`` when the flags are 0 and the call is ENOSYS), and ``posix_fadvise(POSIX_FADV_DONTNEED)``
  (EINVAL, as for advice the kernel does not know; it evicts another sandbox's pages). ``mincore`` needs no rule:
  the kernel reports every page of a file the caller may not write as resident.

The filter cannot tell a lock on a shared file from one on the bot's own ``/tmp``: a classic BPF program sees a
descriptor's number, not its file. So fcntl locks are refused and flock does nothing everywhere;
docs/SECURITY.md says which programs keep working. ``/proc/locks``, which lists the open-file-description locks
of every namespace, is hidden by the backends themselves (bwrap binds ``/dev/null`` over it; docker masks it).

System calls of another ABI than the host's own (32-bit ones on x86-64, x32) get ENOSYS from the process filter:
the filter would otherwise need their numbers too, and no bot runtime here uses them.

The program is classic BPF, assembled here (no libseccomp binding is needed); docker's engine compiles the JSON
profile with libseccomp itself.
"""

from __future__ import annotations

import errno
import json
import os
import platform
import struct
from dataclasses import dataclass

# struct seccomp_data: nr (u32), arch (u32), instruction_pointer (u64), args (6 x u64)
_NR, _ARCH, _ARGS = 0, 4, 16  # args[i]'s low 32 bits are at 16 + 8 i (the hosts below are little-endian)
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
CLONE_NEWUSER = 0x10000000
X32_SYSCALL_BIT = 0x40000000
POSIX_FADV_DONTNEED = 4
"""On x86-64 and arm64 (s390x alone has 6)."""
LOCK_COMMANDS = (5, 6, 7, 12, 13, 14, 36, 37, 38)
"""fcntl's F_GETLK, F_SETLK, F_SETLKW, F_GETLK64, F_SETLK64, F_SETLKW64, F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW
(include/uapi/asm-generic/fcntl.h)."""
LEASE_AND_NOTIFY_COMMANDS = (1024, 1025, 1026)
"""fcntl's F_SETLEASE, F_GETLEASE, F_NOTIFY (include/uapi/linux/fcntl.h)."""


@dataclass(frozen=True)
class Rule:
    """One refusal: ``call`` gets ``errno`` (0: it returns 0 without running); with ``arg``, only when that
    argument's low 32 bits equal one of ``values`` or share a bit with ``mask`` (the kernel reads these arguments
    as 32-bit ints)."""

    call: str
    errno: int
    arg: int | None = None
    values: tuple[int, ...] = ()
    mask: int = 0


BASE_RULES = (
    Rule("add_key", errno.EPERM), Rule("request_key", errno.EPERM), Rule("keyctl", errno.EPERM),
    Rule("clone3", errno.ENOSYS),
    Rule("unshare", errno.EPERM, arg=0, mask=CLONE_NEWUSER), Rule("clone", errno.EPERM, arg=0, mask=CLONE_NEWUSER),
)
"""Keyrings and user namespaces (see the module docstring)."""
CHANNEL_RULES = (
    Rule("flock", 0),  # succeeds, does nothing: see the module docstring
    Rule("fcntl", errno.ENOLCK, arg=1, values=LOCK_COMMANDS),
    Rule("fcntl", errno.EINVAL, arg=1, values=LEASE_AND_NOTIFY_COMMANDS),
    Rule("inotify_init", errno.ENOSYS), Rule("inotify_init1", errno.ENOSYS), Rule("fanotify_init", errno.ENOSYS),
    Rule("io_uring_setup", errno.ENOSYS), Rule("io_uring_enter", errno.ENOSYS),
    Rule("io_uring_register", errno.ENOSYS),
    Rule("cachestat", errno.ENOSYS), Rule("preadv2", errno.ENOSYS), Rule("pwritev2", errno.ENOSYS),
    Rule("fadvise64", errno.EINVAL, arg=3, values=(POSIX_FADV_DONTNEED,)),
)
"""Locks, watches, io_uring and page-cache probes: the channels between concurrent sandboxes (the module docstring)."""
DOCKER_ONLY_RULES = (
    Rule("bpf", errno.EPERM), Rule("perf_event_open", errno.EPERM), Rule("userfaultfd", errno.EPERM),
    Rule("syslog", errno.EPERM),
)
"""What the engine's default profile refuses without a capability check that a container with no capabilities
would fail anyway, and which a profile of ours replaces: the kernel leaves these to sysctls
(``unprivileged_bpf_disabled``, ``perf_event_paranoid``, ``unprivileged_userfaultfd``, ``dmesg_restrict``), which
another host may set loosely. (The process backend's filter leaves them to the same sysctls.) Everything else the
default profile refuses (mount, ptrace of other processes, module loading, reboot, clock setting, ...) needs a
capability the container does not have."""


@dataclass(frozen=True)
class Abi:
    """The numbers the filter needs for one architecture."""

    audit_arch: int
    docker_arch: str
    numbers: dict[str, int]
    """System call numbers by name; a call the architecture lacks (``inotify_init`` on arm64) is absent."""
    x32: bool
    """Whether the x32 ABI shares this architecture's audit number (its calls carry :data:`X32_SYSCALL_BIT`)."""


_GENERIC = {"io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "clone3": 435, "cachestat": 451}
ABIS = {
    # arch/x86/entry/syscalls/syscall_64.tbl
    "x86_64": Abi(0xC000003E, "SCMP_ARCH_X86_64", {
        "add_key": 248, "request_key": 249, "keyctl": 250, "unshare": 272, "clone": 56, "flock": 73, "fcntl": 72,
        "inotify_init": 253, "inotify_init1": 294, "fanotify_init": 300, "preadv2": 327, "pwritev2": 328,
        "fadvise64": 221, **_GENERIC}, True),
    # include/uapi/asm-generic/unistd.h
    "aarch64": Abi(0xC00000B7, "SCMP_ARCH_AARCH64", {
        "add_key": 217, "request_key": 218, "keyctl": 219, "unshare": 97, "clone": 220, "flock": 32, "fcntl": 25,
        "inotify_init1": 26, "fanotify_init": 262, "preadv2": 286, "pwritev2": 287, "fadvise64": 223,
        **_GENERIC}, False),
}


def rules(channels: bool = True) -> tuple[Rule, ...]:
    """The rules both backends apply; ``channels=False`` leaves the channels open, which only the channel tests'
    controls ask for (they show the channel passes a message where these rules are absent)."""
    return BASE_RULES + (CHANNEL_RULES if channels else ())


def _assemble(program: list[tuple[int, int | str, str | None, str | None] | str]) -> bytes:
    """Classic BPF from (code, k, jump-if-true label, jump-if-false label) rows and label strings between them."""
    labels: dict[str, int] = {}
    rows: list[tuple[int, int | str, str | None, str | None]] = []
    for item in program:
        if isinstance(item, str):
            labels[item] = len(rows)
        else:
            rows.append(item)
    out = bytearray()
    for index, (code, k, if_true, if_false) in enumerate(rows):
        jt = 0 if if_true is None else labels[if_true] - index - 1
        jf = 0 if if_false is None else labels[if_false] - index - 1
        if not (0 <= jt < 256 and 0 <= jf < 256):
            raise ValueError(f"BPF row {index}: a jump of {jt}/{jf} rows (classic BPF jumps forward, at most 255)")
        out += struct.pack("=HBBI", code, jt, jf, int(k))
    return bytes(out)


def program(abi: Abi, channels: bool = True) -> bytes:
    """The process backend's filter for ``abi`` (see the module docstring and :func:`rules`)."""
    chosen = [rule for rule in rules(channels) if rule.call in abi.numbers]
    calls = list(dict.fromkeys(rule.call for rule in chosen))  # in table order, each once
    errnos = sorted({rule.errno for rule in chosen} | {errno.ENOSYS})
    rows: list[tuple[int, int | str, str | None, str | None] | str] = [
        (_LD_W_ABS, _ARCH, None, None),
        (_JEQ_K, abi.audit_arch, "native", f"errno{errno.ENOSYS}"),
        "native",
        (_LD_W_ABS, _NR, None, None),
    ]
    if abi.x32:
        rows.append((_JGE_K, X32_SYSCALL_BIT, f"errno{errno.ENOSYS}", None))
    checked: list[str] = []
    for call in calls:
        own = [rule for rule in chosen if rule.call == call]
        if len(own) == 1 and own[0].arg is None:
            rows.append((_JEQ_K, abi.numbers[call], f"errno{own[0].errno}", None))
        else:
            rows.append((_JEQ_K, abi.numbers[call], f"args-{call}", None))
            checked.append(call)
    rows.append((_RET_K, _ALLOW, None, None))
    for call in checked:
        own = [rule for rule in chosen if rule.call == call]
        arg = own[0].arg
        if arg is None or any(rule.arg != arg for rule in own):
            raise ValueError(f"the rules of {call} must all look at one argument")
        rows += [f"args-{call}", (_LD_W_ABS, _ARGS + 8 * arg, None, None)]
        for rule in own:
            rows += [(_JEQ_K, value, f"errno{rule.errno}", None) for value in rule.values]
            if rule.mask:
                rows.append((_JSET_K, rule.mask, f"errno{rule.errno}", None))
        rows.append((_RET_K, _ALLOW, None, None))
    for number in errnos:
        rows += [f"errno{number}", (_RET_K, _ERRNO | number, None, None)]
    return _assemble(rows)


def host_abi() -> Abi | None:
    """This machine's numbers, or None on an architecture the filter does not know."""
    return ABIS.get(platform.machine())


def host_program(channels: bool = True) -> bytes | None:
    """The filter for this machine, or None on an architecture it does not know (then bots run without one)."""
    abi = host_abi()
    return None if abi is None else program(abi, channels)


def docker_profile(abi: Abi, channels: bool = True) -> dict[str, object]:
    """The same rules, plus :data:`DOCKER_ONLY_RULES`, as a Docker seccomp profile (``security_opt``'s
    ``seccomp=<JSON>``), which replaces the engine's default profile.

    Everything not named is allowed (the container's dropped capabilities refuse the rest of what the default
    profile refuses). Only the host's own architecture is listed: the engine's runtime refuses a system call of
    another ABI (32-bit or x32) as a bad architecture, so those need no numbers. Argument rules compare the low 32
    bits only (a masked comparison), as the kernel reads them: an exact 64-bit comparison would let a bot pass
    ``cmd | 1 << 32`` to ``fcntl`` around the rule."""
    syscalls: list[dict[str, object]] = []
    for rule in (*rules(channels), *DOCKER_ONLY_RULES):
        base: dict[str, object] = {"names": [rule.call], "action": "SCMP_ACT_ERRNO", "errnoRet": rule.errno}
        if rule.arg is None:
            syscalls.append(base)
            continue
        # SCMP_CMP_MASKED_EQ: (argument & value) == valueTwo
        for value in rule.values:
            syscalls.append(base | {"args": [{"index": rule.arg, "value": 0xFFFFFFFF, "valueTwo": value,
                                              "op": "SCMP_CMP_MASKED_EQ"}]})
        if rule.mask:
            syscalls.append(base | {"args": [{"index": rule.arg, "value": rule.mask, "valueTwo": rule.mask,
                                              "op": "SCMP_CMP_MASKED_EQ"}]})
    return {"defaultAction": "SCMP_ACT_ALLOW", "architectures": [abi.docker_arch], "syscalls": syscalls}


def docker_security_opt(channels: bool = True) -> str | None:
    """``seccomp=<profile>`` for this machine's containers, or None on an architecture the rules do not know."""
    abi = host_abi()
    return None if abi is None else "seccomp=" + json.dumps(docker_profile(abi, channels), separators=(",", ":"))


def program_fd(code: bytes) -> int:
    """A pipe's read end holding ``code``, for bwrap's ``--seccomp`` (which reads it to the end and closes it)."""
    read, write = os.pipe()
    try:
        os.write(write, code)  # a few hundred bytes: far below a pipe's buffer, so this never blocks
    finally:
        os.close(write)
    return read
