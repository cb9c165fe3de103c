"""``arena check``: is a bot fit to enter a tournament? Every step says what was expected, what arrived, and why.

:func:`check_bot` validates the manifest and the files, starts the bot in the sandbox and checks the ``hello``
handshake itself (so it knows exactly which bytes arrived), then plays short matches through the real referee:
the bot against a copy of itself, and against the sample bot ``greedy`` in both seats. A bot with a ``build:``
command is first built in a scratch copy (:mod:`arena.registry.build`), and the built tree is what the other steps run, so
that a check does exactly what a submission will. Faults are turned into
plain-word advice chosen by their reason codes and facts and the bot's stderr (:func:`explain`), because the person reading
them is a bot author who has not read the referee's code. ``arena submit`` runs the same check.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import selectors
import stat
import tempfile
import time
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.bots.files import (
    IGNORE_FILE,
    MAX_FILES,
    MAX_TOTAL_BYTES,
    SubmissionRejected,
    bot_walk,
    has_ignored,
    safe_copy,
    scan,
)
from arena.bots.manifest import BotSpec, ManifestError, load_bot
from arena.game.results import Fault, FaultKind, Reason, counted, limit_reason
from arena.game.rules import Rules
from arena.match import protocol
from arena.match.live import LiveBots
from arena.match.matchlog import LogError, read_records
from arena.match.protocol import Limits
from arena.match.referee import InfrastructureError, play_match
from arena.match.stderr import error_view
from arena.registry.build import DEFAULT_BUILD_LIMITS, BuildLimits, run_build
from arena.resources import data_dir
from arena.sandbox import BotProcess, Sandbox, SandboxError, SandboxLimits, get_sandbox
from arena.sandbox.process import ProcessSandbox

SAMPLE_OPPONENT = data_dir("sample_bots") / "greedy"
CHECK_RULES = Rules(threshold=30)
"""Short matches: a few rounds each. The time limits stay the tournament defaults: a check must not pass a bot
that a tournament would fault, nor fail one it would accept."""
STDERR_LINES = 12
CAPTURE_BYTES = 4096


@dataclass
class Step:
    """One step of a check. ``ok`` is None when the step was skipped because an earlier one failed."""

    name: str
    ok: bool | None
    expected: str
    got: str
    advice: list[str] = field(default_factory=list)
    stderr_tail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.name, "ok": self.ok, "expected": self.expected, "got": self.got, "advice": self.advice,
                "stderr_tail": self.stderr_tail}


@dataclass
class CheckReport:
    directory: str
    sandbox: str
    bot: str | None = None
    files_hash: str | None = None
    steps: list[Step] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def bad_manifest(self) -> bool:
        return any(step.name == "manifest" and step.ok is False for step in self.steps)

    @property
    def fit(self) -> bool:
        """Fit to enter a tournament: every step ran and passed."""
        return bool(self.steps) and all(step.ok is True for step in self.steps)

    @property
    def exit_code(self) -> int:
        return 0 if self.fit else 2 if self.bad_manifest else 1

    def to_dict(self) -> dict[str, Any]:
        return {"bot": self.bot, "directory": self.directory, "sandbox": self.sandbox, "files_hash": self.files_hash,
                "fit": self.fit, "seconds": round(self.seconds, 2), "steps": [step.to_dict() for step in self.steps]}


# -- plain-word advice ------------------------------------------------------------------------------------------

TEN_AS_10 = re.compile(r"(?<![0-9A-Za-z])10[CDHScdhs](?![0-9A-Za-z])")
DEBUG_STDOUT = ("your bot printed text to stdout; stdout is only for protocol replies, write debug output to stderr "
                "(print(..., file=sys.stderr), arena_bot.log, console.error)")
FLUSH_HOW = {
    "python": "print(..., flush=True) or sys.stdout.flush() in Python; arena_bot.run flushes for you. The sandbox sets "
              "PYTHONUNBUFFERED, so plain print() is never the cause: look for a file object of your own on stdout",
    "c": "fflush(stdout) after each printf in C, or setvbuf(stdout, NULL, _IOLBF, 0) once",
    "c++": "std::endl or std::flush after each reply in C++",
    "java": "System.out.flush() after each reply in Java",
    "rust": "io::stdout().flush() after each reply in Rust (stdout is line-buffered only on a terminal)",
    "go": "Flush() on your bufio.Writer after each reply in Go",
    "javascript": "Node writes to a pipe at once, so the bot more likely never got to write: see that it reads "
                  "stdin line by line (readline) and answers each hello as it arrives",
}
FLUSH_ANY = ("fflush(stdout) in C, System.out.flush() in Java, std::flush in C++, print(..., flush=True) in "
             "Python")
READ_ALL = ("the bot seems to read all of stdin before answering (sys.stdin.read(), readlines(), "
            "fs.readFileSync(0), an 'end' handler, read_to_string): stdin stays open until the match ends, so it "
            "waits forever. It must answer each line as it comes: read line by line (PROTOCOL.md, \"Common "
            "mistakes\")")
READS_ALL = re.compile(r"stdin\.read\(\s*\)|stdin\.readlines\(|readFileSync\(\s*(?:0|[\"']/dev/stdin)|"
                       r"stdin\.on\(\s*[\"']end[\"']|io\.ReadAll\(os\.Stdin|read_to_string\(")
MOVE_SHAPE = ('a move is {"type": "play", "discard": [cards], "take": "deck" or a floor card} or '
              '{"type": "declare"}: see PROTOCOL.md, "Replies"')
ILLEGAL_ADVICE = {
    Reason.ILLEGAL_NOT_IN_HAND: "the bot threw a card that is not in its hand: take the cards from the turn message's "
                                "\"hand\", not from your own bookkeeping",
    Reason.ILLEGAL_NOT_A_SET: "the bot threw cards that are not a legal set (RULES.md, clause 3): arena_bot.legal_sets "
                              "lists exactly the sets you may throw",
    Reason.ILLEGAL_FIRST_TURN_DECLARE: "the bot declared on its first turn of a round, which the rules forbid: declare "
                                       "only when the turn's \"may_declare\" is true",
    Reason.ILLEGAL_DECLARE_OVER_MAX: "the bot declared when it may not: declare only when the turn's \"may_declare\" "
                                     "is true",
    Reason.ILLEGAL_TAKE_NOT_ON_FLOOR: "\"take\" must be \"deck\" or one of the turn's \"floor\" cards (not a card you "
                                      "just threw)",
}
INVALID_ADVICE = {
    Reason.INVALID_READY: 'answer hello with exactly {"type": "ready"} on one line',
    Reason.INVALID_LINE_TOO_LONG: "a reply line may be at most 64 KiB: send one short JSON object per reply",
}


def flush_how(language: str | None) -> str:
    """How to flush stdout, in the words of the bot's language when it is known."""
    return FLUSH_HOW.get((language or "").lower(), FLUSH_ANY)


