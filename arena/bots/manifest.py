"""Bots on disk: a directory with a ``bot.yaml`` manifest, loaded into a :class:`BotSpec`.

Every error names the file, the field and what was expected, because the person reading it is a bot author who
has not read our code.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from arena.bots.files import bot_walk
from arena.yamlfile import excerpt, load_yaml

MANIFEST = "bot.yaml"
MAX_MANIFEST_BYTES = 64 << 10
"""A bot.yaml is a few lines; an author's file is refused past this, before it is parsed."""
MAX_MANIFEST_NODES = 2_000
"""Values in a bot.yaml, its aliases expanded (arena.yamlfile): a few dozen in any real one."""
NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")
OPTIONAL_TEXT = ("language", "author", "description", "image")
MISSPELT = ("bot.yml", "bot.yaml", "bot.yaml.txt", "bots.yaml", "bot.yaml.yaml", "manifest.yaml", "arena.yaml")
"""Names an author may have given the manifest (compared lower-cased): a missing ``bot.yaml`` names the one found."""


class ManifestError(ValueError):
    """A missing or malformed bot manifest; the message names the file and the field."""


@dataclass(frozen=True)
class BotSpec:
    """A bot ready to launch: its name, its command (run in ``directory``) and a hash of its files.

    ``build``, when the manifest has one, is the command that turns the submitted sources into what ``command``
    runs; :mod:`arena.registry.build` runs it at check and submission, and once per state of a bot directory that a match or
    tournament plays (:func:`arena.registry.build.playable`)."""

    name: str
    directory: Path
    command: tuple[str, ...]
    files_hash: str
    build: tuple[str, ...] | None = None
    language: str | None = None
    author: str | None = None
    description: str | None = None
    image: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "directory": str(self.directory),
            "command": list(self.command),
            "build": None if self.build is None else list(self.build),
            "files_hash": self.files_hash,
            "language": self.language,
            "author": self.author,
            "description": self.description,
            "image": self.image,
        }


def load_bot(directory: str | os.PathLike[str]) -> BotSpec:
    """Read ``directory/bot.yaml`` and hash the bot's files, or raise :class:`ManifestError`."""
    root = Path(directory).resolve()
    path = root / MANIFEST
    if not root.is_dir():
        raise ManifestError(f"{root}: not a directory (expected a bot directory holding {MANIFEST})")
    if not path.is_file():
        misspelt = next((near.name for near in sorted(root.iterdir()) if near.name != MANIFEST
                         and near.name.lower() in MISSPELT and near.is_file()), None)
        if misspelt is not None:
            raise ManifestError(f"{path}: missing, but {misspelt} is there: rename it to {MANIFEST} (that name, "
                                "exactly, is the one arena reads)")
        raise ManifestError(f"{path}: missing (every bot directory needs a {MANIFEST} with name and command)")
    try:
        if path.stat().st_size > MAX_MANIFEST_BYTES:
            raise ManifestError(f"{path}: too long: {path.stat().st_size} bytes (a {MANIFEST} may have at most "
                                f"{MAX_MANIFEST_BYTES >> 10} KiB)")
        data = load_yaml(path.read_text(encoding="utf-8"), max_bytes=MAX_MANIFEST_BYTES,
                         max_nodes=MAX_MANIFEST_NODES)
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise ManifestError(f"{path}: not valid YAML: {error}") from None
    if not isinstance(data, dict):
        raise ManifestError(f"{path}: expected a mapping with keys name and command, got {type(data).__name__}")
    known = {"name", "command", "build", *OPTIONAL_TEXT}
    unknown = sorted(str(key) for key in data if key not in known)
    if unknown:
        raise ManifestError(f"{path}: field {unknown[0]}: unknown field (known: {', '.join(sorted(known))})")
    for required in ("name", "command"):
        if required not in data:
            raise ManifestError(f"{path}: field {required}: missing (a {MANIFEST} needs name and command)")
    name = data.get("name")
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise ManifestError(
            f"{path}: field name: expected a slug matching [a-z0-9][a-z0-9_-]{{0,39}}, got {excerpt(name)}"
        )
    command = _command(path, "command", data.get("command"), "'python3 bot.py'")
    build = None if data.get("build") is None else _command(path, "build", data["build"], "'gcc -O2 -o bot bot.c'")
    extras: dict[str, str | None] = {}
    for key in OPTIONAL_TEXT:
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            raise ManifestError(f"{path}: field {key}: expected a string, got {excerpt(value)}")
        extras[key] = value
    return BotSpec(name=name, directory=root, command=command, files_hash=hash_files(root), build=build, **extras)


def _command(path: Path, field: str, value: object, example: str) -> tuple[str, ...]:
    """``command`` and ``build`` alike: a string split like a shell would (but run by no shell), or a list."""
    if isinstance(value, str):
        try:
            parts = shlex.split(value)
        except ValueError as error:
            raise ManifestError(f"{path}: field {field}: cannot split {excerpt(value)} like a shell would: "
                                f"{error}") from None
    elif isinstance(value, list) and all(isinstance(part, str) for part in value):
        parts = list(value)
    else:
        raise ManifestError(
            f"{path}: field {field}: expected a string such as {example} or a list of strings, got {excerpt(value)}"
        )
    if not parts or not parts[0]:
        raise ManifestError(f"{path}: field {field}: expected a program to run, got an empty {field}")
    return tuple(parts)


def hash_files(root: Path) -> str:
    """A SHA-256 over the bot's regular files (relative paths and contents), so a changed bot gets a new hash; what
its ignore rules leave out (``.arenaignore``, :class:`arena.bots.files.Ignore`) is no part of it.

    Symlinks are hashed by their target text, never followed: a bot must not make us read outside its directory.
    """
    digest = hashlib.sha256()
    for current, dirs, files in bot_walk(root):
        dirs.sort()
        for name in sorted(files):
            full = Path(current, name)
            relative = full.relative_to(root).as_posix()
            digest.update(relative.encode() + b"\0")
            if full.is_symlink():
                digest.update(b"link:" + os.readlink(full).encode() + b"\0")
            elif full.is_file():
                with open(full, "rb") as handle:
                    for block in iter(lambda: handle.read(1 << 16), b""):
                        digest.update(block)
                digest.update(b"\0")
    return digest.hexdigest()
