"""The seccomp filter of the ``process`` backend's bwrap variant: no kernel keyrings, no new user namespaces.

Kernel keyrings are not namespaced: a key a bot adds to its uid's keyring (``add_key`` to ``@u``) outlives the bot,
and per-bot uids are reused, so a later bot of another author would read it -- a channel between bots. A user
namespace gives a bot a fresh set of capabilities over new namespaces: more kernel surface than a bot needs. So the
filter refuses ``add_key``, ``request_key`` and ``keyctl``, and ``clone``/``unshare`` with ``CLONE_NEWUSER``, with
EPERM; ``clone3`` (whose flags a classic BPF filter cannot read) gets ENOSYS, on which libc falls back to
``clone``. System calls of another ABI than the host's own (32-bit ones on x86-64, x32) get ENOSYS: the filter
would otherwise need their numbers too, and no bot runtime here uses them. Docker's default profile refuses the
same calls, so both backends agree.

The program is classic BPF, assembled here (no libseccomp binding is needed), and bwrap installs it from a
descriptor (``--seccomp FD``) just before it execs the bot's command.
"""

from __future__ import annotations

import errno
import os
import platform
import struct
from dataclasses import dataclass

# struct seccomp_data: nr (u32), arch (u32), instruction_pointer (u64), args (6 x u64)
_NR, _ARCH, _ARG0_LOW = 0, 4, 16  # the low 32 bits of args[0] (the hosts below are little-endian)
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
CLONE_NEWUSER = 0x10000000
X32_SYSCALL_BIT = 0x40000000


@dataclass(frozen=True)
class Abi:
    """The numbers the filter needs for one architecture."""

    audit_arch: int
    add_key: int
    request_key: int
    keyctl: int
    unshare: int
    clone: int
    clone3: int
    x32: bool
    """Whether the x32 ABI shares this architecture's audit number (its calls carry :data:`X32_SYSCALL_BIT`)."""


ABIS = {
    "x86_64": Abi(0xC000003E, 248, 249, 250, 272, 56, 435, True),
    "aarch64": Abi(0xC00000B7, 217, 218, 219, 97, 220, 435, False),
}


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
        out += struct.pack("=HBBI", code, jt, jf, k)
    return bytes(out)


def program(abi: Abi) -> bytes:
    """The filter for ``abi`` (see the module docstring)."""
    refuse = _ERRNO | errno.EPERM
    no_such = _ERRNO | errno.ENOSYS
    rows: list[tuple[int, int | str, str | None, str | None] | str] = [
        (_LD_W_ABS, _ARCH, None, None),
        (_JEQ_K, abi.audit_arch, "native", "foreign"),
        "native",
        (_LD_W_ABS, _NR, None, None),
    ]
    if abi.x32:
        rows.append((_JGE_K, X32_SYSCALL_BIT, "foreign", "numbers"))
    rows += [
        "numbers",
        (_JEQ_K, abi.add_key, "refuse", None),
        (_JEQ_K, abi.request_key, "refuse", None),
        (_JEQ_K, abi.keyctl, "refuse", None),
        (_JEQ_K, abi.clone3, "foreign", None),
        (_JEQ_K, abi.unshare, "flags", None),
        (_JEQ_K, abi.clone, "flags", "allow"),
        "flags",
        (_LD_W_ABS, _ARG0_LOW, None, None),
        (_JSET_K, CLONE_NEWUSER, "refuse", "allow"),
        "allow",
        (_RET_K, _ALLOW, None, None),
        "refuse",
        (_RET_K, refuse, None, None),
        "foreign",
        (_RET_K, no_such, None, None),
    ]
    return _assemble(rows)


def host_program() -> bytes | None:
    """The filter for this machine, or None on an architecture it does not know (then bots run without one)."""
    abi = ABIS.get(platform.machine())
    return None if abi is None else program(abi)


def program_fd(code: bytes) -> int:
    """A pipe's read end holding ``code``, for bwrap's ``--seccomp`` (which reads it to the end and closes it)."""
    read, write = os.pipe()
    try:
        os.write(write, code)  # a few hundred bytes: far below a pipe's buffer, so this never blocks
    finally:
        os.close(write)
    return read
