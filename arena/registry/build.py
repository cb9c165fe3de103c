"""A bot's ``build:`` command, run once in the sandbox on a scratch copy of its sources, and the built tree it leaves.

The build runs in the ``process`` backend (bubblewrap where it works) whatever backend later plays the bot: the
compilers are the host's (``/usr`` is bound read-only as for every bot), the bot's directory is a *writable*
scratch copy at ``/bot`` (never the author's directory, never a stored version), ``/tmp`` is a size-capped tmpfs
for the compiler's temporary files, and there is no network. It has its own limits (:class:`BuildLimits`): wall
time, memory (the bot's memory cgroup), processes and bytes of output. Its stdout and stderr are one log, of which
the tail is kept for the author.

When the build succeeds, its ``bot.yaml`` must be the one submitted (the name and the command that were checked),
and the tree it leaves goes through the same guards as a submission
(:func:`arena.bots.files.scan`, :func:`arena.bots.files.safe_copy`): a build that makes a symlink, a hard link or
too many bytes is refused like an upload that holds them. The guarded copy is the built tree that is checked,
hashed, stored and run.
"""

from __future__ import annotations

import math
import os
import selectors
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

from arena.bots.archive import ArchiveLimits, ArchiveRejected, unpack_tar
from arena.bots.files import (
    MAX_DIRECTORIES,
    MAX_FILES,
    MAX_TOTAL_BYTES,
    SubmissionRejected,
    has_ignored,
    remove_tree,
    safe_copy,
    scan,
    version_of,
    walk,
)
from arena.bots.manifest import MANIFEST, BotSpec, load_bot
from arena.sandbox import SandboxLimits
from arena.sandbox.process import ProcessSandbox

LOG_TAIL_LINES = 40
LOG_TAIL_BYTES = 8 * 1024


@dataclass(frozen=True)
class BuildLimits:
    """What one build may use. The defaults fit a C++ or Java bot of a few files with room to spare."""

    seconds: float = 60.0
    """Wall time from start to exit; the build's processes are killed when it runs out."""
    memory_mb: int = 1024
    output_kb: int = 1024
    """Bytes the build may write on stdout and stderr together; more is a runaway build, killed."""
    processes: int = 256
    """Processes and threads of the build's uid (a compiler driver, its passes, a JVM's threads)."""
    scratch_mb: int = 512
    """The size of the build's /tmp, and of its /bot (both tmpfs in bwrap: a build cannot fill the host's disk)."""

    def sandbox_limits(self) -> SandboxLimits:
        return SandboxLimits(memory_mb=self.memory_mb, processes=self.processes, file_mb=MAX_TOTAL_BYTES >> 20,
                             scratch_mb=self.scratch_mb, open_files=256, cpu_seconds=math.ceil(self.seconds) + 1)

    def describe(self) -> str:
        return f"{self.seconds:g} s, {self.memory_mb} MiB, {self.output_kb} KiB of output, no network"


DEFAULT_BUILD_LIMITS = BuildLimits()


@dataclass(frozen=True)
class BuildResult:
    """How a build went: ``ok``, or ``reason`` in plain words; ``log`` is the tail of its output."""

    ok: bool
    reason: str
    log: str
    seconds: float