READ_ALL_OR_FLUSH = ("the bot never answered hello: it must answer each line as it comes, so either it reads all of "
                     "stdin before answering (stdin stays open until the match ends: read line by line), or it wrote "
                     "its answer but did not flush stdout (")
"""The advice for a bot that answered nothing, when its source shows neither cause (a binary, say): both, in turn."""
NO_FLUSH = f"{READ_ALL_OR_FLUSH}{flush_how('python')})"
RUST_PANIC = 101
"""The exit status of a Rust program that panicked (Python's uncaught exception is 1, with a traceback)."""


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def explain(fault: Fault, stderr: str = "", lines: Sequence[str] = (), language: str | None = None,
            reads_all: bool = False, private: Sequence[str] = ()) -> list[str]:
    """Advice for a fault in plain words, chosen by its reason code and its facts (the line it sent, its exit
    status), the bot's stderr, and its last few lines on stdout (in a match). ``reads_all``: the bot's source seems
    to read stdin to its end (see :func:`reads_all_of_stdin`); ``private``: its files that the sandbox's user may
    not read or run (:func:`private_files`)."""
    reason, line = fault.reason, fault.line
    if reason is Reason.INVALID_CARD and line is not None and TEN_AS_10.search(line):
        return ["cards are rank+suit like TH, not 10H (ranks A23456789TJQK, suits CDHS)"]
    if reason is Reason.INVALID_UNSOLICITED:
        # A debug line just before a move is read as the reply, and the move itself is then the extra line:
        # the offending line alone would blame the move, the lines before it tell the story.
        if line is not None and _is_json(line) and all(_is_json(sent) for sent in lines):
            return ["the bot answered a message that wants no reply: only hello and turn get exactly one line each"]
        return [DEBUG_STDOUT]
    if reason in (Reason.INVALID_NOT_JSON, Reason.INVALID_NOT_UTF8):
        if line is not None and line.lstrip().startswith(("{", "[")):
            return ["a reply must be one JSON object on one line: do not pretty-print it (no indent)"]
        return [DEBUG_STDOUT]
    if reason in INVALID_ADVICE:
        return [INVALID_ADVICE[reason]]
    if fault.kind is FaultKind.INVALID:
        return [MOVE_SHAPE]
    if reason in ILLEGAL_ADVICE:
        return [ILLEGAL_ADVICE[reason]]
    if fault.kind is FaultKind.ILLEGAL:
        return [("the move broke a rule: the turn message's \"hand\", \"floor\" and \"may_declare\" say what is "
                 "allowed (RULES.md)")]
    if reason is Reason.TIMEOUT_HELLO:
        if line is not None:
            return ["the bot's answer to hello never ended with a newline: one JSON object per line, then flush"]
        if reads_all:  # its source reads stdin to the end: that, not flushing, is why nothing came
            return [READ_ALL]
        return [f"{READ_ALL_OR_FLUSH}{flush_how(language)})"]
    if reason is Reason.TIMEOUT_NOT_READING:
        return ["the bot stopped reading its stdin: read messages line by line until stdin closes"]
    if fault.kind is FaultKind.TIMEOUT:
        return [("no move arrived in time: a move may take move_ms plus what is left of the time bank. If the bot "
                 "did print its move, it did not flush stdout; if it was thinking, think less")]
    if fault.kind is FaultKind.CRASH:
        if fault.exit_status == RUST_PANIC:
            return [("exit status 101 is a Rust panic: the panic message, with the file and line, is in its stderr "
                     "below (RUST_BACKTRACE=1 in your own runs shows the stack)")]
        if "Traceback" in stderr or "Error:" in stderr or "    at " in stderr:
            return ["the bot crashed with an exception: the last lines of its stderr are below"]
        if private and (fault.exit_status in (126, 127) or "Permission denied" in stderr):
            return [(f"{', '.join(private)}: not readable (or not runnable) by the sandbox's user, which runs the "
                     f"bot as a uid of its own, not as you: chmod a+rX {' '.join(n.rstrip('/') for n in private)} "
                     "(every file of a bot must be world-readable, and what it runs world-executable)")]
        if fault.exit_status == 126 or "Permission denied" in stderr:
            return [("the command in bot.yaml is not executable: chmod +x the file it runs (and give it a #! line), "
                     "or run it through its interpreter (command: python3 bot.py)")]
        if fault.exit_status == 127 or "not found" in stderr or "No such file" in stderr:
            return ["the command in bot.yaml could not start: check the program name and the file it runs"]
        return ["the bot exited (or closed stdout) before the match ended: keep reading stdin until it closes"]
    return [f"the sandbox stopped the bot for using too much of a resource ({fault.detail})"]


