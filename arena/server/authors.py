"""Authors of a league, their API tokens, which bot names they own, and the submissions they made.

A token is shown once, when the organiser adds the author (``arena author add``); the store keeps only its SHA-256.
Tokens are 32 random bytes, so a plain hash is enough (no salt or slow hash: nobody can guess a preimage), and a
presented token is compared with every live author's hash by :func:`hmac.compare_digest`, so the time taken says
nothing about how close a guess was. Every function opens nothing itself: it takes a :class:`~arena.store.Store`
(one per thread, as SQLite wants), so the CLI and the server share the same rows, and an author added from the
command line can submit at once to a running server.

The tables are this module's, with a migration set of their own (:data:`MIGRATIONS`) beside the queries: a
writable store gets them when an author function first uses it; a read-only store without them has no authors.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

from arena.bots.manifest import NAME_PATTERN
from arena.store import Store

TOKEN_BYTES = 32

MIGRATIONS: list[tuple[str, str]] = [
    # Authors (token hashes only), who owns which bot name, and accepted submissions (the rate limit).
    ("0004_league_authors", """
        CREATE TABLE authors (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            token_hash TEXT NOT NULL UNIQUE,
            created_at TEXT NOT NULL,
            revoked_at TEXT
        ) STRICT;
        CREATE TABLE bot_owners (
            bot_name TEXT PRIMARY KEY,
            author_id INTEGER NOT NULL REFERENCES authors(id),
            claimed_at TEXT NOT NULL
        ) STRICT;
        CREATE TABLE submissions (
            id INTEGER PRIMARY KEY,
            author_id INTEGER NOT NULL REFERENCES authors(id),
            bot_name TEXT NOT NULL,
            version INTEGER NOT NULL,
            files_hash TEXT NOT NULL,
            accepted_at REAL NOT NULL
        ) STRICT;
        CREATE INDEX submissions_by_author ON submissions (author_id, accepted_at);
    """),
]
"""The author tables' migration set, applied by :meth:`arena.store.Store.migrate` and recorded with the store's own
in ``_migrations``. The first keeps the name it had as the store's migration (a store made before has it, and its
rows); the next are named ``authors/NNNN_...`` (:data:`PREFIX`)."""
PREFIX = "authors/"

_READY: weakref.WeakSet[Store] = weakref.WeakSet()
"""The stores known to have the tables as :data:`MIGRATIONS` makes them (checked once per store)."""


def has_tables(store: Store) -> bool:
    """Whether the store has the author tables: a writable one gets them (the set's migrations it lacks applied,
    once per :class:`~arena.store.Store`); a read-only one has them once a writer did."""
    if store in _READY:
        return True
    store.migrate(MIGRATIONS, PREFIX)  # a read-only store is only checked (a newer arena's set is refused)
    if store.readonly and store.db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'authors'").fetchone() is None:
        return False
    _READY.add(store)
    return True


class AuthorError(ValueError):
    """An author that cannot be added, found or revoked; the message says which and why."""


class NameTaken(Exception):
    """The bot name belongs to another author (or to the organiser): the server answers 403."""


@dataclass(frozen=True)
class Author:
    id: int
    name: str
    created_at: str
    revoked_at: str | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


@dataclass(frozen=True)
class AuthorSummary:
    """One line of ``arena author list``."""

    author: Author
    bots: tuple[str, ...]
    submissions: int

    def to_dict(self) -> dict[str, object]:
        return {"name": self.author.name, "created_at": self.author.created_at,
                "revoked_at": self.author.revoked_at, "bots": list(self.bots), "submissions": self.submissions}


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _author(row: object) -> Author:
    return Author(row["id"], row["name"], row["created_at"], row["revoked_at"])  # type: ignore[index]


def add_author(store: Store, name: str) -> str:
    """Add author ``name`` and return their new token (the only time it exists in clear)."""
    if not NAME_PATTERN.fullmatch(name):
        raise AuthorError(f"author name {name!r}: expected a slug matching [a-z0-9][a-z0-9_-]{{0,39}}")
    token = secrets.token_urlsafe(TOKEN_BYTES)
    has_tables(store)
    with store.atomic() as db:
        if db.execute("SELECT 1 FROM authors WHERE name = ?", (name,)).fetchone():
            raise AuthorError(f"{store.path}: author {name!r} already exists (arena author list); revoke and "
                              "re-adding under a new name is how a lost token is replaced")
        db.execute("INSERT INTO authors (name, token_hash, created_at) VALUES (?, ?, ?)",
                   (name, token_hash(token), _now()))
    return token


def revoke_author(store: Store, name: str) -> None:
    """Their token stops working at once; their bots and results stay."""
    has_tables(store)
    with store.atomic() as db:
        row = db.execute("SELECT revoked_at FROM authors WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise AuthorError(f"{store.path}: no author {name!r} (arena author list)")
        if row["revoked_at"] is None:
            db.execute("UPDATE authors SET revoked_at = ? WHERE name = ?", (_now(), name))


def list_authors(store: Store) -> list[AuthorSummary]:
    if not has_tables(store):
        return []
    bots: dict[int, list[str]] = {}
    for row in store.db.execute("SELECT author_id, bot_name FROM bot_owners ORDER BY bot_name"):
        bots.setdefault(row["author_id"], []).append(row["bot_name"])
    counts = dict(store.db.execute("SELECT author_id, count(*) FROM submissions GROUP BY author_id").fetchall())
    return [AuthorSummary(_author(row), tuple(bots.get(row["id"], ())), counts.get(row["id"], 0))
            for row in store.db.execute("SELECT * FROM authors ORDER BY name")]


def live_authors(store: Store) -> list[tuple[str, Author]]:
    """(token hash, author) of every author whose token works."""
    if not has_tables(store):
        return []
    return [(row["token_hash"], _author(row)) for row in store.db.execute(
        "SELECT * FROM authors WHERE revoked_at IS NULL ORDER BY id")]


def match_token(authors: Sequence[tuple[str, Author]], token: str) -> Author | None:
    """The author among ``authors`` (from :func:`live_authors`) whose token this is, or None."""
    presented = token_hash(token)
    found = None
    # Compare with every live author, not a lookup by hash, and without stopping at the first match: the time
    # does not depend on which author (if any) matched.
    for digest, author in authors:
        if hmac.compare_digest(presented, digest):
            found = author
    return found


def authenticate(store: Store, token: str) -> Author | None:
    """The live author whose token this is, or None."""
    return match_token(live_authors(store), token)


def owner_of(store: Store, bot_name: str) -> str | None:
    if not has_tables(store):
        return None
    row = store.db.execute("SELECT a.name FROM bot_owners o JOIN authors a ON a.id = o.author_id "
                           "WHERE o.bot_name = ?", (bot_name,)).fetchone()
    return None if row is None else str(row[0])


def all_owners(store: Store) -> dict[str, str]:
    """Bot name -> its owner's name, for every bot an author owns."""
    if not has_tables(store):
        return {}
    return dict(store.db.execute("SELECT o.bot_name, a.name FROM bot_owners o JOIN authors a ON a.id = o.author_id"
                                 ).fetchall())


