"""``arena init``: a commented tournament or league config that runs as it is, from the templates in
``arena/templates/init/`` (package data), with the editor's schema comment pointing at the JSON Schema that ships
with arena (``arena/schemas/``), so that an editor with the YAML language server checks the file as it is typed."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from typing import Literal

from arena.bots.manifest import NAME_PATTERN

Kind = Literal["tournament", "league"]
KINDS: tuple[Kind, ...] = ("tournament", "league")
FILES: dict[Kind, str] = {"tournament": "tournament.yaml", "league": "league.yaml"}
SCHEMAS = {"tournament": "tournament.schema.json", "league": "league.schema.json", "bot": "bot.schema.json"}
"""The JSON Schemas arena ships, by what they describe: a tournament config, a league server config, a bot.yaml."""


class InitError(ValueError):
    """The config cannot be written there (it exists, or the directory cannot be made); the message names the
    file."""


def schema_path(kind: str) -> Path:
    """Where the JSON Schema of ``kind`` (tournament, league, bot) is in this install."""
    return Path(str(resources.files("arena").joinpath("schemas", SCHEMAS[kind])))


def default_name(directory: Path, kind: Kind) -> str:
    """The run's name: the directory's name made a slug when it can be one, else ``my-tournament``/``my-league``."""
    slug = re.sub(r"[^a-z0-9_-]+", "-", directory.resolve().name.lower()).strip("-_")[:40]
    return slug if NAME_PATTERN.fullmatch(slug) else f"my-{kind}"


def write_config(kind: Kind, directory: Path, name: str | None = None) -> Path:
    """Write the commented ``kind`` config into ``directory`` (made if need be) and return its path; never over
    an existing file."""
    target = directory / FILES[kind]
    if target.exists():
        raise InitError(f"{target}: already exists; arena init writes a new config only (edit that one, or give "
                        "another DIR)")
    name = name or default_name(directory, kind)
    if not NAME_PATTERN.fullmatch(name):
        raise InitError(f"--name: expected a slug matching [a-z0-9][a-z0-9_-]{{0,39}}, got {name!r}")
    template = resources.files("arena").joinpath("templates", "init", FILES[kind]).read_text(encoding="utf-8")
    text = (template.replace("__SCHEMA__", schema_path(kind).as_uri()).replace("__NAME__", name)
            .replace("__FILE__", str(target)))
    try:
        directory.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    except OSError as error:
        raise InitError(f"{target}: cannot write the config here ({error.strerror})") from None
    return target