def private_files(directory: Path, most: int = 5) -> list[str]:
    """The bot's files the sandbox's user cannot read (or run, where their owner can), and directories it cannot
    enter, at most ``most``: the bot runs as a uid of its own, so a mode-700 binary fails with "Permission
    denied" though its author can run it."""
    found: list[str] = []
    for current, dirs, names in bot_walk(directory):
        for name in (*dirs, *names):
            path = Path(current, name)
            mode = os.lstat(path).st_mode
            relative = path.relative_to(directory).as_posix()
            if stat.S_ISDIR(mode) and mode & 0o005 != 0o005:
                found.append(relative + "/")
            elif stat.S_ISREG(mode) and (not mode & stat.S_IROTH or mode & stat.S_IXUSR and not mode & stat.S_IXOTH):
                found.append(relative)
        if len(found) >= most:
            break
    return found[:most]


def reads_all_of_stdin(directory: Path) -> bool:
    """Whether a source file of the bot seems to read stdin to its end before answering (a heuristic: it only
    adds a hint to a bot that never answered hello)."""
    for path in sorted(directory.rglob("*"))[:MAX_FILES]:
        if path.is_file() and not path.is_symlink() and path.stat().st_size <= 1 << 20:
            try:
                if READS_ALL.search(path.read_text(encoding="utf-8", errors="replace")):
                    return True
            except OSError:
                continue
    return False


def language_of(spec: BotSpec) -> str | None:
    """The bot's language as its manifest says, else as its command suggests."""
    if spec.language:
        return spec.language
    program = Path(spec.command[0]).name if spec.command else ""
    guesses = {"python": "python", "node": "javascript", "java": "java"}
    return next((language for prefix, language in guesses.items() if program.startswith(prefix)), None)