def owned_by(store: Store, author: Author) -> list[str]:
    if not has_tables(store):
        return []
    return [row[0] for row in store.db.execute("SELECT bot_name FROM bot_owners WHERE author_id = ? ORDER BY bot_name",
                                               (author.id,))]


def accepted_since(store: Store, author: Author, since: float) -> list[float]:
    """When this author's accepted submissions since ``since`` (a Unix time) were accepted, oldest first."""
    if not has_tables(store):
        return []
    return [row[0] for row in store.db.execute(
        "SELECT accepted_at FROM submissions WHERE author_id = ? AND accepted_at >= ? ORDER BY accepted_at",
        (author.id, since))]


def record_acceptance(store: Store, author: Author, bot_name: str, version: int, files_hash: str,
                      at: float) -> None:
    """Claim the name (first author wins) and log the submission, in one transaction."""
    has_tables(store)
    with store.atomic() as db:
        db.execute("INSERT OR IGNORE INTO bot_owners (bot_name, author_id, claimed_at) VALUES (?, ?, ?)",
                   (bot_name, author.id, _now()))
        owner = db.execute("SELECT author_id FROM bot_owners WHERE bot_name = ?", (bot_name,)).fetchone()[0]
        if owner != author.id:
            raise NameTaken(bot_name)
        db.execute("INSERT INTO submissions (author_id, bot_name, version, files_hash, accepted_at) "
                   "VALUES (?, ?, ?, ?, ?)", (author.id, bot_name, version, files_hash, at))


def submissions_of(store: Store, bot_name: str) -> dict[int, str]:
    """Version -> the author who submitted it, for the versions that came in over the API."""
    if not has_tables(store):
        return {}
    return {row["version"]: row["name"] for row in store.db.execute(
        "SELECT s.version, a.name FROM submissions s JOIN authors a ON a.id = s.author_id WHERE s.bot_name = ?",
        (bot_name,))}


_CONFUSABLE = str.maketrans({"0": "o", "1": "l", "i": "l", "3": "e", "4": "a", "5": "s", "7": "t", "8": "b",
                             "-": None, "_": None})


def skeleton(name: str) -> str:
    """What a bot name looks like, for telling look-alikes apart: two names with the same skeleton are one name to
    a reader. Names are already ``[a-z0-9_-]`` (arena.bots.manifest); this drops ``-`` and ``_``, reads ``0`` as
    ``o``, ``1`` and ``i`` as ``l``, ``3`` as ``e``, ``4`` as ``a``, ``5`` as ``s``, ``7`` as ``t``, ``8`` as ``b``,
    and ``rn`` as ``m``, ``vv`` as ``w``.

    >>> skeleton("a1ice-greedy") == skeleton("alice_greedy") == skeleton("alicegreedy")
    True
    >>> skeleton("alice-greedy") == skeleton("alice-greedy-v2")
    False
    """
    return name.lower().translate(_CONFUSABLE).replace("rn", "m").replace("vv", "w")


_VERSION_SUFFIX = re.compile(r"[-_]?v?\d+$")


def _parts(name: str) -> list[str]:
    return [skeleton(part) for part in re.split(r"[-_]+", _VERSION_SUFFIX.sub("", name) or name) if part]


def looks_alike(name: str, other: str) -> bool:
    """Whether ``name`` reads as ``other``, or as another version or an extension of it: the same
    :func:`skeleton`, the same once a version suffix is dropped (``alicegreedy2``, ``alice-greedy-v2``), or, for a
    name of two parts or more, with its parts in a row (``alice-greedy-pro``). A one-part name (``greedy``) only
    claims its versions: ``greedy-plus`` stays free.

    >>> looks_alike("alice-greedy-v2", "alice-greedy"), looks_alike("alicegreedy2", "alice-greedy")
    (True, True)
    >>> looks_alike("greedy-plus", "greedy"), looks_alike("gr33dy-3", "greedy")
    (False, True)
    """
    if skeleton(name) == skeleton(other):
        return True
    mine, theirs = _parts(name), _parts(other)
    if "".join(mine) == "".join(theirs):
        return True
    if len(theirs) < 2:
        return False
    return any(mine[start:start + len(theirs)] == theirs for start in range(len(mine) - len(theirs) + 1))
