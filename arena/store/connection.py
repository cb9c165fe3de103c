"""The store's SQLite connection: its errors, and a cursor whose SQLite errors name the store file (a full disk
as :class:`DiskFullError`, a damaged or foreign file as :class:`StoreError`)."""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path
from typing import Any


class StoreError(RuntimeError):
    """The store file cannot be used (not SQLite, damaged, newer schema, locked); the message names the file."""

    exit_code = 2


class DiskFullError(StoreError):
    """The disk under the store or its logs is full: what is stored is kept, the rest stays pending."""

    exit_code = 1

    def __init__(self, path: str | Path) -> None:
        super().__init__(f"no space left on device: {path}")


class LeaseHeldError(StoreError):
    """Another runner holds the tournament."""

    exit_code = 1


NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


def disk_full(error: BaseException, fallback: str | Path) -> DiskFullError | None:
    """``error`` as a :class:`DiskFullError` when it is a full disk (naming its file, else ``fallback``)."""
    if isinstance(error, DiskFullError):
        return error
    if isinstance(error, OSError) and error.errno in NO_SPACE:
        return DiskFullError(error.filename or fallback)
    return None


def _translate(path: Path, error: sqlite3.Error) -> Exception:
    # IntegrityError, ProgrammingError and the like are our bugs, not the file's: they keep their traceback.
    if isinstance(error, sqlite3.OperationalError):
        code = getattr(error, "sqlite_errorcode", 0) & 0xFF  # the primary code of an extended one
        if code == sqlite3.SQLITE_FULL or (code == sqlite3.SQLITE_IOERR and nearly_full(path)):
            return DiskFullError(path)
        return StoreError(f"{path}: cannot use the store ({error})")
    if type(error) is sqlite3.DatabaseError:  # malformed pages, not a database
        return StoreError(f"{path}: not a usable arena store ({error})")
    return error


def nearly_full(path: Path) -> bool:
    """Whether the filesystem holding ``path`` (a file) has under a MiB left."""
    # SQLite reports a write to a full disk as an I/O error when it is its shared-memory file that cannot grow.
    try:
        room = os.statvfs(path.parent)
    except OSError:
        return False
    return room.f_bavail * room.f_frsize < 1 << 20


class _Cursor(sqlite3.Cursor):
    """A cursor whose SQLite errors name the store file (see :func:`_translate`)."""

    def _path(self) -> Path:
        connection: _Connection = self.connection  # type: ignore[assignment]
        return connection.path

    def execute(self, sql: str, parameters: Any = (), /) -> _Cursor:
        try:
            return super().execute(sql, parameters)
        except sqlite3.Error as error:
            raise _translate(self._path(), error) from None

    def executemany(self, sql: str, parameters: Any, /) -> _Cursor:
        try:
            return super().executemany(sql, parameters)
        except sqlite3.Error as error:
            raise _translate(self._path(), error) from None

    def fetchone(self) -> Any:
        try:
            return super().fetchone()
        except sqlite3.Error as error:
            raise _translate(self._path(), error) from None

    def fetchmany(self, size: int | None = 1) -> list[Any]:
        try:
            return super().fetchmany(size)
        except sqlite3.Error as error:
            raise _translate(self._path(), error) from None

    def fetchall(self) -> list[Any]:
        try:
            return super().fetchall()
        except sqlite3.Error as error:
            raise _translate(self._path(), error) from None

    def __next__(self) -> Any:
        try:
            return super().__next__()
        except sqlite3.Error as error:
            raise _translate(self._path(), error) from None


class _Connection(sqlite3.Connection):
    path: Path

    def execute(self, sql: str, parameters: Any = (), /) -> _Cursor:
        return self.cursor(_Cursor).execute(sql, parameters)

    def executemany(self, sql: str, parameters: Any, /) -> _Cursor:
        return self.cursor(_Cursor).executemany(sql, parameters)
