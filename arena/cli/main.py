"""The ``arena`` command line: thin click commands over library functions that the tests call too.

stdout carries the product (tables, JSON); stderr carries chatter and errors. Exit codes: 0 success, 1 the thing
asked for failed (an infrastructure error, a replay that does not verify), 2 usage or input errors.

This module is only the root group: each subcommand lives in a module of ``arena.cli`` that is imported when that command
runs, so ``arena --help`` and ``arena standings`` do not load the referee, the site, the server, Dask or docker
(bench/cli.py measures it; tests/cli/test_cli_lazy.py checks what ``arena --help`` imports).
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import platform
import re
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from arena import __version__
from arena.cli.common import (
    CONTEXT,
    EMITTED_KEY,
    JSON_KEY,
    VERBOSITY_KEY,
    CommandError,
    ExitCode,
    interrupted_while_loading,
)

COMMANDS: dict[str, tuple[str, str, str]] = {
    "match": ("arena.cli.play", "match", ("Play one match between the bots in BOT_DIRS (2 to 8; seat order as given), "
              "or a series with --games.")),
    "play": ("arena.cli.person", "play",
             ("Play a match yourself against BOTS (default: sample:planner sample:greedy; 1 to 7 bots: a directory or "
              "sample:NAME), with the same referee, rules and sandbox as any match.")),
    "replay": ("arena.cli.play", "replay",
               "Print a match from its event log turn by turn, or verify it against the engine."),
    "doctor": ("arena.cli.play", "doctor",
               "Say what this host can guarantee about untrusted bots (see docs/SECURITY.md)."),
    "run": ("arena.cli.play", "run",
            "Play the tournament in CONFIG_FILE, resuming it if it was interrupted, and print the standings."),
    "standings": ("arena.cli.results", "standings",
                  ("The standings of tournament NAME (default: the latest), strongest first by a Plackett-Luce fit of "
                  "every match's places, each bot's rank shown as the 95% interval of the ranks it could truly hold "
                  "(docs/RATINGS.md).")),
    "matches": ("arena.cli.results", "matches", "The matches of tournament NAME (default: the latest)."),
    "show": ("arena.cli.results", "show",
             "One match: places, scores, faults with details, the bots' stderr, and the replay command."),
    "sandbox": ("arena.cli.sandbox", "sandbox_group", "Prepare this host's sandbox backends."),
    "site": ("arena.cli.site", "site_group",
             "The results site: static HTML standings, bots, matches and replays, readable from disk or any host."),
    "init": ("arena.cli.starter", "init",
             ("Write a commented tournament config (or with league, a league server config) into DIRECTORY (default: "
              "here) that runs as it is: arena run tournament.yaml, or arena serve league.yaml.")),
    "new-bot": ("arena.cli.bots", "new_bot",
                "Create a new bot called NAME: a manifest, a minimal correct bot and a README on how to iterate."),
    "check": ("arena.cli.bots", "check",
              ("Check that the bot in BOT_DIR is fit to enter a tournament: its manifest, its files, its build (a "
              "build: command runs in a scratch copy, as arena submit would run it), the hello handshake, a match "
              "against itself and matches against the sample bot greedy.")),
    "submit": ("arena.cli.bots", "submit",
               ("Check the bot in BOT_DIR and store an immutable copy of it in the registry as its next version; with "
               "--server, upload it to a league server, which does the same there (with its own build limits).")),
    "bots": ("arena.cli.bots", "bots",
             "List the registry: every bot, its versions, and the latest version's check."),
    "serve": ("arena.cli.server", "serve",
              ("Run the league server for the league: config in CONFIG_FILE: take submissions over HTTP, play the "
              "league continuously, serve the live standings and the results site.")),
    "watch": ("arena.cli.watch", "watch",
              ("Follow a match of tournament NAME (default: the latest) while it is played, by arena run --live or a "
               "league: each move as the players were told it, until the match ends.")),
    "author": ("arena.cli.server", "author_group",
               "The league's authors and their API tokens (the organiser's side; the server need not be stopped)."),
    "league": ("arena.cli.server", "league_group", "Leagues in the store (run by arena serve)."),
    "test": ("arena.cli.abtest", "ab_test",
             ("Is NEW better than BASE? They play the same deals from the same seats with the same opponents, and a "
              "sequential test (the exact GSPRT, as chess engine testers run) on BASE's mean place minus NEW's "
              "stops as soon as it can say \"better\" or \"not better\" at the error rates asked (docs/RATINGS.md).")),
}
"""Every subcommand, registered here and nowhere else: its name, ``(module, attribute, short help)``. The short help
is the command's own (tests/cli/test_cli_lazy.py holds them equal), kept here so that ``arena --help`` lists every
command without importing one."""


class _Main(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, attribute, _ = COMMANDS[cmd_name]
        try:
            loaded = importlib.import_module(module)
        except KeyboardInterrupt:
            # A stop while the command's modules load (a second or more on a busy host) has nothing to clean up
            # yet: the same quiet exit as arena/__main__.py's while the root loads, not click's "Aborted!".
            interrupted_while_loading()
        command = getattr(loaded, attribute)
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # click's own listing would import every command for its short help: the same rows, from COMMANDS.
        limit = formatter.width - 6 - max(map(len, COMMANDS))
        rows = [(name, click.Command(name, help=COMMANDS[name][2]).get_short_help_str(limit))
                for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except KeyboardInterrupt:
            interrupted_while_loading()  # while the arguments are read: nothing begun, not click's "Aborted!"

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # --json is known before the command's own options are parsed, so that a usage error is JSON too.
        given = args[:args.index("--")] if "--" in args else args
        ctx.meta[JSON_KEY] = "--json" in given
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        # Every error of every command ends here, once: a domain error becomes its exit code (MAPPED), a damaged store
        # or a full disk one plain line, and a stop (Ctrl-C, or SIGTERM: arena/__main__.py) outside a command's own
        # handling one plain line too, not click's "Aborted!": what a command stores, it stores as it goes.
        try:
            return super().invoke(ctx)
        except CommandError as error:
            report(ctx, error)
        except click.ClickException as error:  # a usage error: click's own text, or under --json its object
            if not ctx.meta.get(JSON_KEY):
                raise
            report(ctx, CommandError(error.format_message(), ExitCode(error.exit_code)))
        except KeyboardInterrupt:
            report(ctx, CommandError("interrupted", ExitCode.FAILED))
        except OSError as error:
            full = disk_full(error)
            if full is None:
                raise
            report(ctx, CommandError(full, ExitCode.FAILED))
        except Exception as error:
            code = exit_code_of(error)
            if code is None:
                raise
            report(ctx, CommandError(str(error), code))


MAPPED: tuple[tuple[str, str, ExitCode], ...] = (
    ("arena.run.config", "ConfigError", ExitCode.USAGE),
    ("arena.run.plan", "TournamentError", ExitCode.USAGE),
    ("arena.run.league", "LeagueError", ExitCode.USAGE),
    ("arena.bots.manifest", "ManifestError", ExitCode.USAGE),
    ("arena.bots.files", "SubmissionRejected", ExitCode.USAGE),
    ("arena.bots.scaffold", "ScaffoldError", ExitCode.USAGE),
    ("arena.run.starter", "InitError", ExitCode.USAGE),
    ("arena.resources", "NoSuchSample", ExitCode.USAGE),
    ("arena.game.rules", "RulesError", ExitCode.USAGE),
    ("arena.match.matchlog", "LogError", ExitCode.USAGE),
    ("arena.server.authors", "AuthorError", ExitCode.USAGE),
    ("arena.registry.build", "BuildFailed", ExitCode.FAILED),
    ("arena.registry.versions", "RegistryError", ExitCode.FAILED),
    ("arena.registry.client", "ServerURLError", ExitCode.USAGE),  # before its base class: the first match counts
    ("arena.registry.client", "UploadError", ExitCode.FAILED),
    ("arena.sandbox", "SandboxError", ExitCode.FAILED),
    ("arena.match.referee", "InfrastructureError", ExitCode.FAILED),
    ("arena.run.cluster", "ClusterError", ExitCode.FAILED),
)
"""The domain errors a command lets through and the exit code each means: bad input (2), or the thing asked for
failed (1). A class is looked up only in a loaded module (a command that raised one loaded it), so that this table
imports nothing; the store's errors carry their own code (a lease held by another runner is 1, a damaged file 2)."""


