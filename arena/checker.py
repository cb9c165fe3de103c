"""``arena check``: is a bot fit to enter a tournament? Every step says what was expected, what arrived, and why.

:func:`check_bot` validates the manifest and the files, starts the bot in the sandbox and checks the ``hello``
handshake itself (so it knows exactly which bytes arrived), then plays short matches through the real referee:
the bot against a copy of itself, and against the sample bot ``greedy`` in both seats. Faults are turned into
plain-word advice from their actual details and the bot's stderr (:func:`explain`), because the person reading
them is a bot author who has not read the referee's code. ``arena submit`` runs the same check.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import selectors
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena import protocol
from arena.botfiles import MAX_FILES, MAX_TOTAL_BYTES, SubmissionRejected, scan
from arena.manifest import BotSpec, ManifestError, load_bot
from arena.matchlog import LogError, read_records
from arena.protocol import Limits
from arena.referee import InfrastructureError, play_match
from arena.resources import data_dir
from arena.rules import Rules
from arena.sandbox import BotProcess, Sandbox, SandboxError, SandboxLimits, get_sandbox

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
NO_FLUSH = ("the bot never answered hello; did you flush stdout after writing? (print(..., flush=True) in Python; "
            "arena_bot.run flushes for you)")


def _quoted_line(detail: str) -> str | None:
    """The reply the referee quoted in a fault detail, as the bot sent it, if there is one."""
    match = re.search(r"(?:\): |got |was |for: )('.*?'|\".*?\")(?= \.\.\. |;| \(|$)", detail)
    if not match:
        return None
    try:
        quoted = ast.literal_eval(match.group(1))  # the referee quotes with repr()
    except (ValueError, SyntaxError):
        return None
    return quoted if isinstance(quoted, str) else None


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def explain(kind: str, detail: str, stderr: str = "", received: bytes | None = None, at_hello: bool = False,
            lines: Sequence[str] = ()) -> list[str]:
    """Advice for a fault in plain words, from its kind, its detail, the bot's stderr, and what arrived: the bytes
    (at hello) or the bot's last few lines on stdout (in a match)."""
    advice: list[str] = []
    if TEN_AS_10.search(detail):
        advice.append("cards are rank+suit like TH, not 10H (ranks A23456789TJQK, suits CDHS)")
    if kind == "invalid":
        quoted = _quoted_line(detail)
        if "when no reply was asked for" in detail:
            # A debug line just before a move is read as the reply, and the move itself is then the extra line:
            # the quoted line alone would blame the move, the lines before it tell the story.
            if any(not _is_json(line) for line in lines):
                advice.append(DEBUG_STDOUT)
            elif quoted is not None and _is_json(quoted):
                advice.append("the bot answered a message that wants no reply: only hello and turn get exactly one "
                              "line each")
            else:
                advice.append(DEBUG_STDOUT)
        elif detail.startswith(("not JSON", "not UTF-8")):
            if quoted is not None and quoted.lstrip().startswith(("{", "[")):
                advice.append("a reply must be one JSON object on one line: do not pretty-print it (no indent)")
            else:
                advice.append(DEBUG_STDOUT)
        elif "in answer to hello" in detail:
            advice.append('answer hello with exactly {"type": "ready"} on one line')
        elif "longer than" in detail:
            advice.append("a reply line may be at most 64 KiB: send one short JSON object per reply")
        elif not advice:
            advice.append('a move is {"type": "play", "discard": [cards], "take": "deck" or a floor card} or '
                          '{"type": "declare"}: see PROTOCOL.md, "Replies"')
    elif kind == "illegal":
        if "not in hand" in detail:
            advice.append("the bot threw a card that is not in its hand: take the cards from the turn message's "
                          "\"hand\", not from your own bookkeeping")
        if "is not a set" in detail:
            advice.append("the bot threw cards that are not a legal set (RULES.md, clause 3): arena_bot.legal_sets "
                          "lists exactly the sets you may throw")
        if "first turn" in detail:
            advice.append("the bot declared on its first turn of a round, which the rules forbid: declare only when "
                          "the turn's \"may_declare\" is true")
        elif "may not declare" in detail:
            advice.append("the bot declared when it may not: declare only when the turn's \"may_declare\" is true")
        if "not on the floor" in detail:
            advice.append("\"take\" must be \"deck\" or one of the turn's \"floor\" cards (not a card you just threw)")
    elif kind == "timeout":
        if at_hello and not received:
            advice.append(NO_FLUSH)
        elif at_hello:
            advice.append("the bot's answer to hello never ended with a newline: one JSON object per line, "
                          "then flush")
        elif "not reading its input" in detail:
            advice.append("the bot stopped reading its stdin: read messages line by line until stdin closes")
        else:
            advice.append("no move arrived in time: a move may take move_ms plus what is left of the time bank. If "
                          "the bot did print its move, it did not flush stdout; if it was thinking, think less")
    elif kind == "crash":
        if "Traceback" in stderr or "Error:" in stderr or "    at " in stderr:
            advice.append("the bot crashed with an exception: the last lines of its stderr are below")
        elif "status 127" in detail or "not found" in stderr or "No such file" in stderr:
            advice.append("the command in bot.yaml could not start: check the program name and the file it runs")
        else:
            advice.append("the bot exited (or closed stdout) before the match ended: keep reading stdin until it "
                          "closes")
    elif kind == "limit":
        advice.append(f"the sandbox stopped the bot for using too much of a resource ({detail})")
    return advice


