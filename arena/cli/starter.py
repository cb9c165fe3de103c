"""``arena init``: an organiser's first step, a commented config that runs as it is (arena/run/starter.py)."""

from __future__ import annotations

from pathlib import Path

import click

from arena.cli.common import emit_json, info, json_option
from arena.run.starter import KINDS, Kind, write_config


@click.command()
@click.argument("kind", type=click.Choice(KINDS), default="tournament")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path), default=Path("."))
@click.option("--name", help="The tournament's or league's name (default: made from DIRECTORY's name).")
@json_option("Print the written file's path as JSON.")
def init(kind: Kind, directory: Path, name: str | None, as_json: bool) -> None:
    """Write a commented tournament config (or with league, a league server config) into DIRECTORY (default: here)
    that runs as it is: arena run tournament.yaml, or arena serve league.yaml. Editors with the YAML language server
    check it against the JSON Schema that ships with arena."""
    written = write_config(kind, directory, name)
    if as_json:
        emit_json({"kind": kind, "config": str(written)})
        return
    click.echo(str(written))
    info(f"next: arena {'run' if kind == 'tournament' else 'serve'} {written}")


COMMANDS = (init,)
