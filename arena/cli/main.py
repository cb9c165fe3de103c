"""The ``arena`` command line: thin click commands over library functions that the tests call too.

stdout carries the product (tables, JSON); stderr carries chatter and errors. Exit codes: 0 success, 1 the thing
asked for failed (an infrastructure error, a replay that does not verify), 2 usage or input errors.

This module is only the root group: each subcommand lives in a module of ``arena.cli`` that is imported when that command
runs, so ``arena --help`` and ``arena standings`` do not load the referee, the site, the server, Dask or docker
(bench/cli.py measures it; tests/test_cli_lazy.py checks what ``arena --help`` imports).
"""

from __future__ import annotations

import importlib
import platform
import sys
from typing import Any

import click

from arena import __version__
from arena.cli.common import CONTEXT, ExitCode, fail, interrupted_while_loading

COMMANDS: dict[str, tuple[str, str, str]] = {
    "match": ("arena.cli.play", "match", ("Play one match between the bots in BOT_DIRS (2 to 8; seat order as given), "
              "or a series with --games.")),
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
    "author": ("arena.cli.server", "author_group",
               "The league's authors and their API tokens (the organiser's side; the server need not be stopped)."),
    "league": ("arena.cli.server", "league_group", "Leagues in the store (run by arena serve)."),
    "test": ("arena.cli.abtest", "ab_test",
             ("Is NEW better than BASE? They play the same deals from the same seats with the same opponents, and a "
              "sequential test (the exact GSPRT, as chess engine testers run) on BASE's mean place minus NEW's "
              "stops as soon as it can say \"better\" or \"not better\" at the error rates asked (docs/RATINGS.md).")),
}
"""Every subcommand, registered here and nowhere else: its name, ``(module, attribute, short help)``. The short help
is the command's own (tests/test_cli_lazy.py holds them equal), kept here so that ``arena --help`` lists every
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

    def invoke(self, ctx: click.Context) -> Any:
        # A damaged store can surface in any query of any command, a full disk in any write: one plain line each.
        # A stop (Ctrl-C, or SIGTERM: arena/__main__.py) that lands outside a command's own handling -- while its
        # options are converted, or between its set-up and its work -- is one plain line too, not click's
        # "Aborted!": what a command stores, it stores as it goes.
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            fail("interrupted", ExitCode.FAILED)
        except OSError as error:
            from arena.store import disk_full

            full = disk_full(error, "the disk being written to")
            if full is None:
                raise
            fail(str(full), ExitCode.FAILED)
        except Exception as error:
            # The store's error class is only looked up when it is loaded: a command that raised one loaded it.
            store = sys.modules.get("arena.store")
            if store is None or not isinstance(error, store.StoreError):
                raise
            fail(str(error), ExitCode(error.exit_code))


@click.group(cls=_Main, context_settings=CONTEXT)
@click.version_option(__version__, "-V", "--version", message=f"arena %(version)s (Python {platform.python_version()})")
def main() -> None:
    """Run tournaments between bots that play the card game Least Score."""
