"""The bot author's commands: ``arena new-bot``, ``arena check``, ``arena submit`` and ``arena bots``.

Thin click commands over :mod:`arena.bots.scaffold`, :mod:`arena.registry.check` and :mod:`arena.registry.versions`, registered on the
main group in ``arena/cli/main.py`` (kept apart from ``arena/cli/main.py`` so that file stays small). Exit codes as everywhere:
0 done (the bot is fit, stored, or unchanged), 1 the bot failed the check (or the host failed), 2 bad input
(a bad manifest, a name, a directory or files we refuse).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from arena.bots.files import SubmissionRejected
from arena.bots.manifest import ManifestError
from arena.bots.scaffold import LANGUAGES, scaffold
from arena.cli.common import BOT_DIR, ExitCode, colour, db_option, emit_json, fail, info, json_option, sandbox_choice
from arena.registry.build import DEFAULT_BUILD_LIMITS, BuildLimits
from arena.registry.check import CheckReport, check_bot, format_report
from arena.registry.versions import Registry, RegistryError, default_registry


def _registry(registry: Path | None, db_path: Path) -> Registry:
    return Registry(registry if registry is not None else default_registry(db_path))


registry_option = click.option("--registry", "registry_dir", type=click.Path(file_okay=False, path_type=Path),
                               help="The bot registry (default: bots/ beside the store, results/bots).")
registry_db_option = db_option("The results store; the default registry is bots/ beside it.")


def build_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--build-seconds and --build-memory-mb: the limits of a bot's build: command (docs/REGISTRY.md)."""
    command = click.option("--build-memory-mb", type=click.IntRange(64, 16384),
                           default=DEFAULT_BUILD_LIMITS.memory_mb, show_default=True,
                           help="Memory the bot's build: command may use.")(command)
    return click.option("--build-seconds", type=click.FloatRange(1, 3600), default=DEFAULT_BUILD_LIMITS.seconds,
                        show_default=True, help="Wall time the bot's build: command may take.")(command)


def _build_limits(seconds: float, memory_mb: int) -> BuildLimits:
    return BuildLimits(seconds=seconds, memory_mb=memory_mb)


@click.command("new-bot")
@click.argument("name")
@click.option("--language", type=click.Choice(LANGUAGES), default="python", show_default=True)
@click.option("--dir", "directory", type=click.Path(path_type=Path),
              help="The bot directory to create (default: ./NAME); it must not exist or be empty.")
def new_bot(name: str, language: str, directory: Path | None) -> None:
    """Create a new bot called NAME: a manifest, a minimal correct bot and a README on how to iterate."""
    try:
        created = scaffold(name, language, directory)
    except OSError as error:
        fail(str(error))
    click.echo(f"created {language} bot {name!r} in {created}")
    click.echo(f"next: edit it, then  arena check {created}  and  arena submit {created}  (see {created}/README.md)")


@click.command()
@click.argument("bot_dir", **BOT_DIR)
@click.option("--sandbox", "sandbox_name", type=sandbox_choice(), default="process", show_default=True)
@build_options
@json_option()
def check(bot_dir: Path, sandbox_name: str, build_seconds: float, build_memory_mb: int, as_json: bool) -> None:
    """Check that the bot in BOT_DIR is fit to enter a tournament: its manifest, its files, its build (a build:
    command runs in a scratch copy, as arena submit would run it), the hello handshake, a match against itself and
    matches against the sample bot greedy. Exit 0 fit, 1 not fit (or the build failed), 2 bad manifest."""
    report = check_bot(bot_dir, sandbox_name, build_limits=_build_limits(build_seconds, build_memory_mb))
    if as_json:
        emit_json(report.to_dict())
    else:
        for line in format_report(report, colour=colour()):
            click.echo(line)
    sys.exit(report.exit_code)


