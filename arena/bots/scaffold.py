"""``arena new-bot``: a new bot directory from the templates in ``arena/templates/newbot/<language>/``.

The templates are package data, so an installed arena can scaffold without a source checkout. Each one is a
minimal correct bot that passes ``arena check`` as it is, with a README on how to iterate.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from arena.bots.manifest import NAME_PATTERN

LANGUAGES = ("python", "javascript", "c", "cpp", "java")
"""The templates under ``arena/templates/newbot/``; the compiled ones (c, cpp, java) have a ``build:``
(:mod:`arena.registry.build`). Rust and Go are not here: this machine's rustc lives under /root/.cargo, outside what the
sandbox binds, and it has no go."""
PLACEHOLDER = "__NAME__"


class ScaffoldError(ValueError):
    """A bad name or target directory; the message says what was expected."""


def scaffold(name: str, language: str = "python", target: str | os.PathLike[str] | None = None) -> Path:
    """Write a new bot called ``name`` into ``target`` (default ``./name``), which must be new or empty."""
    if not NAME_PATTERN.fullmatch(name):
        raise ScaffoldError(f"bad bot name {name!r}: expected a slug matching [a-z0-9][a-z0-9_-]{{0,39}} "
                            "(lowercase letters, digits, - and _, starting with a letter or digit)")
    if language not in LANGUAGES:
        raise ScaffoldError(f"unknown language {language!r} (expected one of: {', '.join(LANGUAGES)})")
    directory = Path(target if target is not None else name)
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise ScaffoldError(f"{directory}: already exists and is not an empty directory; choose another --dir")
    templates = resources.files("arena").joinpath("templates", "newbot", language)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ScaffoldError(f"{directory}: cannot create the bot's directory here ({error.strerror}); "
                            "choose another --dir") from None
    for item in sorted(templates.iterdir(), key=lambda entry: entry.name):
        if not item.is_file():
            continue
        text = item.read_text(encoding="utf-8").replace(PLACEHOLDER, name)
        (directory / item.name).write_text(text, encoding="utf-8")
    return directory
