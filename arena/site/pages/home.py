"""The home page's data: every tournament of the store with its leader."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from arena.site.snapshot import Live, Snapshot
from arena.site.urls import Crumb, bot_href, slug, tournament_href
from arena.stats.standings import standings as read_standings
from arena.store import Store


@dataclass(frozen=True)
class TournamentSummary:
    name: str
    href: str | None
    """None when this build does not include the tournament and no earlier build wrote it."""
    created_at: str
    finished_at: str | None
    bots: int
    matches_total: int
    matches_done: int
    leader: str | None
    leader_href: str | None
    live: Live | None = None


@dataclass(frozen=True)
class HomePage:
    tournaments: list[TournamentSummary]
    crumbs: tuple[Crumb, ...] = (Crumb("Home", None),)
    live: Live | None = None
    """Set when a tournament on it is live: the home page then reloads itself too."""


def home_page(store: Store, linked: Iterable[str] | None = None,
              read: Mapping[int, Snapshot] | None = None) -> HomePage:
    """Every tournament in the store, newest first; ``linked`` (slugs) limits which get a link; ``read`` (by
    tournament id) the snapshots already read, whose standings are not read again."""
    allowed = None if linked is None else set(linked)
    summaries = []
    for row in reversed(store.tournaments()):
        tid = row["id"]
        tslug = slug(row["name"], tid, "t")
        counts = store.status_counts(tid)
        table = read[tid].standings if read is not None and tid in read else read_standings(store, tid)
        leader = table[0] if table and table[0].matches else None
        leader_bot = None if leader is None else slug(leader.name, leader.bot_id, "b")
        linked_here = allowed is None or tslug in allowed
        live = read[tid].live if read is not None and tid in read else None
        summaries.append(TournamentSummary(
            row["name"], tournament_href(tslug) if linked_here else None, row["created_at"], row["finished_at"],
            len(table), sum(counts.values()), counts.get("done", 0),
            None if leader is None else leader.name,
            None if leader_bot is None or not linked_here else bot_href(tslug, leader_bot),
            # Its row counts the matches once, in its own column: the live tag says only that it is live.
            None if live is None else live.uncounted()))
    first_live = next((summary.live for summary in summaries if summary.live is not None), None)
    return HomePage(summaries, live=first_live)
