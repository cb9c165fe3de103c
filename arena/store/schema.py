"""The results store's schema: named, ordered migrations (:class:`arena.store.Store` applies each atomically with
its record in ``_migrations``). A migration once released is never edited: a change is a new one at the end. Another
room's tables have a set of their own beside their queries (the league server's authors: arena/server/authors.py),
recorded in the same ``_migrations``."""

from __future__ import annotations

MIGRATIONS: list[tuple[str, str]] = [
    ("0001_initial", """
        CREATE TABLE tournaments (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            config TEXT NOT NULL,
            config_hash TEXT NOT NULL,
            created_at TEXT NOT NULL,
            finished_at TEXT
        ) STRICT;
        CREATE TABLE bots (
            id INTEGER PRIMARY KEY,
            tournament_id INTEGER NOT NULL REFERENCES tournaments(id) ON DELETE CASCADE,
            slot INTEGER NOT NULL,
            name TEXT NOT NULL,
            directory TEXT NOT NULL,
            files_hash TEXT NOT NULL,
            manifest TEXT NOT NULL,
            UNIQUE (tournament_id, slot)
        ) STRICT;
        CREATE TABLE matches (
            id INTEGER PRIMARY KEY,
            tournament_id INTEGER NOT NULL REFERENCES tournaments(id) ON DELETE CASCADE,
            idx INTEGER NOT NULL,
            grp INTEGER NOT NULL,
            rotation INTEGER NOT NULL,
            seed INTEGER NOT NULL,
            status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'failed')),
            attempts INTEGER NOT NULL DEFAULT 0,
            rounds INTEGER,
            turns INTEGER,
            termination TEXT,
            duration_s REAL,
            log_path TEXT,
            error TEXT,
            finished_at TEXT,
            UNIQUE (tournament_id, idx)
        ) STRICT;
        CREATE TABLE seats (
            match_id INTEGER NOT NULL REFERENCES matches(id) ON DELETE CASCADE,
            seat INTEGER NOT NULL,
            bot_id INTEGER NOT NULL REFERENCES bots(id) ON DELETE CASCADE,
            place INTEGER,
            score INTEGER,
            fault_kind TEXT,
            fault_detail TEXT,
            fault_round INTEGER,
            stderr_tail TEXT,
            rounds INTEGER,
            turns INTEGER,
            points INTEGER,
            declares_ok INTEGER,
            declares_failed INTEGER,
            PRIMARY KEY (match_id, seat)
        ) STRICT;
        CREATE INDEX seats_by_bot ON seats (bot_id);
        CREATE TABLE ratings (
            tournament_id INTEGER NOT NULL REFERENCES tournaments(id) ON DELETE CASCADE,
            bot_id INTEGER NOT NULL REFERENCES bots(id) ON DELETE CASCADE,
            match_idx INTEGER NOT NULL,
            mu REAL NOT NULL,
            sigma REAL NOT NULL,
            PRIMARY KEY (tournament_id, bot_id, match_idx)
        ) STRICT;
    """),
    # A fault's reason code and the facts it was decided on, and the time bank a seat had left: the whole
    # SeatResult is stored. Faults stored before have only a kind: they get that kind's generic code.
    ("0002_fault_reasons", """
        ALTER TABLE seats ADD COLUMN fault_reason TEXT;
        ALTER TABLE seats ADD COLUMN fault_line TEXT;
        ALTER TABLE seats ADD COLUMN fault_exit_status INTEGER;
        ALTER TABLE seats ADD COLUMN fault_signal INTEGER;
        ALTER TABLE seats ADD COLUMN bank_left_ms INTEGER;
        UPDATE seats SET fault_reason = fault_kind || '.other' WHERE fault_kind IS NOT NULL;
    """),
    # Who runs which tournament: one row per tournament being run, kept by name (``--fresh`` recreates the id).
    ("0003_leases", """
        CREATE TABLE leases (
            tournament TEXT PRIMARY KEY,
            token TEXT NOT NULL,
            host TEXT NOT NULL,
            pid INTEGER NOT NULL,
            since TEXT NOT NULL,
            expires REAL NOT NULL
        ) STRICT;
    """),
    # 0004_league_authors, the league server's author tables, is arena/server/authors.py's now (MOVED).
    # A league's bots come and go: the group number at which each entered and, once it has, left the field
    # (NULL, NULL for a tournament's bots, which play throughout). The matchmaker's fair shares and the standings'
    # marks of inactive versions are read from them. A bot already in a store entered at its first group (whether
    # it has left is known at the league's next batch).
    ("0005_league_activity", """
        ALTER TABLE bots ADD COLUMN entered_group INTEGER;
        ALTER TABLE bots ADD COLUMN left_group INTEGER;
        UPDATE bots SET entered_group = (SELECT min(m.grp) FROM seats s JOIN matches m ON m.id = s.match_id
                                         WHERE s.bot_id = bots.id);
    """),
    # A league keeps each bot version's stderr for its latest matches only (Store.clear_old_stderr): the seats that
    # still have it, newest first per bot, so each pass reads only those.
    ("0006_stderr_retention", """
        CREATE INDEX seats_with_stderr ON seats (bot_id, match_id) WHERE stderr_tail IS NOT NULL;
    """),
    # A run's secret, which its deals follow from (arena/schedule.py's deal_seed), kept apart from the config the
    # store shows (docs/SECURITY.md): the configured seed as text, or the one made when the run was created. A run
    # stored before it keeps its seed as its secret (its deals were drawn from it another way: their seeds are in
    # its matches, which is all a resume reads). The groups with a match not yet done, found by an index: their
    # deal seeds and logs are not shown (Store.sealed_groups).
    ("0007_deal_secrets", """
        ALTER TABLE tournaments ADD COLUMN secret TEXT;
        UPDATE tournaments SET secret = CAST(json_extract(config, '$.seed') AS TEXT),
                               config = json_remove(config, '$.seed');
        CREATE INDEX matches_not_done ON matches (tournament_id, grp) WHERE status != 'done';
    """),
    # Which process holds a lease, named so that a reused pid does not pass for it (arena/procfs.py's Owner): its
    # start time. A lease taken before has none: its pid alone is checked, as it was.
    ("0008_lease_owners", """
        ALTER TABLE leases ADD COLUMN started INTEGER;
    """),
    # Each seat's own think time (the referee's count): what the league's throttle charges a bot, not the whole
    # match's time, which includes its table's other bots. NULL for seats stored before.
    ("0009_seat_think", """
        ALTER TABLE seats ADD COLUMN think_ms INTEGER;
    """),
]
MOVED: dict[str, str] = {"0004_league_authors": "arena.server.authors"}
"""Migrations that were the store's and belong to a set of their own now, under the same name, so that a store made
before has them applied (:meth:`arena.store.Store.migrate`): the module whose set each is in."""