def run_build(spec: BotSpec, target: Path, limits: BuildLimits = DEFAULT_BUILD_LIMITS,
              sandbox: ProcessSandbox | None = None) -> BuildResult:
    """Build the bot in ``spec.directory`` in a scratch copy and leave the built tree in ``target`` (which must not
    exist; on failure it is not created). Raises :class:`SandboxError` when the host cannot run the build at all."""
    assert spec.build is not None
    holder = Path(tempfile.mkdtemp(prefix=".build-", dir=target.parent))
    tree = holder / "bot"
    own = sandbox is None
    started = time.monotonic()
    try:
        safe_copy(spec.directory, tree, scan(spec.directory))
        _open_up(tree)
        box = ProcessSandbox() if sandbox is None else sandbox
        # In bwrap, /bot is a tmpfs of its own (bwrap.BUILD_SOURCE): the build fills it from the sources and its
        # tree comes back as a tar on stdout, unpacked here with an upload's guards. Without bwrap (a host that
        # cannot isolate), the build writes the scratch copy itself.
        out = holder / "built.tar" if box.isolated else None
        try:
            ok, reason, log = _run(replace(spec, directory=tree), box, limits, out)
        finally:
            if own:
                box.close()
        seconds = time.monotonic() - started
        if not ok:
            return BuildResult(False, reason, log, seconds)
        if out is not None:
            (holder / "built").mkdir()
            try:
                unpack_tar(out, holder / "built", ArchiveLimits(max_archive_bytes=_tar_cap()))
            except ArchiveRejected as error:
                return BuildResult(False, f"the build left something a bot may not hold: {error}", log, seconds)
            out.unlink()
            tree = holder / "built"
        if _manifest(tree) != _manifest(spec.directory):
            # The manifest names the bot and its command: what was checked and submitted must be what runs.
            return BuildResult(False, f"the build changed {MANIFEST}; a build may write any file but that one",
                               log, seconds)
        try:
            safe_copy(tree, target, scan(tree))
        except SubmissionRejected as error:
            remove_tree(target)
            return BuildResult(False, f"the build left something a bot may not hold: {error}", log, seconds)
        return BuildResult(True, f"built in {seconds:.1f} s", log, seconds)
    finally:
        remove_tree(holder)


def _tar_cap() -> int:
    """The most a built tree's tar may be: a bot's bytes, and a header for each of its files and directories."""
    return MAX_TOTAL_BYTES + 1024 * (MAX_FILES + MAX_DIRECTORIES + 8)


def _manifest(directory: Path) -> bytes | None:
    try:
        return (directory / MANIFEST).read_bytes()
    except OSError:  # removed, or made a directory
        return None


def _open_up(tree: Path) -> None:
    """Let the build's unprivileged uid write the scratch copy. Safe: it sits in a 0700 directory of ours, and no
    other sandbox sees it."""
    for current, _, names in walk(tree):
        os.chmod(current, 0o777)
        for name in names:
            path = Path(current, name)
            os.chmod(path, 0o777 if os.stat(path).st_mode & 0o111 else 0o666)


BUILD_SCRIPT = """\
cp -R /src/. /bot/ || { echo "arena: could not copy the sources into /bot" >&2; exit 125; }
"$@" 1>&2 || exit $?
exec tar -C /bot -cf - .
"""
"""The build inside bwrap: fill /bot from the sources, run the build with its stdout on stderr (one log), and when
it succeeds write /bot as a tar on stdout."""


