"""The public results site of a running league: the static site's pages, without any bot's stderr.

A bot's stderr is its author's business (it may hold their debugging, or what their bot knows), so the pages the
server publishes are rendered from a snapshot whose seats have their stderr tails removed; the replays on match
pages carry fault kinds and details but never stderr. The site is rebuilt after each batch of the league,
incrementally: only the pages whose data changed are written (a finished match's page never changes), so the cost
of a publish follows the batch, not the size of the league. A league is always being played while its server
publishes: its pages say "live, N matches played" and reload themselves (:class:`arena.site.snapshot.Live`), as
``arena run --live`` makes a tournament's; they are served by the server itself, so no one sees them after it
stopped.
"""

from __future__ import annotations

import dataclasses
import functools
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from multiprocessing.context import BaseContext
from pathlib import Path
from typing import Any

from arena.server.authors import all_owners
from arena.site import snapshot, urls
from arena.site.build import BuildReport, write_site
from arena.site.pages import home as home_data
from arena.store import Store

LIVE_REFRESH_S = 10
"""How often the league's published pages reload themselves (a publish is due every 5 s at most)."""


def public_snapshot(store: Store, name: str) -> snapshot.Snapshot:
    """The league's snapshot without stderr, each bot's manifest showing its real owner first (``owner``: the
    author who claimed the name, or the organiser for a house bot) and what its ``bot.yaml`` says of its author
    only as ``author (declared)``: anyone can write ``author: alice``."""
    snap = snapshot.snapshot(store, name, stderr=False)
    owners = all_owners(store)

    def owned(bot: snapshot.BotInfo) -> dict[str, Any]:
        manifest = {key: value for key, value in bot.manifest.items() if key != "author"}
        declared = bot.manifest.get("author")
        owner = owners.get(bot.name.split("@", 1)[0])
        return {"owner": owner or "the organiser (a house bot)", **manifest,
                **({} if declared is None else {"author (declared)": declared})}

    return dataclasses.replace(snap, bots=[dataclasses.replace(bot, manifest=owned(bot)) for bot in snap.bots])


def publish(store: Store, name: str, out: Path) -> BuildReport:
    """Write the league's pages into ``out``: only those that changed since the last publish (the match pages of
    the new matches, the standings, the listings' last pages), through the same incremental writer as
    ``arena site build``; a publish stopped part-way is repaired by the next."""
    snap = public_snapshot(store, name)
    snap.live = snapshot.live_of(snap, LIVE_REFRESH_S, open_ended=True)
    home = home_data.home_page(store, {snap.slug}, {snap.id: snap})
    # Only the league: other tournaments in the same store are the organiser's, not the public's.
    home = dataclasses.replace(home, tournaments=[t for t in home.tournaments if t.name == name])
    return write_site(out, [snap], home, workers=1)


def publish_apart(db: Path, name: str, out: Path) -> None:
    """:func:`publish` in a process of its own that ends with it: a publish reads the whole league, and its peak
    (about 3.6 MB a 1,000 matches) left the server's Python heap that much larger for good, since CPython keeps an
    arena while any object in it lives (docs/SERVER.md, "Memory"). Its pages are the same; an error in it is raised
    here."""
    with ProcessPoolExecutor(1, mp_context=_publishers()) as pool:
        pool.submit(_publish_at, db, name, out).result()


@functools.cache
def _publishers() -> BaseContext:
    """Where publishing processes come from: forked from a server process that imported the site's code once (a
    fork costs milliseconds, a fresh interpreter importing it half a CPU second each publish), which is itself
    started clean rather than forked from the server's threads. spawn where there is no forkserver."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    return context


def _publish_at(db: Path, name: str, out: Path) -> None:
    # Nothing is answered but an error: the report of a whole site's publish names every file written, more than a
    # pipe holds, and a publisher whose server died (and so never reads it) would block writing it for ever.
    store = Store(db, readonly=True, check=False)  # the server checked the file when it opened it
    try:
        publish(store, name, out)
    finally:
        store.close()


def league_href(store: Store, name: str) -> str | None:
    """The league's page within the site, or None before it exists in the store."""
    row = store.tournament(name)
    return None if row is None else urls.tournament_href(urls.slug(name, row["id"], "t"))