def _tail(text: str, lines: int = STDERR_LINES) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


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
    if newline:
        try:
            protocol.parse_ready(line.rstrip(b"\r"))
        except protocol.InvalidReplyError as error:
            return Step("hello", False, expected, f"{line[:200].decode(errors='replace')!r}",
                        explain("invalid", str(error), errors, bytes(stdout), at_hello=True), _tail(errors))
        return Step("hello", True, expected, line.decode(errors="replace"))
    if exited is not None and not stdout:
        got = f"nothing: the bot {exited.describe()} before answering"
        return Step("hello", False, expected, got, explain("crash", got, errors), _tail(errors))
    got = (f"nothing within {limits.hello_ms} ms (0 bytes on stdout)" if not stdout else
           f"{len(stdout)} bytes with no newline: {bytes(stdout[:200]).decode(errors='replace')!r}")
    return Step("hello", False, expected, got, explain("timeout", got, errors, bytes(stdout), at_hello=True),
                _tail(errors))


def _match_step(name: str, seats: list[BotSpec], mine: list[int], sandbox: Sandbox, limits: Limits,
                seeds: list[int]) -> Step:
    """Play one match per seed; the step fails on the first fault of any seat in ``mine`` (the checked bot)."""
    expected = (f"{len(seeds)} whole match{'es' if len(seeds) > 1 else ''} to threshold {CHECK_RULES.threshold} "
                "with no fault")
    played = []
    for index, seed in enumerate(seeds):
        order = seats if index % 2 == 0 else list(reversed(seats))
        ours = mine if index % 2 == 0 else [len(seats) - 1 - seat for seat in mine]
        with tempfile.TemporaryDirectory(prefix="arena-check-") as scratch:
            log = Path(scratch) / "check.jsonl.gz"
            result = play_match(order, seed, sandbox, CHECK_RULES, limits, log_path=log)
            for seat in ours:
                player = result.players[seat]
                if player.fault is not None:
                    fault = player.fault
                    lines = _last_lines(log, seat)
                    got = f"seat {seat}, round {fault.round}: {fault.kind.value}: {fault.detail}"
                    if lines:
                        got += "; its last lines on stdout: " + " | ".join(repr(line[:120]) for line in lines)
                    return Step(name, False, expected, got,
                                explain(fault.kind.value, fault.detail, fault.stderr_tail, lines=lines),
                                _tail(fault.stderr_tail))
        places = ", ".join(f"place {result.players[s].place} score {result.players[s].score}" for s in ours)
        played.append(f"seed {seed}: {result.rounds} rounds, {result.turns} turns, {places}")
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
              opponent: Path = SAMPLE_OPPONENT) -> CheckReport:
    """Check the bot in ``directory``: manifest, files, hello, a match against itself, matches against ``opponent``.

    Never raises for anything the bot does; an infrastructure failure becomes a failed step saying so.
    """
    started = time.monotonic()
    report = CheckReport(directory=str(directory), sandbox=sandbox if isinstance(sandbox, str) else sandbox.name)
    try:
        _run_steps(report, Path(directory), sandbox, limits, opponent)
    finally:
        report.seconds = time.monotonic() - started
    return report


def _run_steps(report: CheckReport, directory: Path, sandbox_: str | Sandbox, limits: Limits, opponent: Path) -> None:
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
    steps.append(Step("files", True, files_expected, f"{len(files)} files, {size / 1024:.1f} KiB"))
    remaining = ["hello", "self-play", "vs greedy"]
    try:
        sandbox = get_sandbox(sandbox_) if isinstance(sandbox_, str) else sandbox_
    except SandboxError as error:
        steps.append(Step("sandbox", False, f"the {sandbox_} sandbox", f"could not start it: {error}"))
        return
    try:
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
        steps.append(_match_step("vs greedy", [spec, load_bot(opponent)], [0], sandbox, limits, [2, 3]))
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
                lines.append("    stderr (last lines):")
                lines.extend(f"      {line}" for line in step.stderr_tail.splitlines())
        elif step.ok is None:
            lines[-1] += f"  ({step.got})"
    verdict = "fit to enter a tournament" if report.fit else "NOT fit to enter a tournament"
    lines.append(paint(f"{report.bot or report.directory}: {verdict} ({report.seconds:.1f} s)", report.fit))
    return lines