def _tail(text: str, lines: int = STDERR_LINES) -> str:
    """Its first error and its last lines (a Node or Java bot puts the message first, Python last)."""
    return error_view(text, lines)


# -- the steps --------------------------------------------------------------------------------------------------

def _hello(spec: BotSpec, sandbox: Sandbox, limits: Limits) -> Step:
    """Start the bot and send hello; read what comes back byte by byte so a silent bot can be told apart from a
    bot that wrote half a line."""
    expected = f'{{"type": "ready"}} on one line within {limits.hello_ms} ms of hello'
    process: BotProcess = sandbox.launch(spec, SandboxLimits())
    stdout, stderr = bytearray(), bytearray()
    selector = selectors.DefaultSelector()
    try:
        for fd in process.read_fds():
            selector.register(fd, selectors.EVENT_READ)
        data = protocol.encode(protocol.hello(0, [spec.name, "opponent"], CHECK_RULES, limits))
        deadline = time.monotonic() + limits.hello_ms / 1000
        while data and time.monotonic() < deadline:
            try:
                data = data[process.write(data):]
            except BrokenPipeError:
                break
        while b"\n" not in stdout and time.monotonic() < deadline and selector.get_map():
            for key, _ in selector.select(max(0.0, deadline - time.monotonic())):
                for stream, chunk in process.read(key.fd):
                    if not chunk:
                        selector.unregister(key.fd)
                    elif stream == "stdout":
                        stdout += chunk[:CAPTURE_BYTES]
                    else:
                        stderr += chunk[-64 * 1024:]
        gone = not selector.get_map()  # both streams closed: the bot has exited
        grace = time.monotonic() + 0.5
        while gone and process.poll() is None and time.monotonic() < grace:
            time.sleep(0.01)
        exited = process.poll()
    finally:
        selector.close()
        process.kill()
    errors = stderr.decode(errors="replace")
    line, newline, _ = bytes(stdout).partition(b"\n")
    language = language_of(spec)
    if newline:
        try:
            protocol.parse_ready(line.rstrip(b"\r"))
        except protocol.InvalidReplyError as error:
            shown = line[:200].decode(errors="replace")
            reason: Reason = Reason.INVALID_READY if error.reason is Reason.INVALID_NOT_OBJECT else error.reason
            return Step("hello", False, expected, repr(shown),
                        explain(Fault(reason, str(error), 0, shown), errors, language=language), _tail(errors))
        return Step("hello", True, expected, line.decode(errors="replace"))
    if exited is not None and not stdout:
        got = f"nothing before the bot {'' if exited.returncode is not None else 'was '}{exited.describe()}"
        reason = limit_reason(exited.limit) if exited.limit else Reason.CRASH_EXIT
        fault = Fault(reason, got, 0, exit_status=exited.returncode, signal=exited.signal)
        return Step("hello", False, expected, got,
                    explain(fault, errors, language=language, private=private_files(spec.directory)), _tail(errors))
    got = (f"nothing within {limits.hello_ms} ms (0 bytes on stdout)" if not stdout else
           f"{len(stdout)} bytes with no newline: {bytes(stdout[:200]).decode(errors='replace')!r}")
    fault = Fault(Reason.TIMEOUT_HELLO, got, 0, bytes(stdout[:200]).decode(errors="replace") if stdout else None)
    return Step("hello", False, expected, got,
                explain(fault, errors, language=language, reads_all=reads_all_of_stdin(spec.directory)),
                _tail(errors))


PERSISTENT_ADVICE = ('It said "persistent": true in its ready, so it must answer match_end with {"type":"done"} '
                     "within a second and then wait for the next hello, without writing anything else "
                     '(protocol/PROTOCOL.md, "Several matches per process").')


