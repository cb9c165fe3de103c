"""What every ``arena`` command module shares: exit codes, the error exit, JSON output, the ``--db`` and ``--json``
options, and opening the results store.

One place for these so that the commands in ``cli_play.py``, ``cli_results.py``, ``cli_site.py`` and ``cli_bots.py``
cannot drift apart in how they fail, print JSON or find the store. It imports nothing of the command modules, which all import it.
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


def sandbox_choice() -> click.Choice[str]:
    """The ``--sandbox`` option's type: the backends' names (the sandbox package loads with the command using it)."""
    from arena.sandbox import BACKENDS

    return click.Choice(BACKENDS)


def fail(message: str, code: ExitCode = ExitCode.USAGE, as_json: bool = False) -> NoReturn:
    """Print ``arena: MESSAGE`` on stderr and exit: 2 (bad input) unless the thing asked for failed (1). Under
    ``--json`` the error is a JSON object on stdout instead, so a script reading stdout gets one either way."""
    if as_json:
        emit_json({"error": message, "exit_code": int(code)})
    else:
        click.secho(f"arena: {message}", err=True, fg="red" if sys.stderr.isatty() else None)
    sys.exit(code)


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2))


def db_option(help: str = "The results store (SQLite); event logs go beside it.") -> Callable[[F], F]:
    return click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path), default=DEFAULT_DB,
                        show_default=True, help=help)


def json_option(help: str = "Print the output as JSON.") -> Callable[[F], F]:
    return click.option("--json", "as_json", is_flag=True, help=help)


def open_store(db_path: Path, must_exist: bool = True) -> Store:
    """The store, read-only unless it is for a runner (``must_exist=False``, which may create it)."""
    from arena.store import Store, StoreError

    if must_exist and not db_path.exists():
        fail(f"{db_path}: no results store here yet (run a tournament first, or pass --db)")
    try:
        return Store(db_path, readonly=must_exist)
    except StoreError as error:
        fail(str(error), ExitCode(error.exit_code))


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