def exit_code_of(error: Exception) -> ExitCode | None:
    """``error``'s exit code, or None for an error no command expects (a bug: its traceback shows)."""
    store = sys.modules.get("arena.store.connection")
    if store is not None and isinstance(error, store.StoreError):
        return ExitCode(error.exit_code)
    for module, name, code in MAPPED:
        loaded = sys.modules.get(module)
        if loaded is not None and isinstance(error, getattr(loaded, name)):
            return code
    return None


def disk_full(error: OSError) -> str | None:
    """A full disk as its one line, or None for any other OSError."""
    from arena.store import disk_full as full

    found = full(error, "the disk being written to")
    return None if found is None else str(found)


_WHERE = re.compile(r"(?P<file>[^\s:][^:\n]*?): (?:field )?(?:(?P<field>[A-Za-z_][\w.\[\]-]*): )?")


def error_object(message: str, code: int) -> dict[str, Any]:
    """An error under ``--json``: the message, the exit code and, when the message starts with them, the file and the
    field it names (every error of a config or a manifest does: "FILE: FIELD: what was expected")."""
    where = _WHERE.match(message)
    file = field = None
    if where is not None and ("/" in where["file"] or Path(where["file"]).suffix in FILE_SUFFIXES):
        file, field = where["file"], where["field"]
    return {"error": message, "exit_code": code, "file": file, "field": field}