def _match_step(name: str, seats: list[BotSpec], mine: list[int], sandbox: Sandbox, limits: Limits,
                seeds: list[int], live: LiveBots | None = None) -> Step:
    """Play one match per seed; the step fails on the first fault of any seat in ``mine`` (the checked bot). With
    ``live``, a bot that says ``persistent`` plays them all in one process (a lane per seat of ``mine``), and a
    process it did not end cleanly fails the step too."""
    expected = (f"{len(seeds)} whole match{'es' if len(seeds) > 1 else ''} to threshold {CHECK_RULES.threshold} "
                "with no fault" + (" (one process for all when it says persistent)" if live is not None else ""))
    played = []
    for index, seed in enumerate(seeds):
        order = seats if index % 2 == 0 else list(reversed(seats))
        ours = mine if index % 2 == 0 else [len(seats) - 1 - seat for seat in mine]
        lanes = [f"checked-{mine[ours.index(seat)]}" if seat in ours else None for seat in range(len(order))]
        with tempfile.TemporaryDirectory(prefix="arena-check-") as scratch:
            log = Path(scratch) / "check.jsonl.gz"
            retired = len(live.retired) if live is not None else 0
            result = play_match(order, seed, sandbox, CHECK_RULES, limits, log_path=log, live=live, lanes=lanes)
            if live is not None and len(live.retired) > retired:
                gone = live.retired[retired]
                return Step(name, False, expected, f"seed {seed}: after match_end: {gone.reason}: {gone.detail}",
                            [PERSISTENT_ADVICE])
            for seat in ours:
                player = result.players[seat]
                if player.fault is not None:
                    fault = player.fault
                    lines = _last_lines(log, seat)
                    got = f"seat {seat}, round {fault.round}: {fault.reason.value}: {fault.detail}"
                    if lines:
                        got += "; its last lines on stdout: " + " | ".join(repr(line[:120]) for line in lines)
                    return Step(name, False, expected, got,
                                explain(fault, player.stderr_tail, lines, language_of(order[seat]),
                                        private=private_files(order[seat].directory)),
                                _tail(player.stderr_tail))
        places = ", ".join(f"place {result.players[s].place} score {result.players[s].score}" for s in ours)
        played.append(f"seed {seed}: {counted(result.rounds, 'round')}, {counted(result.turns, 'turn')}, {places}")
    return Step(name, True, expected, "; ".join(played))


def _last_lines(log: Path, seat: int, count: int = 3) -> list[str]:
    """The last lines the bot in ``seat`` wrote on stdout, from the match's event log."""
    lines: list[str] = []
    try:
        for _, record in read_records(log):
            if record["t"] == "recv" and record.get("seat") == seat:
                lines = [*lines[-(count - 1):], str(record.get("line", ""))]
    except LogError:
        return []
    return lines


DEFAULT_LIMITS = Limits()


def check_bot(directory: str | Path, sandbox: str | Sandbox = "process", limits: Limits = DEFAULT_LIMITS,
              opponent: Path = SAMPLE_OPPONENT, build_limits: BuildLimits = DEFAULT_BUILD_LIMITS,
              built: Path | None = None) -> CheckReport:
    """Check the bot in ``directory``: manifest, files, its build if it has one, hello, a match against itself,
    matches against ``opponent``.

    ``built``: where to leave the built tree of a bot with a ``build:`` (a new path; the registry stores what is
    there when the check passes); by default a temporary directory, removed. Never raises for anything the bot
    does; an infrastructure failure becomes a failed step saying so.
    """
    started = time.monotonic()
    report = CheckReport(directory=str(directory), sandbox=sandbox if isinstance(sandbox, str) else sandbox.name)
    try:
        with ExitStack() as cleanup:
            if built is None:
                built = Path(cleanup.enter_context(tempfile.TemporaryDirectory(prefix="arena-build-"))) / "bot"
            _run_steps(report, Path(directory), sandbox, limits, opponent, build_limits, built)
    finally:
        report.seconds = time.monotonic() - started
    return report


def _build_step(spec: BotSpec, sandbox: Sandbox, limits: BuildLimits, target: Path) -> tuple[Step, BotSpec | None]:
    """Build the bot into ``target``; the step, and the built bot when it built."""
    assert spec.build is not None
    expected = f"`{' '.join(spec.build)}` exits 0 within {limits.describe()}"
    # Builds always run in the process backend: the compilers are the host's (docs/REGISTRY.md, "Compiled bots").
    result = run_build(spec, target, limits, sandbox if isinstance(sandbox, ProcessSandbox) else None)
    if not result.ok:
        advice = [("the build failed: its log (stdout and stderr together, last lines) is below; run the same "
                   "command in your bot's directory to see it all")]
        return Step("build", False, expected, result.reason, advice, result.log), None
    return Step("build", True, expected, result.reason, stderr_tail=result.log), load_bot(target)


