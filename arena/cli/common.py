"""What every ``arena`` command module shares: exit codes, the error exit, JSON output, info lines, colour and
progress (``NO_COLOR``, ``arena -q``/``-v``), the ``--db`` and ``--json`` options, and opening the results store.

One place for these so that the command modules of ``arena.cli`` cannot drift apart in how they fail, print JSON or
find the store. It imports nothing of the command modules, which all import it.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from enum import IntEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from arena.extras import missing_extra

if TYPE_CHECKING:  # the store is imported by the commands that open one (arena --help must start fast)
    from arena.store import Store

DEFAULT_DB = Path("results/arena.db")
CONTEXT: dict[str, Any] = {"help_option_names": ["-h", "--help"], "max_content_width": 110}

F = TypeVar("F", bound=Callable[..., Any])


class ExitCode(IntEnum):
    OK = 0
    FAILED = 1
    USAGE = 2
    UNDECIDED = 3
    """``arena test``: no verdict at ``--max-matches``."""
    INCOMPLETE = 4
    """``arena test``: interrupted, or matches failed for infrastructure reasons; the same command resumes."""


def bot_dir(value: str, option: str | None = None) -> Path:
    """A bot named on the command line: ``sample:NAME`` (a sample bot that ships with arena, from any directory), or
    a directory that exists; as in a config's ``bots:``. Else exit 2 with one line, naming ``option`` if given."""
    from arena.resources import NoSuchSample, sample_bot

    where = "" if option is None else f"{option}: "
    try:
        sample = sample_bot(value)
    except NoSuchSample as error:
        fail(f"{where}{error}")
    if sample is not None:
        return sample
    path = Path(value)
    if not path.is_dir():
        fail(f"{where}{value}: {'not a directory' if path.exists() else 'no such directory'} (a bot directory, or "
             "sample:NAME for a sample bot)")
    return path


def bot_dirs(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """The callback of every argument or option that names bots (one, ``nargs=-1`` or ``multiple``): :func:`bot_dir`
    on each."""
    if value is None:
        return None
    option = param.opts[0] if isinstance(param, click.Option) else None
    return tuple(bot_dir(v, option) for v in value) if isinstance(value, tuple) else bot_dir(value, option)


BOT_DIR: dict[str, Any] = {"type": str, "callback": bot_dirs}
"""``**BOT_DIR`` in a ``click.argument`` or ``click.option`` that names a bot."""


def sandbox_choice() -> click.Choice[str]:
    """The ``--sandbox`` option's type: the backends' names (the sandbox package loads with the command using it)."""
    from arena.sandbox import BACKENDS

    return click.Choice(BACKENDS)


class CommandError(click.ClickException):
    """An error a command reports: one line on stderr, or under ``--json`` one JSON object on stdout, and an exit
    code. :func:`fail` raises it; the root group (arena/cli/main.py) renders it and every mapped exception alike."""

    def __init__(self, message: str, code: ExitCode = ExitCode.USAGE) -> None:
        super().__init__(message)
        vars(self)["exit_code"] = int(code)  # click's is a class attribute; ours differs per error

    def show(self, file: Any = None) -> None:
        click.secho(f"arena: {self.message}", err=True, fg="red")


def fail(message: str, code: ExitCode = ExitCode.USAGE) -> NoReturn:
    """End the command with ``arena: MESSAGE`` on stderr (or its JSON object under ``--json``) and exit ``code``:
    2 bad input unless the thing asked for failed (1)."""
    raise CommandError(message, code)


JSON_KEY = "arena.json"
"""``ctx.meta`` key, on the root context: ``--json`` was given (read before the command's options are parsed, so
that a usage error is JSON too)."""
EMITTED_KEY = "arena.emitted"
"""``ctx.meta`` key: the command already printed its JSON product; an error after it goes to stderr, so that stdout
stays one JSON document."""
VERBOSITY_KEY = "arena.verbosity"


def _meta() -> dict[str, Any]:
    ctx = click.get_current_context(silent=True)
    return {} if ctx is None else ctx.meta


def emit_json(data: Any) -> None:
    _meta()[EMITTED_KEY] = True
    click.echo(json.dumps(data, indent=2))


def verbosity() -> int:
    """-1 under ``arena -q``, 1 or more under ``-v``/``-vv``, else 0."""
    return int(_meta().get(VERBOSITY_KEY, 0))


def info(message: str) -> None:
    """An info line on stderr (where a result was written, what to run next); none under ``arena -q``."""
    if verbosity() >= 0:
        click.echo(message, err=True)


def colour(err: bool = False) -> bool:
    """Colour on stdout (or stderr): only on a terminal, and never when ``NO_COLOR`` is set (no-color.org)."""
    stream = sys.stderr if err else sys.stdout
    return not os.environ.get("NO_COLOR") and stream.isatty()


def progress_shown(as_json: bool = False) -> bool:
    """A progress bar or counter on stderr: on a terminal, not under ``--json`` or ``arena -q``."""
    return not as_json and verbosity() >= 0 and sys.stderr.isatty()


def db_option(help: str = "The results store (SQLite); event logs go beside it.") -> Callable[[F], F]:
    return click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path), default=DEFAULT_DB,
                        show_default=True, help=help)


def json_option(help: str = "Print the output as JSON.") -> Callable[[F], F]:
    return click.option("--json", "as_json", is_flag=True, help=help)


def open_store(db_path: Path, must_exist: bool = True) -> Store:
    """The store, read-only unless it is for a runner (``must_exist=False``, which may create it)."""
    from arena.store import Store

    if must_exist and not db_path.exists():
        fail(f"{db_path}: no results store here yet (run a tournament first, or pass --db)")
    return Store(db_path, readonly=must_exist)  # a StoreError is mapped to its exit code by the root group


def interrupted_while_loading() -> NoReturn:
    """Exit 1 with "arena: interrupted" for a Ctrl-C or SIGTERM that came while a command's modules loaded."""
    sys.stderr.write("arena: interrupted\n")
    sys.stderr.flush()
    # os._exit: a normal exit would be turned into death by SIGINT when the interrupt landed in certain import
    # paths (the interpreter flags it as unhandled), and nothing is open yet.
    os._exit(ExitCode.FAILED)


def require_extra(extra: str, needed_by: str) -> None:
    """Exit 2 with the ``pip install`` line when the optional stack ``extra`` is not installed: without it the
    first import of one of its modules would end ``needed_by`` in a ModuleNotFoundError traceback."""
    problem = missing_extra(extra, needed_by)
    if problem is not None:
        fail(problem)


def check_cluster(address: str | None) -> str | None:
    """The ``--cluster`` option's check (``arena run``, ``arena serve``, ``arena test``): a usage error (exit 2)
    for an address that is not valid, and exit 2 with the ``pip install`` line when the cluster extra is missing."""
    from arena.run.config import cluster_address_problem

    problem = None if address is None else cluster_address_problem(address)
    if problem is not None:
        raise click.BadParameter(problem, param_hint="--cluster")
    if address is not None:
        require_extra("cluster", "--cluster")
    return address