def _run(spec: BotSpec, sandbox: ProcessSandbox, limits: BuildLimits, out: Path | None) -> tuple[bool, str, str]:
    """Run the build command (``spec.build``); (ok, why not, the tail of its output). With ``out``, the build runs
    in :data:`BUILD_SCRIPT` and its tree's tar is written to ``out`` (at most :func:`_tar_cap` bytes)."""
    assert spec.build is not None
    command = " ".join(spec.build)
    run = ("/bin/sh", "-c", BUILD_SCRIPT, "build", *spec.build) if out is not None else spec.build
    process = sandbox.launch(replace(spec, command=run), limits.sandbox_limits(), writable=True)
    log = bytearray()
    written = tar_bytes = 0
    cap = limits.output_kb << 10
    verdict: str | None = None
    selector = selectors.DefaultSelector()
    deadline = time.monotonic() + limits.seconds
    sink = open(out, "wb") if out is not None else None  # noqa: SIM115 (closed in the finally below)
    try:
        process.close_stdin()
        for fd in process.read_fds():
            selector.register(fd, selectors.EVENT_READ)
        while verdict is None and (selector.get_map() or process.poll() is None):
            left = deadline - time.monotonic()
            if left <= 0:
                verdict = f"the build did not finish within {limits.seconds:g} s (its time limit)"
                break
            if not selector.get_map():
                time.sleep(min(0.05, left))  # both streams closed: wait for the exit
                continue
            for key, _ in selector.select(min(left, 0.5)):
                for stream, chunk in process.read(key.fd):
                    if not chunk:
                        selector.unregister(key.fd)
                        continue
                    if sink is not None and stream == "stdout":
                        tar_bytes += len(chunk)
                        if tar_bytes > _tar_cap():
                            verdict = (f"the build left more than {MAX_TOTAL_BYTES >> 20} MiB of files in /bot (a "
                                       "bot may hold at most that)")
                        sink.write(chunk)
                        continue
                    written += len(chunk)
                    log = (log + chunk)[-LOG_TAIL_BYTES:]
                    if written > cap:
                        verdict = f"the build wrote more than {limits.output_kb} KiB of output (its limit)"
    finally:
        selector.close()
        if sink is not None:
            sink.close()
        ended = process.kill()  # the whole tree, whatever it left running
    tail = "\n".join(log.decode(errors="replace").rstrip().splitlines()[-LOG_TAIL_LINES:])
    if verdict is not None:
        return False, verdict, tail
    if ended.limit == "memory":
        return False, f"the build used more than {limits.memory_mb} MiB of memory (its limit)", tail
    if ended.returncode != 0:
        how = ended.describe()
        if ended.returncode in (126, 127):
            how += (f" (is {spec.build[0]!r} installed on the host? the build sees the host's /usr, /bin and /lib "
                    "only)")
        if b"No space left on device" in log:
            how += (f"; the build ran out of room: its /bot and its /tmp hold at most {limits.scratch_mb} MiB "
                    "each (a build's quota)")
        return False, f"`{command}` {how}", tail
    return True, "", tail


class BuildFailed(Exception):
    """A bot with a ``build:`` could not be built before it plays: the message names its directory, the reason and
    the last lines of the build's log."""

    def __init__(self, spec: BotSpec, result: BuildResult) -> None:
        log = "".join(f"\n    {line}" for line in result.log.splitlines())
        super().__init__(f"{spec.directory}: the build of bot {spec.name!r} failed: {result.reason}"
                         + (f"; its log (last lines):{log}" if log else ""))
        self.result = result


def playable(spec: BotSpec, cache: Path, limits: BuildLimits = DEFAULT_BUILD_LIMITS) -> BotSpec:
    """The bot as it plays. A registry version (built when it was submitted), or a bot without a ``build:`` and
    with nothing its ``.arenaignore`` leaves out, is ``spec`` itself; one with such files plays from a copy without
    them in ``cache`` (the sandbox sees the bot as it would be stored); a bot directory with a ``build:`` is built once into ``cache``, under the hash of its files as
    given, and plays from there: a rebuilt or resumed tournament plays the same built bytes (and so keeps its
    ``files_hash``), an edit to the sources builds anew, and the author's directory is never written.

    Raises :class:`BuildFailed`, or :class:`SandboxError` when the host cannot run the build at all."""
    if version_of(spec.directory) is not None or spec.build is None and has_ignored(spec.directory) is None:
        return spec
    cache = cache.resolve()  # the sandbox binds by absolute path
    target = cache / spec.files_hash
    if not (target / MANIFEST).is_file():
        cache.mkdir(parents=True, exist_ok=True)
        staging = cache / f".{spec.files_hash[:16]}.{os.getpid()}"
        remove_tree(staging)  # left by a build of this process's pid that was killed
        if spec.build is None:  # what .arenaignore leaves out is not in the sandbox either: the bot as stored
            safe_copy(spec.directory, staging, scan(spec.directory))
        else:
            result = run_build(spec, staging, limits)
            if not result.ok:
                raise BuildFailed(spec, result)
        try:
            staging.rename(target)  # whole or not at all: a reader never sees half a build
        except OSError:
            if not (target / MANIFEST).is_file():
                raise
            remove_tree(staging)  # another runner built the same sources first; theirs is as good
    return load_bot(target)