def _run_steps(report: CheckReport, directory: Path, sandbox_: str | Sandbox, limits: Limits, opponent: Path,
               build_limits: BuildLimits, built: Path) -> None:
    steps = report.steps
    try:
        spec = load_bot(directory)
    except ManifestError as error:
        steps.append(Step("manifest", False, "a bot.yaml with a slug name and a command", str(error)))
        return
    report.bot, report.files_hash = spec.name, spec.files_hash
    steps.append(Step("manifest", True, "a bot.yaml with a slug name and a command",
                      f"name {spec.name}, command {' '.join(spec.command)}"))
    files_expected = f"at most {MAX_FILES} regular files, {MAX_TOTAL_BYTES >> 20} MiB, no links or special files"
    try:
        files = scan(spec.directory)
    except SubmissionRejected as error:
        steps.append(Step("files", False, files_expected, str(error)))
        return
    size = sum(entry.size for entry in files)
    left_out = has_ignored(spec.directory)
    steps.append(Step("files", True, files_expected, f"{len(files)} files, {size / 1024:.1f} KiB"
                      + ("" if left_out is None else f" ({IGNORE_FILE} and its defaults leave out {left_out} ...)")))
    if left_out is not None and spec.build is None:
        safe_copy(spec.directory, built, files)  # the bot plays as it would be stored: without what is left out
        spec = load_bot(built)
    remaining = ["build"] * (spec.build is not None) + ["hello", "self-play", "vs greedy"]
    try:
        sandbox = get_sandbox(sandbox_) if isinstance(sandbox_, str) else sandbox_
    except SandboxError as error:
        steps.append(Step("sandbox", False, f"the {sandbox_} sandbox", f"could not start it: {error}"))
        return
    try:
        if spec.build is not None:
            step, built_spec = _build_step(spec, sandbox, build_limits, built)
            steps.append(step)
            if built_spec is None:
                return
            remaining.pop(0)
            spec = built_spec
            report.files_hash = spec.files_hash  # what plays (and is stored) is the built tree
        steps.append(_hello(spec, sandbox, limits))
        if not steps[-1].ok:
            return
        remaining.pop(0)
        twin = dataclasses.replace(spec, name=f"{spec.name}-2" if len(spec.name) < 38 else "twin")
        steps.append(_match_step("self-play", [spec, twin], [0, 1], sandbox, limits, [1]))
        remaining.pop(0)
        if not steps[-1].ok:
            return
        if not (opponent / "bot.yaml").is_file():
            steps.append(Step("vs greedy", False, f"the sample bot at {opponent}", "it is missing (an install "
                              "without the sample bots?)"))
            return
        live = LiveBots()
        try:
            steps.append(_match_step("vs greedy", [spec, load_bot(opponent)], [0], sandbox, limits, [2, 3], live))
        finally:
            live.close()
        remaining.pop(0)
    except (InfrastructureError, SandboxError) as error:
        steps.append(Step(remaining[0], False, "the sandbox to run the bot",
                          f"infrastructure error (the host, not the bot): {error}"))
    finally:
        for name in remaining:
            if not any(step.name == name for step in steps):
                steps.append(Step(name, None, "", "skipped: an earlier step failed"))
        if isinstance(sandbox_, str):
            sandbox.close()


def format_report(report: CheckReport, colour: bool = False) -> list[str]:
    """The report as text: one line per step with ✓/✗, then what was expected and what arrived, advice and stderr."""

    def paint(text: str, ok: bool | None) -> str:
        if not colour:
            return text
        code = {True: "32", False: "31", None: "33"}[ok]
        return f"\033[{code}m{text}\033[0m"

    lines = [f"arena check {report.directory} ({report.sandbox} sandbox)"]
    for step in report.steps:
        mark = {True: "✓", False: "✗", None: "-"}[step.ok]
        lines.append(paint(f"{mark} {step.name}", step.ok) + (f": {step.got}" if step.ok else ""))
        if step.ok is False:
            lines.append(f"    expected: {step.expected}")
            lines.append(f"    got:      {step.got}")
            for advice in step.advice:
                lines.append(f"    why:      {advice}")
            if step.stderr_tail:
                lines.append(f"    {'build log' if step.name == 'build' else 'stderr'} (last lines):")
                lines.extend(f"      {line}" for line in step.stderr_tail.splitlines())
        elif step.ok is None:
            lines[-1] += f"  ({step.got})"
    verdict = "fit to enter a tournament" if report.fit else "NOT fit to enter a tournament"
    lines.append(paint(f"{report.bot or report.directory}: {verdict} ({report.seconds:.1f} s)", report.fit))
    return lines
