"""The public results site of a running league: the static site's pages, without any bot's stderr.

A bot's stderr is its author's business (it may hold their debugging, or what their bot knows), so the pages the
server publishes are rendered from a snapshot whose seats have their stderr tails removed; the replays on match
pages carry fault kinds and details but never stderr. The site is rebuilt after each batch of the league: the
league's own pages (standings, match lists, bot pages) in full, match pages only for the matches of that batch,
since a finished match never changes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from pathlib import Path

from arena.site import data
from arena.site.render import ASSET_DIR, ASSETS, match_files, render_home, tournament_files, write_site
from arena.store import Store


def public_snapshot(store: Store, name: str) -> data.Snapshot:
    snap = data.snapshot(store, name)
    snap.matches = [match if match.result is None else dataclasses.replace(match, result=dataclasses.replace(
                        match.result, players=tuple(dataclasses.replace(player, stderr_tail="")
                                                    for player in match.result.players)))
                    for match in snap.matches]
    return snap


def publish(store: Store, name: str, out: Path, new_match_ids: Sequence[int] | None = None) -> int:
    """Write the league's pages into ``out``: every match page when ``new_match_ids`` is None, else only those.
    Returns the number of files written."""
    snap = public_snapshot(store, name)
    wanted = None if new_match_ids is None else set(new_match_ids)
    positions = [position for position, match in enumerate(snap.matches)
                 if match.status == "done" and (wanted is None or match.id in wanted)]

    def files() -> Iterator[tuple[str, str | bytes]]:
        if new_match_ids is None:
            for asset in ASSETS:
                yield f"assets/{asset}", (ASSET_DIR / asset).read_bytes()
        yield from tournament_files(snap, matches=False)
        yield from match_files(snap, positions)
        home = data.home_page(store, {snap.slug})
        # Only the league: other tournaments in the same store are the organiser's, not the public's.
        yield "index.html", render_home(dataclasses.replace(home, tournaments=[t for t in home.tournaments
                                                                               if t.name == name]))

    return write_site(out, files())


def league_href(store: Store, name: str) -> str | None:
    """The league's page within the site, or None before it exists in the store."""
    row = store.tournament(name)
    return None if row is None else data.tournament_href(data.slug(name, row["id"], "t"))
