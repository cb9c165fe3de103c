"""The results store on its own: migrations apply once, and a store from a newer arena is refused, not changed."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from arena.cli.main import main
from arena.store import MIGRATIONS, Store, StoreError


def migrations_in(path: Path) -> list[str]:
    with sqlite3.connect(path) as db:
        return [name for (name,) in db.execute("SELECT name FROM _migrations ORDER BY name")]


def test_a_new_store_applies_every_migration_once(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "arena.db"
    Store(path).close()
    assert migrations_in(path) == sorted(name for name, _ in MIGRATIONS)
    Store(path).close()  # reopening applies nothing twice (the names are primary keys: it would raise)
    assert migrations_in(path) == sorted(name for name, _ in MIGRATIONS)


def test_a_store_written_by_a_newer_arena_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "arena.db"
    Store(path).close()
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO _migrations VALUES ('9999_from_the_future', '2030-01-01T00:00:00Z')")
    before = migrations_in(path)
    with pytest.raises(StoreError) as error:
        Store(path)
    assert str(path) in str(error.value) and "newer arena" in str(error.value)
    assert "9999_from_the_future" in str(error.value)
    assert migrations_in(path) == before
    result = CliRunner().invoke(main, ["standings", "--db", str(path)])
    assert result.exit_code == 2 and "newer arena" in result.stderr


def test_a_file_that_is_not_sqlite_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "arena.db"
    path.write_bytes(b"not a database, just some text that is long enough to have a header" * 10)
    with pytest.raises(StoreError, match=re.escape(f"{path}: not a usable arena store")):
        Store(path)
