"""The ``arena`` command line: thin click commands over library functions that the tests call too.

stdout carries the product (tables, JSON); stderr carries chatter and errors. Exit codes: 0 success, 1 the thing
asked for failed (an infrastructure error, a replay that does not verify), 2 usage or input errors.
"""

from __future__ import annotations

import json
import platform
import sys
import time
from enum import IntEnum
from pathlib import Path
from typing import Any, NoReturn

import click
import yaml

from arena import __version__
from arena.manifest import BotSpec, ManifestError, load_bot
from arena.matchlog import LogError, describe, load, verify
from arena.protocol import Limits
from arena.referee import InfrastructureError, MatchResult, play_match
from arena.rules import Rules, RulesError
from arena.sandbox import SandboxError, get_sandbox

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 110}


class ExitCode(IntEnum):
    OK = 0
    FAILED = 1
    USAGE = 2


def fail(message: str, code: ExitCode = ExitCode.USAGE) -> NoReturn:
    click.secho(f"arena: {message}", err=True, fg="red" if sys.stderr.isatty() else None)
    sys.exit(code)


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=False))


@click.group(context_settings=CONTEXT)
@click.version_option(__version__, "-V", "--version", message=f"arena %(version)s (Python {platform.python_version()})")
def main() -> None:
    """Run tournaments between bots that play the card game Least Score."""


def load_rules(rules_file: Path | None, threshold: int | None) -> Rules:
    options: dict[str, Any] = {}
    if rules_file is not None:
        try:
            loaded = yaml.safe_load(rules_file.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError, UnicodeDecodeError) as error:
            fail(f"{rules_file}: cannot read rules: {error}")
        if not isinstance(loaded, dict):
            fail(f"{rules_file}: expected a mapping of rule options, got {type(loaded).__name__}")
        options.update(loaded)
    if threshold is not None:
        options["threshold"] = threshold
    try:
        return Rules.from_dict(options)
    except RulesError as error:
        fail(f"{rules_file or '--threshold'}: {error}")


@main.command()
@click.argument("bot_dirs", nargs=-1, required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--seed", type=int, default=1, show_default=True, help="Deal seed; the same seed gives the same match.")
@click.option("--threshold", type=int, help="Elimination threshold (shortcut for the rule option).")
@click.option("--rules", "rules_file", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="YAML file of rule options (see protocol/RULES.md).")
@click.option("--log", "log_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Event log to write (default: results/logs/match-SEED-TIME.jsonl.gz).")
@click.option("--move-ms", type=click.IntRange(1), default=Limits.move_ms, show_default=True)
@click.option("--bank-ms", type=click.IntRange(0), default=Limits.bank_ms, show_default=True)
@click.option("--hello-ms", type=click.IntRange(1), default=Limits.hello_ms, show_default=True)
@click.option("--sandbox", "sandbox_name", type=click.Choice(["process"]), default="process", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
def match(bot_dirs: tuple[Path, ...], seed: int, threshold: int | None, rules_file: Path | None,
          log_path: Path | None, move_ms: int, bank_ms: int, hello_ms: int, sandbox_name: str,
          as_json: bool) -> None:
    """Play one match between the bots in BOT_DIRS (2 to 8; seat order as given)."""
    if not 2 <= len(bot_dirs) <= 8:
        raise click.UsageError(f"a match needs 2 to 8 bot directories, got {len(bot_dirs)}")
    rules = load_rules(rules_file, threshold)
    bots: list[BotSpec] = []
    for directory in bot_dirs:
        try:
            bots.append(load_bot(directory))
        except ManifestError as error:
            fail(str(error))
    if log_path is None:
        log_path = Path("results/logs") / f"match-{seed}-{time.strftime('%Y%m%d-%H%M%S')}.jsonl.gz"
    try:
        sandbox = get_sandbox(sandbox_name)
        result = play_match(bots, seed, sandbox, rules, Limits(hello_ms, move_ms, bank_ms), log_path=log_path)
    except (InfrastructureError, SandboxError) as error:
        fail(f"infrastructure error, match not played: {error}", ExitCode.FAILED)
    if as_json:
        emit_json(result.to_dict())
    else:
        print_result(result)


def print_result(result: MatchResult) -> None:
    click.echo(f"seed {result.seed}: {result.rounds} rounds, {result.turns} turns, {result.termination}, "
               f"{result.duration_s:.1f} s")
    click.echo(f"{'place':>5}  {'seat':>4}  {'bot':<20} {'score':>5}  fault")
    for player in sorted(result.players, key=lambda p: (p.place, p.seat)):
        fault = "" if player.fault is None else f"{player.fault.kind.value}: {player.fault.detail}"
        click.echo(f"{player.place:>5}  {player.seat:>4}  {player.name:<20} {player.score:>5}  {fault}")
    if result.log_path is not None:
        click.echo(f"log: {result.log_path}   (arena replay {result.log_path})")


@main.command()
@click.argument("log_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--verify", "check", is_flag=True,
              help="Re-run the engine from the seed and recorded moves; exit 1 on any mismatch.")
@click.option("--json", "as_json", is_flag=True, help="With --verify: print the verdict as JSON.")
def replay(log_file: Path, check: bool, as_json: bool) -> None:
    """Print a match from its event log turn by turn, or verify it against the engine."""
    try:
        log = load(log_file)
    except LogError as error:
        fail(str(error))
    if not check:
        for line in describe(log):
            click.echo(line)
        return
    problems = verify(log)
    if as_json:
        emit_json({"log": str(log_file), "ok": not problems, "problems": problems, "events": len(log.events)})
    elif problems:
        for problem in problems:
            click.echo(f"MISMATCH: {problem}", err=True)
    else:
        click.echo(f"ok: {len(log.events)} events replay to the recorded outcome")
    sys.exit(ExitCode.FAILED if problems else ExitCode.OK)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def doctor(as_json: bool) -> None:
    """Say what this host can guarantee about untrusted bots (see docs/SECURITY.md)."""
    from arena.sandbox.doctor import checks, sandbox_guarantees

    found = checks()
    guarantees = sandbox_guarantees()
    if as_json:
        emit_json({"checks": [check.to_dict() for check in found],
                   "process_sandbox": {key: {"ok": ok, "reason": reason} for key, (ok, reason) in guarantees.items()}})
        return
    width = max(len(check.name) for check in found)
    for check in found:
        click.echo(f"{check.name:<{width}}  {'yes' if check.ok else 'no ':<3}  {check.reason}")
    click.echo("\nThe process sandbox on this host guarantees:")
    width = max(len(key) for key in guarantees)
    for key, (ok, reason) in guarantees.items():
        click.echo(f"  {key:<{width}}  {'yes' if ok else 'no ':<3}  {reason}")
    if not all(ok for ok, _ in guarantees.values()):
        click.echo("\nNot every guarantee holds: run only trusted bots here (docs/SECURITY.md).")