@click.command()
@click.argument("bot_dir", type=click.Path(path_type=Path))
@registry_option
@registry_db_option
@click.option("--sandbox", "sandbox_name", type=sandbox_choice(), default="process", show_default=True)
@click.option("--server", help="Upload to the league server at this URL instead (docs/SERVER.md).")
@click.option("--token", envvar="ARENA_TOKEN", help="Your API token for --server (default: $ARENA_TOKEN).")
@build_options
@json_option()
def submit(bot_dir: Path, registry_dir: Path | None, db_path: Path, sandbox_name: str, server: str | None,
           token: str | None, build_seconds: float, build_memory_mb: int, as_json: bool) -> None:
    """Check the bot in BOT_DIR and store an immutable copy of it in the registry as its next version; with
    --server, upload it to a league server, which does the same there (with its own build limits). A bot with
    a build: command is built in a scratch copy and the built tree is stored; a failed build stores nothing."""
    if server is not None:
        from arena.cli.server import submit_remote

        submit_remote(bot_dir, server, token, as_json)
    registry = _registry(registry_dir, db_path)
    if not registry.root.exists():
        # A submit from another directory would otherwise start a second registry there without a word.
        click.secho(f"arena: no registry at {registry.root} yet: this submission starts a new one (pass --db or "
                    "--registry to use an existing one)", err=True, fg="yellow")
    try:
        limits = _build_limits(build_seconds, build_memory_mb)
        result = registry.submit(bot_dir, lambda copy, built: _check_copy(copy, built, bot_dir, sandbox_name, limits))
    except (ManifestError, SubmissionRejected) as error:
        fail(f"rejected, nothing stored: {error}")
    except (RegistryError, OSError) as error:
        fail(f"{registry.root}: {error}", ExitCode.FAILED)
    if as_json:
        emit_json(result.to_dict() | {"registry": str(registry.root)})
    else:
        if result.report is not None:
            for line in format_report(result.report, colour=colour()):
                click.echo(line)
        if result.status == "stored":
            click.echo(f"stored {result.name} version {result.version} ({result.files_hash[:12]}) in "
                       f"{result.directory}; tournament configs name it registry:{result.name} (latest) or "
                       f"registry:{result.name}@{result.version}")
        elif result.status == "unchanged":
            click.echo(f"{result.name}: {result.reason} (registry {registry.root})")
        else:
            click.echo(f"rejected, nothing stored: {result.reason}")
    sys.exit(1 if result.status == "rejected" else 0)


def _check_copy(copy: Path, built: Path, original: Path, sandbox_name: str, limits: BuildLimits) -> CheckReport:
    """Check the registry's copy (what gets stored), but report it under the name the author typed."""
    report = check_bot(copy, sandbox_name, build_limits=limits, built=built)
    report.directory = str(original)
    return report


@click.command()
@registry_option
@registry_db_option
@json_option()
def bots(registry_dir: Path | None, db_path: Path, as_json: bool) -> None:
    """List the registry: every bot, its versions, and the latest version's check."""
    registry = _registry(registry_dir, db_path)
    listing = [(name, registry.versions(name)) for name in registry.names()]
    if as_json:
        emit_json({"registry": str(registry.root),
               "bots": [{"name": name, "latest": versions[-1].version,
                         "versions": [v.to_dict() for v in versions]} for name, versions in listing]})
        return
    if not listing:
        info(f"{registry.root}: no bots yet (arena submit BOT_DIR adds one)")
        return
    click.echo(f"{'bot':<24} {'versions':>8} {'latest':>6}  {'hash':<12}  {'submitted':<20}  check")
    for name, versions in listing:
        latest = versions[-1]
        status = "fit" if latest.fit else "not fit"
        click.echo(f"{name:<24} {len(versions):>8} {latest.version:>6}  {latest.files_hash[:12]:<12}  "
                   f"{latest.submitted_at:<20}  {status}")


COMMANDS = (new_bot, check, submit, bots)
