"""Hostile and broken test bots, written into a temporary directory on demand.

Each bot plays legal moves (throw its highest card, take from the deck, never declare) and misbehaves once, at a
chosen moment, so that a test can check both that the misbehaviour was caught and that the match went on.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import Any

from arena.game.results import FaultKind
from arena.match.channel import Caps
from arena.match.protocol import Limits

TEMPLATE = '''\
import os, sys, time, json, random
import arena_bot

ATTACK_AT = {at}  # 0: right after hello arrives; n: at the bot's n-th turn
PARAMS = json.loads({params!r})  # what the test tells the attack (ports, paths, pids)
ALL_CARDS = [r + s for s in "CDHS" for r in "A23456789TJQK"]


def raw(data):
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def reveal(label, data):
    """Tell the test what an attack got: it reads this back from the stderr tail."""
    sys.stderr.write(f"{{label}}={{data}}\\n")
    sys.stderr.flush()


def attack(message):
{attack}


class Hostile(arena_bot.Bot):
    turns = 0

    def reply(self, message):
        if message.get("type") == "hello" and ATTACK_AT == 0:
            answer = attack(message)
            return {{"type": "ready"}} if answer is None else answer
        return super().reply(message)

    def on_turn(self, message):
        self.turns += 1
        if self.turns == ATTACK_AT:
            answer = attack(message)
            if answer is not None:
                return answer if answer != "silent" else None
        card = max(message["hand"], key=arena_bot.value)
        return arena_bot.play([card], "deck")


def run():
    bot = Hostile()
    for line in sys.stdin.buffer:
        answer = bot.reply(json.loads(line))
        if answer is not None:
            raw(json.dumps(answer).encode() + b"\\n")


{prelude}
run()
'''

SEE_ALL = Caps(clean_stderr_bytes=Caps().stderr_bytes)
"""The referee's caps for the hostile suite: an attack tells the test what it got on stderr, and a seat that ends
without a fault keeps only a few KiB of it (what the store needs), which would cut a leak out of the test's view.
With these, a clean seat keeps as much as a faulted one."""

# attack -> expected fault kind
FAULTS = {
    "sleep_past_deadline": FaultKind.TIMEOUT,
    "slow_loris": FaultKind.TIMEOUT,
    "never_reads_stdin": FaultKind.TIMEOUT,
    "exit_mid_match": FaultKind.CRASH,
    "crash_traceback": FaultKind.CRASH,
    "close_stdout": FaultKind.CRASH,
    "not_json": FaultKind.INVALID,
    "wrong_shape": FaultKind.INVALID,
    "binary_garbage": FaultKind.INVALID,
    "long_line": FaultKind.INVALID,
    "flood_no_newline": FaultKind.INVALID,
    "unsolicited": FaultKind.INVALID,
    "bad_ready": FaultKind.INVALID,
    "card_not_in_hand": FaultKind.ILLEGAL,
    "illegal_set": FaultKind.ILLEGAL,
    "declare_first_turn": FaultKind.ILLEGAL,
    "take_not_on_floor": FaultKind.ILLEGAL,
}


LIMIT_FIRST = Limits(hello_ms=60_000, move_ms=120_000, bank_ms=0)
"""The clocks of a match that tests a resource limit (a second of CPU, a memory cap): so far past what the bot needs
to reach its limit that the limit strikes first however loaded the host is (a second of CPU takes a bot about 10 s
of wall time at a load of 20 on 2 cores). A limit that does not hold fails such a test as a timeout, not a hang."""

# name -> (when, attack body, code run before the protocol loop)
ATTACKS: dict[str, tuple[int, str, str]] = {
    "polite": (1, "return None", ""),
    "sleep_past_deadline": (2, "time.sleep(60)", ""),
    "exit_mid_match": (2, "sys.exit(3)", ""),
    "crash_traceback": (2, "raise RuntimeError('boom: the bot fell over')", ""),
    "stderr_flood_then_crash": (3, "sys.stderr.write('noise\\n' * 50000)\nraise RuntimeError('boom after the noise')", ""),
    "not_json": (1, "raw(b'I think I will throw the seven\\n'); return 'silent'", ""),
    "wrong_shape": (1, "return {'type': 'play', 'discard': '7H', 'take': 'deck'}", ""),
    "binary_garbage": (1, "raw(bytes(range(256)) * 4 + b'\\n'); return 'silent'", ""),
    "long_line": (1, "raw(b'[' + b'1,' * 60000 + b'1]\\n'); return 'silent'", ""),
    "flood_no_newline": (1, "raw(b'x' * (8 << 20)); time.sleep(60)", ""),
    "debug_then_move": (1, "raw(b'thinking about it...\\n'); return None", ""),
    "unsolicited": (1, "raw(b'{\"type\": \"chat\", \"text\": \"hi\"}\\n'); return None", ""),
    "card_not_in_hand": (
        1, "return arena_bot.play([next(c for c in ALL_CARDS if c not in message['hand'])], 'deck')", ""),
    "illegal_set": (
        1,
        ("h = message['hand']\n"
         "return arena_bot.play(next([a, b] for a in h for b in h if a[0] != b[0]), 'deck')"),
        "",
    ),
    "declare_first_turn": (1, "return arena_bot.declare()", ""),
    "take_not_on_floor": (
        1,
        ("h = message['hand']\n"
         "gone = next(c for c in ALL_CARDS if c not in h and c not in message['floor'])\n"
         "return arena_bot.play([h[0]], gone)"),
        "",
    ),
    "slow_loris": (1, "raw(b'{\"type\": \"pl')\nwhile True:\n    raw(b' ')\n    time.sleep(0.05)", ""),
    "never_reads_stdin": (0, "return None", "time.sleep(60)"),
    "stderr_flood": (1, "return None", "sys.stderr.write('E' * (1 << 20))\nsys.stderr.flush()"),
    "stderr_flood_every_turn": (
        1, "return None",
        ("_orig = Hostile.on_turn\n"
         "def _noisy(self, message):\n"
         "    sys.stderr.write('noise ' * 50000)\n"
         "    return _orig(self, message)\n"
         "Hostile.on_turn = _noisy"),
    ),
    "cpu_spin": (1, "while True:\n    pass", ""),
    "close_stdout": (1, "os.close(1)\ntime.sleep(60)", ""),
    "close_stdin": (2, "os.close(0)\ntime.sleep(60)", ""),
    "daemon_grandchild": (
        1,
        ("if os.fork() == 0:\n"
         "    os.setsid()\n"
         "    if os.fork() == 0:\n"
         "        time.sleep(300)\n"
         "    os._exit(0)\n"
         "return None"),
        "",
    ),
    "bad_ready": (0, "return {'type': 'steady'}", ""),
    "slow_ready": (0, "time.sleep(2)\nreturn None", ""),
    # -- attacks on the sandbox (tests/sandbox/test_sandbox.py); each plays legal moves afterwards --------------------
    "fork_bomb": (
        1,
        ("count = 0\n"
         "for _ in range(PARAMS.get('max_forks', 300)):  # bounded, in case nothing caps it\n"
         "    try:\n"
         "        pid = os.fork()\n"
         "    except OSError:\n"
         "        break\n"
         "    if pid == 0:\n"
         "        time.sleep(300)\n"
         "        os._exit(0)\n"
         "    count += 1\n"
         "reveal('FORKS', count)\n"
         "return None"),
        "",
    ),
    "memory_balloon": (
        1,
        ("hoard = []\n"
         "for _ in range(PARAMS.get('max_mb', 2048) // 8):  # bounded, in case nothing caps it\n"
         "    hoard.append(b'x' * (8 << 20))  # touched pages, not just address space\n"
         "reveal('BALLOON', len(hoard) * 8)\n"
         "return None"),
        "",
    ),
    "sigterm_spin": (1, "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True:\n    pass", ""),
    "huge_file": (
        1,
        ("written = 0\n"
         "try:\n"
         "    with open(os.path.join(os.environ.get('TMPDIR', '.'), 'huge'), 'wb') as out:\n"
         "        for _ in range(PARAMS.get('max_mb', 256)):\n"
         "            out.write(b'h' * (1 << 20))\n"
         "            out.flush()\n"
         "            written += 1 << 20\n"
         "except OSError as error:\n"
         "    reveal('ERROR', error.errno)\n"
         "reveal('WROTE', written)\n"
         "return None"),
        "",
    ),
    "many_files": (
        1,
        ("written = 0\n"
         "try:\n"
         "    for n in range(PARAMS.get('max_mb', 256) * 16):\n"
         "        with open(os.path.join(os.environ.get('TMPDIR', '.'), f'f{n}'), 'wb') as out:\n"
         "            out.write(b'm' * (64 << 10))\n"
         "        written += 64 << 10\n"
         "except OSError as error:\n"
         "    reveal('ERROR', error.errno)\n"
         "reveal('WROTE', written)\n"
         "return None"),
        "",
    ),
    "write_outside": (
        1,
        ("for path in [os.path.abspath('planted.txt'), os.path.abspath('big.bin'), *PARAMS.get('paths', [])]:\n"
         "    try:\n"
         "        with open(path, 'wb') as out:\n"
         "            out.write(b'w' * (1 << 20))\n"
         "        reveal('WROTE', path)\n"
         "    except OSError as error:\n"
         "        reveal('DENIED', path)\n"
         "for n in range(50):\n"
         "    try:\n"
         "        open(f'small{n}.txt', 'w').close()\n"
         "    except OSError:\n"
         "        break\n"
         "return None"),
        "",
    ),
    "line_100mb": (
        1, "for _ in range(100):\n    raw(b'x' * (1 << 20))\nraw(b'\\n')\nreturn 'silent'", ""),
    "connect_loopback": (
        1,
        ("import socket\n"
         "try:\n"
         "    with socket.create_connection(('127.0.0.1', PARAMS['port']), timeout=1) as conn:\n"
         "        conn.sendall(b'hello from the bot')\n"
         "        reveal('CONNECTED', PARAMS['port'])\n"
         "except OSError as error:\n"
         "    reveal('NOCONNECT', error.errno)\n"
         "return None"),
        "",
    ),
    "read_files": (
        1,
        ("for path in PARAMS['paths']:\n"
         "    try:\n"
         "        with open(path, 'rb') as handle:\n"
         "            reveal('READ', handle.read(4096))\n"
         "    except OSError as error:\n"
         "        reveal('UNREADABLE', error.errno)\n"
         "return None"),
        "",
    ),
    "fifo_snoop": (
        1,
        ("for path in PARAMS['listed']:\n"
         "    try:\n"
         "        reveal('LISTED', sorted(os.listdir(path)))\n"
         "    except OSError as error:\n"
         "        reveal('UNLISTED', error.errno)\n"
         "for path in PARAMS['opened']:\n"
         "    try:\n"
         "        os.close(os.open(path, os.O_RDWR | os.O_NONBLOCK))\n"
         "        reveal('OPENED', path)\n"
         "    except OSError as error:\n"
         "        reveal('UNOPENED', error.errno)\n"
         "try:\n"
         "    os.mkfifo(PARAMS['made'])\n"
         "    reveal('MADE', PARAMS['made'])\n"
         "except OSError as error:\n"
         "    reveal('UNMADE', error.errno)\n"
         "return None"),
        "",
    ),
    "read_environment": (
        1,
        ("reveal('ENV', dict(os.environ))\n"
         "pids = [PARAMS['referee_pid'], *PARAMS.get('pids', []), os.getppid(), 1]\n"
         "pids += [int(p) for p in os.listdir('/proc') if p.isdigit()]\n"
         "for pid in pids:\n"
         "    try:\n"
         "        with open(f'/proc/{pid}/environ', 'rb') as handle:\n"
         "            reveal(f'ENVIRON{pid}', handle.read())\n"
         "    except OSError:\n"
         "        pass\n"
         "return None"),
        "",
    ),
    "symlink_escape": (
        1,
        ("scratch = os.environ.get('TMPDIR', '/tmp')\n"
         "for n, target in enumerate(PARAMS['targets']):\n"
         "    link = os.path.join(scratch, f'link{n}')\n"
         "    try:\n"
         "        os.symlink(target, link)\n"
         "        with open(link, 'rb') as handle:\n"
         "            reveal('READ', handle.read(4096))\n"
         "    except OSError as error:\n"
         "        reveal('UNREADABLE', error.errno)\n"
         "return None"),
        "",
    ),
    "kill_everyone": (
        1,
        ("import signal\n"
         "try:\n"
         "    os.kill(-1, signal.SIGKILL)  # every process we may signal, except ourselves\n"
         "except OSError as error:\n"
         "    reveal('KILLFAILED', error.errno)\n"
         "return None"),
        "",
    ),
    "signal_referee": (
        1,
        ("import signal\n"
         "for pid in (PARAMS['referee_pid'], os.getppid()):\n"
         "    for sig in (signal.SIGSTOP, signal.SIGKILL):\n"
         "        try:\n"
         "            os.kill(pid, sig)\n"
         "            reveal('SIGNALLED', pid)\n"
         "        except OSError as error:\n"
         "            reveal('NOSIGNAL', error.errno)\n"
         "return None"),
        "",
    ),
    # Kernel keyrings are not namespaced: a key left in the uid's keyring would reach the next bot of that uid.
    "keyring_note": (
        1,
        ("import ctypes, platform\n"
         "numbers = {'x86_64': (248, 250), 'aarch64': (217, 219)}.get(platform.machine())\n"
         "if numbers is None:\n"
         "    reveal('KEYSKIPPED', platform.machine())\n"
         "    return None\n"
         "add_key, keyctl = numbers\n"
         "libc = ctypes.CDLL(None, use_errno=True)\n"
         "buffer = ctypes.create_string_buffer(4096)\n"
         "for keyring in (-4, -5, -3):  # the user, user-session and session keyrings\n"
         "    found = libc.syscall(keyctl, 11, ctypes.c_int(keyring), buffer, 4096)  # KEYCTL_READ: its keys\n"
         "    if found > 0:\n"
         "        reveal('KEYFOUND', f'{keyring}:{found // 4}')\n"
         "    note = PARAMS['note'].encode()\n"
         "    serial = libc.syscall(add_key, b'user', b'arena-note', note, len(note), ctypes.c_int(keyring))\n"
         "    if serial > 0:\n"
         "        reveal('KEYADDED', f'{keyring}:{serial}')\n"
         "    else:\n"
         "        reveal('KEYREFUSED', ctypes.get_errno())\n"
         "return None"),
        "",
    ),
    "user_namespace": (
        1,
        ("import ctypes, platform, signal\n"
         "libc = ctypes.CDLL(None, use_errno=True)\n"
         "CLONE_NEWUSER = 0x10000000\n"
         "if libc.unshare(CLONE_NEWUSER) == 0:\n"
         "    reveal('USERNS', 'unshare')\n"
         "else:\n"
         "    reveal('USERNSREFUSED', ctypes.get_errno())\n"
         "clone = {'x86_64': 56, 'aarch64': 220}.get(platform.machine())\n"
         "if clone is not None:\n"
         "    pid = libc.syscall(clone, CLONE_NEWUSER | int(signal.SIGCHLD), 0, 0, 0, 0)  # fork-like: no new stack\n"
         "    if pid == 0:\n"
         "        os._exit(0)\n"
         "    if pid > 0:\n"
         "        os.waitpid(pid, 0)\n"
         "        reveal('USERNS', 'clone')\n"
         "    else:\n"
         "        reveal('USERNSREFUSED', ctypes.get_errno())\n"
         "return None"),
        "",
    ),
    # Channels between concurrent sandboxes (the red team's H1; tests/sandbox/test_channels.py passes messages through
    # them): each refused call must be an error the bot catches, after which it plays on to the end of its match.
    "shared_locks": (
        1,
        ("import ctypes, errno, fcntl\n"
         "libc = ctypes.CDLL(None, use_errno=True)\n"
         "fd = os.open(PARAMS['shared'], os.O_RDONLY)\n"
         "for name, call in [('FLOCK', lambda: fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)),\n"
         "                   ('LOCKF', lambda: fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, 1000)),\n"
         "                   ('OFDLOCK', lambda: fcntl.fcntl(fd, fcntl.F_OFD_GETLK, bytes(32))),\n"
         "                   ('NOTIFY', lambda: fcntl.fcntl(os.open('/usr', os.O_RDONLY), fcntl.F_NOTIFY, 1)),\n"
         "                   ('NOWAIT', lambda: os.preadv(fd, [bytearray(16)], 0, os.RWF_NOWAIT)),\n"
         "                   ('EVICT', lambda: os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED))]:\n"
         "    try:\n"
         "        call()\n"
         "        reveal(name, 'ok')\n"
         "    except OSError as error:\n"
         "        reveal(name, error.errno)\n"
         "import platform\n"
         "fcntl_nr = {'x86_64': 72, 'aarch64': 25}[platform.machine()]\n"
         "# F_GETLK with a high bit set above the 32 the kernel reads: a 64-bit comparison would let it through\n"
         "high = libc.syscall(fcntl_nr, fd, ctypes.c_ulong(fcntl.F_GETLK | 1 << 32), ctypes.create_string_buffer(32))\n"
         "reveal('HIGHCMD', 'ok' if high >= 0 else ctypes.get_errno())\n"
         "cached = libc.syscall(451, fd, ctypes.create_string_buffer(16), ctypes.create_string_buffer(48), 0)\n"
         "reveal('CACHESTAT', 'ok' if cached >= 0 else ctypes.get_errno())  # 451 everywhere\n"
         "watcher = libc.inotify_init1(0)\n"
         "reveal('INOTIFY', 'ok' if watcher >= 0 else ctypes.get_errno())\n"
         "ring = libc.syscall(425, 1, ctypes.create_string_buffer(120))  # io_uring_setup: one number everywhere\n"
         "reveal('IOURING', 'ok' if ring >= 0 else ctypes.get_errno())\n"
         "try:\n"
         "    with open('/proc/locks') as handle:\n"
         "        reveal('PROCLOCKS', len(handle.read().splitlines()))\n"
         "except OSError as error:  # hidden: EACCES under bwrap\n"
         "    reveal('PROCLOCKS', 0)\n"
         "return None"),
        "",
    ),
}


def make_bot(root: Path, attack: str, name: str | None = None, params: dict[str, Any] | None = None) -> Path:
    """Write the bot for ``attack`` under ``root`` and return its directory; ``params`` reach it as PARAMS."""
    when, body, prelude = ATTACKS[attack]
    directory = root / (name or attack.replace("_", "-"))
    directory.mkdir(parents=True, exist_ok=True)
    source = TEMPLATE.format(at=when, attack=textwrap.indent(body, "    "), prelude=prelude,
                             params=json.dumps(params or {}))
    (directory / "bot.py").write_text(source)
    (directory / "bot.yaml").write_text(f"name: {directory.name}\ncommand: python3 bot.py\nlanguage: python\n")
    return directory


def processes_under(root: Path) -> list[int]:
    """Pids of live processes whose working directory is inside ``root`` (a bot's directory)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
            with open(f"/proc/{entry}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if state != b"Z" and Path(cwd).is_relative_to(root):
            found.append(int(entry))
    return found


def _exists_with_uid(uid: int, released_at: float | None = None) -> list[int]:
    """Pids of processes of real uid ``uid``, zombies included (an unreaped zombie is a leftover too).

    With ``released_at`` (CLOCK_BOOTTIME when the sandbox gave the uid back), processes started after it are
    another bot's, launched by a concurrent runner that was handed the same uid, and do not count.
    """
    ticks = os.sysconf("SC_CLK_TCK")
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/status", "rb") as handle:
                    status = handle.read()
                with open(f"/proc/{entry}/stat", "rb") as handle:
                    started = int(handle.read().rsplit(b")", 1)[1].split()[19]) / ticks
            except (OSError, IndexError, ValueError):
                continue
            start = status.index(b"\nUid:\t") + 6
            if int(status[start : status.index(b"\t", start)]) == uid and (
                released_at is None or started < released_at
            ):
                found.append(int(entry))
    return found


def leftovers(sandbox: Any, directory: Path) -> list[str]:
    """Everything of the bot in ``directory`` that is still there: processes found by cwd (the plain variant),
    by the per-bot uid, the bwrap processes and the namespace's init by pid, and cgroups not removed."""
    found = [f"pid {pid} (cwd)" for pid in processes_under(directory)]
    for launch in getattr(sandbox, "launched", []):
        if launch.directory != directory.resolve():
            continue
        for pid in (launch.pid, launch.ns_init):
            if pid is not None and os.path.exists(f"/proc/{pid}"):
                found.append(f"pid {pid} (bwrap or its init)")
        if launch.uid is not None:
            found += [f"pid {pid} (uid {launch.uid})" for pid in _exists_with_uid(launch.uid, launch.released_at)]
        found += [f"cgroup {path}" for path in launch.cgroup if path.exists()]
    if hasattr(sandbox, "containers"):  # the docker backend: every container of the run is gone after a match
        found += [f"container {container.name}" for container in sandbox.containers()]
    return found