FILE_SUFFIXES = (".yaml", ".yml", ".db", ".gz", ".jsonl", ".json", ".zip", ".tar")


def report(ctx: click.Context, error: CommandError) -> NoReturn:
    """Say ``error`` once and exit with its code: under ``--json`` a JSON object on stdout, unless the command already
    printed its JSON product there (stdout stays one document; the error goes to stderr)."""
    if ctx.meta.get(JSON_KEY) and not ctx.meta.get(EMITTED_KEY):
        click.echo(json.dumps(error_object(error.message, error.exit_code), indent=2))
    else:
        error.show()
    ctx.exit(error.exit_code)


@click.group(cls=_Main, context_settings=CONTEXT)
@click.version_option(__version__, "-V", "--version", message=f"arena %(version)s (Python {platform.python_version()})")
@click.option("-v", "--verbose", count=True,
              help="Also print arena's log lines on stderr: -v at INFO (a bot entering a league), -vv at DEBUG.")
@click.option("-q", "--quiet", is_flag=True,
              help="No progress bars and no info lines on stderr (where results went, what to run next); errors, "
                   "warnings and the product on stdout stay.")
@click.pass_context
def main(ctx: click.Context, verbose: int, quiet: bool) -> None:
    """Run tournaments between bots that play the card game Least Score.

    Colour only on a terminal, and never when NO_COLOR is set. Shell completion: eval "$(_ARENA_COMPLETE=bash_source
    arena)" in ~/.bashrc (zsh_source, fish_source for the others; docs/CLI.md)."""
    if quiet and verbose:
        raise click.UsageError("-q and -v cannot go together")
    ctx.meta[VERBOSITY_KEY] = -1 if quiet else verbose
    if os.environ.get("NO_COLOR"):
        ctx.color = False  # click strips the colour of every secho under this context
    if verbose:
        logging.basicConfig(level=logging.DEBUG if verbose > 1 else logging.INFO,
                            format="arena: %(name)s: %(levelname)s: %(message)s")
