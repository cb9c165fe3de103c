"""Building the results site: :func:`build_site` is the one entry point that reads the store for it (the CLI's
``arena site build``, arena/site/live.py while a run plays, and the league server's public site, arena/server/public.py,
go through it), and :func:`write_site` writes a site from snapshots through :mod:`arena.site.output`, which keeps
what did not change. A build is incremental (each page keyed by what it is made from) and, for a big field, parallel:
match pages are made by a spawned pool of workers a chunk at a time, the other pages meanwhile; the think times and forfeit steps already read are kept in the output directory
(:data:`THINK_FILE`, :data:`STEPS_FILE`). A full build is staged beside the site and swapped in at the end
(:func:`arena.site.output.stage`, :func:`arena.site.output.swap`). Templates and assets live in ``site/`` at the top of
the repository."""

from __future__ import annotations

import gc
import gzip
import json
import multiprocessing
import os
import pickle
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Collection, Container, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from functools import partial
from multiprocessing.pool import Pool
from pathlib import Path
from typing import Any

from arena.match.matchlog import LoadedLog, locate_log
from arena.match.matchview import MatchView
from arena.match.thinktime import Tally
from arena.site import common, moved, output, snapshot, urls
from arena.site import downloads as downloads_mod
from arena.site.html import (
    SITE_DIR,
    TEMPLATE_DIR,
    bot_row_html,
    match_data_js,
    match_index_js,
    render_bot_with,
    render_faults_of,
    render_highlights,
    render_home,
    render_listing,
    render_match,
    render_pair,
    render_standings,
    render_tournament,
    standings_index_js,
)
from arena.site.pages import bot as bot_data
from arena.site.pages import faults as faults_data
from arena.site.pages import highlights as highlights_data
from arena.site.pages import home as home_data
from arena.site.pages import listings as listings_data
from arena.site.pages import match as match_data
from arena.site.pages import pair as pair_data
from arena.site.pages import tournament as tournament_data
from arena.stats.standings import standings_with_confidence
from arena.store import MatchStamp, Store

ASSET_DIR = SITE_DIR / "assets"
PACKAGE_DIR = Path(__file__).resolve().parent.parent
"""The arena package: what a page is made by besides the templates."""
ASSETS = ("style.css", "replay.js", "cardtable.js", "matches.js", "favicon.svg", "search.js", "sort.js", "live.js",
          "filter.js", "rank.js", "watch.js")
PARALLEL_FROM = 500
"""Match pages from which a process pool pays for its start-up (about a second)."""
CHUNK = snapshot.Matches.BLOCK
"""Match pages a worker is given at a time: a block of the matches it reads from the store in one query."""


def match_outputs(snap: snapshot.Snapshot, position: int, version: str) -> dict[str, str]:
    """The files of a match (its page, and its data file when it has a log) with their keys: everything each is
    made from (the match, its neighbours, its log's size and time), so that a rebuild can leave them alone
    without reading the log. Nothing here changes when other matches are added, but the next link of the last
    page; the data file depends on the names and the log only."""
    match = snap.stamps[position]
    # A sealed match has no replay nor log in the site yet (arena/site/common.py's match_view).
    found = None if match.sealed else locate_log(match.log_path, snap.store_dir, snap.name, match.idx)
    source = None if found is None else (found[0], found[1].st_size, found[1].st_mtime_ns)
    names = [snap.bot_link(bot) for bot in match.bot_ids]
    neighbours = tuple(snap.stamps[i].id if 0 <= i < len(snap.stamps) else None for i in (position - 1, position + 1))
    stamp = snap.stamp_keys[position]
    # The tournament's names and rules as their digest, made once (:attr:`arena.site.snapshot.Snapshot.context`),
    # not pickled again for each of 10,000 matches.
    keys = {urls.match_href(snap.slug, match.id): output.key(
        version, snap.context, stamp, neighbours, listings_data.listing_page(snap, position), names, source)}
    if found is not None:
        keys[urls.match_data_href(snap.slug, match.id)] = output.key(version, names, source)
        keys[urls.match_log_href(snap.slug, match.id)] = output.key(version, source, snap.matches.stderr)
    return keys


def match_files(snap: snapshot.Snapshot, position: int, corrupt: list[str] | None = None,
                think: list[tuple[int, Tally]] | None = None,
                moments: list[tuple[int, list[highlights_data.Moment]]] | None = None
                ) -> list[tuple[str, output.Content]]:
    """The files of the match at ``position`` in ``snap.matches`` (its page, and its replay's data file and its
    event log when its log is there and readable); the path of a log that is there but unreadable is added to
    ``corrupt``, each seat's think times of a finished match (bot id, times) to ``think``, and its highlights'
    moments (match id, moments: arena/site/pages/highlights.py) to ``moments``."""
    try:
        match = snap.matches[position]
    except snapshot.MatchGone:
        return []  # dropped from the store since the snapshot: no page (the next build removes its old one)
    view, unreadable = common.match_view(snap, match)
    if unreadable is not None and corrupt is not None:
        corrupt.append(str(unreadable))
    page = match_data.match_page(snap, position, view, unreadable is not None)
    files: list[tuple[str, output.Content]] = [(urls.match_href(snap.slug, match.id), render_match(page, snap.slug))]
    if page.data_href is not None:
        files.append((page.data_href, match_data_js(page)))
    if view is not None and page.log_href is not None:
        files.append((page.log_href, log_download(view, snap.matches.stderr)))
    # A sealed match's think times are counted once its group is over and its page made again: a sum that held it
    # would then be thrown away whole (bots_think), and every log of its bots read again.
    if think is not None and match.status == "done" and not match.sealed:
        think += [(bot_id, page.think[seat] if page.think else Tally(matches={match.id}))
                  for seat, bot_id in enumerate(match.bot_ids)]
    if moments is not None and match.status == "done" and not match.sealed:
        moments.append((match.id, [] if view is None else highlights_data.moments(view, match.id)))
    return files


def log_download(log: LoadedLog | MatchView, stderr: bool) -> output.Content:
    """A match's event log (read, or its view) as the site offers it: the file as it is (linked, not copied,
    where it can be), or without what the bots wrote on stderr (a fault record's ``stderr_tail``, the lines by
    step) for a site that does not show it (the league server's public one)."""
    tails = log.stderr if isinstance(log, MatchView) else b'"stderr_tail"' in log.text or bool(log.debug)
    path = log.log if isinstance(log, MatchView) else os.fspath(log.path)
    if stderr or not tails:
        return output.Linked(path)
    text = log.text if isinstance(log, LoadedLog) else gzip.decompress(Path(path).read_bytes())
    lines = []
    for line in text.splitlines(keepends=True):
        if line.startswith(b'{"t":"stderr"'):
            continue  # a line a bot wrote on stderr, by step: its author's only
        if line.startswith(b'{"t":"fault"'):
            record = json.loads(line)
            record.pop("stderr_tail", None)
            line = json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
        lines.append(line)
    return gzip.compress(b"".join(lines), compresslevel=6, mtime=0)


def tournament_pages(snap: snapshot.Snapshot, think: Mapping[int, Tally] | None = None,
                     bot_pages: bool | None = None, made: Container[str] = frozenset(),
                     bots: Collection[int] | None = None) -> Iterator[tuple[str, Any, Callable[[], str]]]:
    """Every page of one tournament but the match pages and the list of all matches (:func:`write_matches` makes
    those, each page of the list with its matches), as (site-relative path, what the page is made from, the
    function that renders it). A listing's page is made only when it is rendered: what it is made from is its
    matches' stamps (:class:`arena.site.pages.listings.Listing`), so that a rebuild tells the hundreds of unchanged
    pages of a big tournament from the few that changed without making any of them. The bots' own pages show their
    ``think`` times (by bot id); ``bot_pages`` True gives only those and the other pages of their matches, False all
    but those (a full build makes them as the match pages are made and after them, whose logs give the times and
    whose workers give their rows: :attr:`arena.site.snapshot.BuildCache.row_html`), None all; but not the pages of
    bots' matches ``made`` already (:class:`LaterListings`), and with ``bots`` (ids), only those bots' own pages."""
    if bot_pages is not True:
        page = tournament_data.tournament_page(snap)
        yield urls.tournament_href(snap.slug), page, partial(render_tournament, page)
        yield urls.match_index_href(snap.slug), listings_data.match_index_inputs(snap), partial(match_index_js, snap)
        if page.standings_index is not None:
            yield page.standings_index, tournament_data.standings_index(snap), partial(standings_index_js, snap)
            for n in range(2, len(tournament_data.standings_pages(snap)) + 1):
                standings = tournament_data.standings_page(snap, n)
                yield standings.path, standings, partial(render_standings, standings)
        for path, inputs, make in pair_data.pair_pages(snap):
            yield path, inputs, partial(_render_made, render_pair, make)
    for bot in snap.bots:
        if bots is not None and bot.id not in bots:
            continue
        if bot_pages is not False:
            # Keyed on the inputs of its first page of matches, not on that page made: a rebuild reads the matches
            # of the bots whose pages changed only.
            first, *more = bot_data.bot_listings(snap, bot.id)
            bot_page = bot_data.bot_page(snap, bot.id, None, None if think is None else think.get(bot.id))
            yield first.path, (bot_page, first.inputs), partial(render_bot_with, bot_page, first)
            for listing in more:
                if listing.path not in made:
                    yield listing.path, listing.inputs, partial(render_listing, listing)
        if bot_pages is not True and faults_data.faulted_by(snap, bot.id):
            # Made only when its faults changed: it reads the log of each, for the replay step of the forfeit.
            yield (urls.faults_href(snap.slug, bot.slug), faults_data.faults_page_inputs(snap, bot.id),
                   partial(render_faults_of, snap, bot.id))


def _render_made(render: Callable[[Any], str], make: Callable[[], Any]) -> str:
    """A page made only when it is rendered: a rebuild keys it on what it is made from and leaves it unmade."""
    return render(make())


_worker: tuple[snapshot.Snapshot, Path, bool, str, list[listings_data.Listing]] | None = None
_start_failure = "it was never started"


def _start_worker(snap: str, out: Path, staged: bool, version: str) -> None:
    global _worker, _start_failure
    try:
        with open(snap, "rb") as handle:
            unpickled = pickle.load(handle)  # read once per worker, not sent with each chunk
        _worker = (unpickled, out, staged, version, listings_data.match_listings(unpickled))
        gc.freeze()  # kept for the worker's life: its collections leave the snapshot alone
    except Exception as error:  # noqa: BLE001 - raised by its tasks instead (_write_chunk)
        # A pool whose initializer raises starts new workers forever: the build would never end.
        _start_failure = repr(error)


Work = tuple[int, int, dict[str, str] | None]
"""A file of a match, or a page of the list of all matches, to make: (:data:`MATCH` or :data:`LISTING`, the
match's position or the page's number from 1, the keys of the files of it that are stale, or None for all of
them, keyed by whoever makes them)."""
MATCH, LISTING = 0, 1


@dataclass
class WorkDone:
    """What making some of :data:`Work` gave besides its files."""

    written: list[tuple[str, str, int, int]] = field(default_factory=list)
    """The files written: (key, path, size, modification time) for the manifest."""
    corrupt: list[str] = field(default_factory=list)
    """Logs found unreadable."""
    think: list[tuple[int, Tally]] = field(default_factory=list)
    """Each seat's think times of the finished matches made (bot id, its seat's times)."""
    moments: list[tuple[int, list[highlights_data.Moment]]] = field(default_factory=list)
    """The highlights' moments of the finished matches made, by match id."""
    rows: dict[int, snapshot.BotRow] = field(default_factory=dict)
    """The matches made as rows of their bots' listings (:attr:`arena.site.snapshot.BuildCache.row_html`)."""
    pages: int = 0
    """Match pages made."""


def make_work(snap: snapshot.Snapshot, work: Sequence[Work], listings: Sequence[listings_data.Listing], out: Path,
              staged: bool, version: str, made: WorkDone) -> None:
    """Make and write the stale files of ``work`` (:func:`stale_work`) into ``out``, telling ``made``."""
    for kind, number, stale in work:
        if kind == MATCH:
            stale = match_outputs(snap, number, version) if stale is None else stale
            files = match_files(snap, number, made.corrupt, made.think, made.moments)
            row = bot_row_html(snap, number)
            if row is not None:
                made.rows[number] = row
            made.pages += 1
        else:
            listing = listings[number - 1]
            stale = {listing.path: output.key(version, listing.path, listing.inputs)} if stale is None else stale
            files = [(listing.path, render_listing(listing))]
        made.written += [(stale[path], *output.write_file(out, path, content, staged))
                         for path, content in files if path in stale]


def _write_chunk(chunk: Sequence[Work]) -> WorkDone:
    if _worker is None:
        raise RuntimeError(f"a worker of the site build could not start: {_start_failure}")
    snap, out, staged, version, listings = _worker
    made = WorkDone()
    matches = [number for kind, number, _ in chunk if kind == MATCH]
    if matches:
        snap.matches.load(range(min(matches), max(matches) + 1))  # its matches, not the blocks around them
    make_work(snap, chunk, listings, out, staged, version, made)
    # A worker holds one chunk's matches and rows at a time, however big the tournament.
    snap.matches.forget()
    snap.rows.clear()
    return made


Progress = Callable[[str, int, int], None]
"""Told (tournament, match pages made, match pages to make) as a build goes: what ``arena site build`` shows as
a progress bar (the match pages are nearly all of a big build's time)."""


def stale_work(snap: snapshot.Snapshot, manifest: output.Manifest, version: str,
               listings: Sequence[listings_data.Listing]) -> list[list[Work]]:
    """What of the matches' files and of the list of all matches is stale, a page of that list at a time: each
    page with its matches' files first (a build stopped in between leaves no link to a page not yet written), so
    that whoever makes them reads those matches from the store once for both. The fresh ones are kept. Without
    a manifest, all are stale, keyed as they are made: by the workers, not before they can start (a second at
    100,000 matches)."""
    spans: list[list[Work]] = []
    for number, (listing, span) in enumerate(zip(listings, listings_data.listing_spans(snap), strict=True), 1):
        if not manifest.old:
            spans.append([*((MATCH, position, None) for position in span), (LISTING, number, None)])
            continue
        work: list[Work] = []
        for position in span:
            keys = match_outputs(snap, position, version)
            for path, wanted in keys.items():
                if manifest.fresh(path, wanted):
                    manifest.keep(path)
            if len(manifest.new.keys() & keys.keys()) < len(keys):
                work.append((MATCH, position, {path: wanted for path, wanted in keys.items()
                                               if path not in manifest.new}))
        wanted = output.key(version, listing.path, listing.inputs)
        if manifest.fresh(listing.path, wanted):
            manifest.keep(listing.path)
        else:
            work.append((LISTING, number, {listing.path: wanted}))
        if work:
            spans.append(work)
    return spans


def match_pages(spans: Sequence[Sequence[Work]]) -> int:
    """How many match pages ``spans`` (:func:`stale_work`) make."""
    return sum(1 for work in spans for kind, _, _ in work if kind == MATCH)


def _chunks(spans: Sequence[Sequence[Work]]) -> list[list[Work]]:
    """``spans`` as a worker's tasks: about :data:`CHUNK` match pages each, whole pages of the list of all matches
    (their matches are read once, in one query)."""
    chunks: list[list[Work]] = [[]]
    for work in spans:
        if len(chunks[-1]) >= CHUNK:
            chunks.append([])
        chunks[-1] += work
    return chunks


@contextmanager
def _workers(snap: snapshot.Snapshot, manifest: output.Manifest, version: str, count: int) -> Iterator[Pool]:
    """``count`` processes that make match pages of ``snap`` into ``manifest``'s directory, each started with what
    they need of the snapshot; on leaving, they are waited for."""
    # spawn, like the tournament runner: a fork would copy the store's open SQLite connection. What a match page
    # and a listing need of the snapshot (no rating history, standings or totals) is pickled once for all the
    # workers, into a file rather than with the pool's arguments: those are written to each new process in turn,
    # the building process waiting for it to start and read them (a second at 100,000 matches).
    with tempfile.TemporaryDirectory(prefix="arena-site-") as directory:
        needed = os.path.join(directory, "snapshot.pickle")
        with open(needed, "wb") as handle:
            pickle.dump(replace(snap, history={}, standings=[], head_to_head={}, seat_totals={}, faulted=[],
                                shared_wins=Counter(), match_list=[]), handle, protocol=pickle.HIGHEST_PROTOCOL)
        with multiprocessing.get_context("spawn").Pool(count, _start_worker,
                                                       (needed, manifest.out, manifest.staged, version)) as pool:
            yield pool
            # Wait for the workers to exit (leaving the block would only terminate them): a build returns with no
            # process of its own still running, and their CPU time is counted as the build's.
            pool.close()
            pool.join()


def write_matches(snap: snapshot.Snapshot, manifest: output.Manifest, version: str, workers: int,
                  parallel_from: int, meanwhile: Callable[[], None] | None = None,
                  progress: Progress | None = None, think: dict[int, Tally] | None = None,
                  arrived: Callable[[int], None] | None = None,
                  moments: dict[int, list[highlights_data.Moment]] | None = None) -> list[str]:
    """Write the match pages whose key changed (or whose files are not the manifest's), and the pages of the list
    of all matches likewise, each page of it with its matches (:func:`stale_work`): with a process pool when there
    are ``parallel_from`` or more match pages (a full build: a log to read and a replay to render each), each
    worker reading its matches from the store and writing its own files, so that neither the results nor
    megabytes of HTML travel through pipes. ``meanwhile`` is called while the pool works (the other pages of a
    staged build, where the order of writing does not matter), else after the match pages; ``progress`` is told
    how many match pages are made; ``think`` gets the think times of the finished matches made, summed by bot
    id; ``arrived``, with a pool, is told after ``meanwhile`` as the pages are made that every match
    before a position is (:meth:`LaterListings.arrived`); ``moments`` gets the highlights' moments of the finished
    matches made, by match id. Returns the paths of logs found unreadable."""
    listings = listings_data.match_listings(snap)
    spans = stale_work(snap, manifest, version, listings)
    pages = match_pages(spans)
    parallel = workers > 1 and pages >= parallel_from
    made = WorkDone()
    with _workers(snap, manifest, version, min(workers, -(-pages // CHUNK))) if parallel else nullcontext() as pool:
        if pool is None:
            for work in spans:
                make_work(snap, work, listings, manifest.out, manifest.staged, version, made)
                _take(snap, manifest, made, think, moments)
                if progress is not None:
                    progress(snap.name, made.pages, pages)
            if meanwhile is not None:
                meanwhile()
            return made.corrupt
        chunks = _chunks(spans)
        # In order, so that the matches made are those before a position: the workers do not wait for it.
        results = pool.imap(_write_chunk, chunks)
        if meanwhile is not None:
            meanwhile()
        for chunk, upto in zip(results, _made_upto(chunks, len(snap.stamps)), strict=True):
            _take(snap, manifest, chunk, think, moments)
            made.pages += chunk.pages
            made.corrupt += chunk.corrupt
            if progress is not None:
                progress(snap.name, made.pages, pages)
            if arrived is not None:
                arrived(upto)
    return made.corrupt


def _made_upto(chunks: Sequence[Sequence[Work]], matches: int) -> list[int]:
    """For each of ``chunks`` (made in order), the position before which every match is made once it is: up to the
    next chunk's first match (the matches in between are fresh), or all of them after the last."""
    upto = []
    after = matches
    for chunk in reversed(chunks):
        upto.append(after)
        after = next((number for kind, number, _ in chunk if kind == MATCH), after)
    return upto[::-1]


def _take(snap: snapshot.Snapshot, manifest: output.Manifest, made: WorkDone, think: dict[int, Tally] | None,
          moments: dict[int, list[highlights_data.Moment]] | None = None) -> None:
    """Record what ``made`` wrote in the manifest, keep its rows, add its think times to ``think`` (by bot id) and
    its moments to ``moments`` (by match id); cleared for more."""
    for wanted, path, size, mtime_ns in made.written:
        manifest.record(wanted, path, size, mtime_ns)
    snap.cache.row_html.update(made.rows)
    if think is not None:
        # Summed as they come, while the workers work: 400,000 seats in a big league.
        for bot_id, tally in made.think:
            if (total := think.get(bot_id)) is None:
                think[bot_id] = total = Tally()
            total.merge(tally)
    if moments is not None:
        moments.update(made.moments)
    made.written, made.rows, made.think, made.moments = [], {}, [], []


def write_site(out: Path, snaps: Sequence[snapshot.Snapshot],
               home: home_data.HomePage | Callable[[], home_data.HomePage], full: bool = False, workers: int = 1,
               parallel_from: int = PARALLEL_FROM, progress: Progress | None = None,
               rest: Callable[[snapshot.Snapshot], None] | None = None) -> BuildReport:
    """Write the site of ``snaps`` (and ``home``, the home page, or what makes it once they are read) into ``out``,
    leaving the pages of any other tournament there alone. By default only the files whose inputs changed are
    written, in place, and the pages that no longer exist are removed (:mod:`arena.site.output`); with ``full``,
    or when ``out`` has no manifest, every file is made again in a staged copy of the site that is swapped in
    whole. ``rest`` reads what each snapshot still lacks (:func:`arena.site.snapshot.read_rest`), which is done while
    the workers make its match pages."""
    started = time.monotonic()
    # Every page is made by the templates and by the package's code (the site's modules, the narrator, how the
    # store is read): a new version of either makes every page again. Not by the assets: a page links them by
    # name, so a new stylesheet or script is one file written.
    version = output.code_version(TEMPLATE_DIR, PACKAGE_DIR)
    built = [f"t/{snap.slug}/" for snap in snaps]
    output.sweep_stages(out)
    old = output.Manifest.load(out)
    full = full or not old.old
    root = output.stage(out, built) if full else out
    manifest = output.Manifest(root, {} if full else old.old, staged=full)
    mine = ("assets/", "index.html", *built)
    for path, entry in old.old.items():
        if not path.startswith(mine):
            manifest.new[path] = entry  # another tournament's page: this build leaves it as it is
    try:
        for asset in ASSETS:
            content = (ASSET_DIR / asset).read_bytes()
            manifest.put((f"assets/{asset}",), output.key(content), partial(_asset_file, asset, content))
        corrupt: list[str] = []
        for snap in snaps:
            # In place, match pages first and the pages that link to them after: a build stopped between the two
            # leaves no link to a page not yet written. A staged build is swapped in whole, so it makes the other
            # pages while its workers make the match pages.
            thought: dict[int, Tally] = {}  # the think times of the matches this build makes, by bot
            later = LaterListings(snap, manifest, version)
            restore_forfeit_steps(snap, manifest, version)
            found: dict[int, list[highlights_data.Moment]] = {}  # the moments of the matches this build makes
            unreadable = write_matches(snap, manifest, version, workers, parallel_from,
                                       partial(_meanwhile, snap, manifest, version, full, rest),
                                       progress, thought, later.arrived, found)
            corrupt += unreadable
            think = bots_think(snap, manifest, version, thought)
            write_highlights(snap, manifest, version, found)
            # a full build's last step: a bot's own page shows the think times of all its matches
            write_pages(snap, manifest, version, think, True if full else None, later.made)
            save_forfeit_steps(snap, manifest, version)
            write_moved(snap, old.old, manifest, version)
        home = home if isinstance(home, home_data.HomePage) else home()
        manifest.put(("index.html",), output.key(version, home),
                     partial(_page_file, "index.html", partial(render_home, home)))
        removed = manifest.sweep(["assets", *built])
        manifest.save()
        if full:
            output.swap(root, out)
    except BaseException:
        if full:
            shutil.rmtree(root, ignore_errors=True)
        raise
    return BuildReport(out, tuple(snap.name for snap in snaps), len(manifest.new), time.monotonic() - started,
                       tuple(sorted(corrupt)), manifest.written, removed, tuple(manifest.wrote))


def write_moved(snap: snapshot.Snapshot, old_paths: Collection[str], manifest: output.Manifest, version: str) -> None:
    """A redirect at each address the last build left a page of the tournament's bots under that is no longer
    theirs (:mod:`arena.site.moved`), after the pages they point to."""
    slugs = {bot.id: (bot.name, bot.slug) for bot in snap.bots}
    for page in moved.moved_pages(old_paths, snap.slug, slugs, manifest.new):
        manifest.put((page.path,), output.key(version, page),
                     partial(_page_file, page.path, partial(moved.redirect_page, page)))


def write_pages(snap: snapshot.Snapshot, manifest: output.Manifest, version: str,
                think: Mapping[int, Tally] | None = None, bot_pages: bool | None = None,
                made: Container[str] = frozenset(), bots: Collection[int] | None = None) -> None:
    """Write the tournament's pages but its match pages, those whose inputs changed (``think``, ``bot_pages``,
    ``made`` and ``bots`` as :func:`tournament_pages` takes them)."""
    for path, inputs, render in tournament_pages(snap, think, bot_pages, made, bots):
        _put_page(manifest, version, path, inputs, render)
    if bot_pages is not True:
        for path, text in downloads(snap):
            manifest.put((path,), output.key(text), partial(_text_file, path, text))


def _put_page(manifest: output.Manifest, version: str, path: str, inputs: Any, render: Callable[[], str]) -> None:
    """Write the page at ``path`` unless the manifest has it made from the same ``inputs`` by this code."""
    manifest.put((path,), output.key(version, path, inputs), partial(_page_file, path, render))


class LaterListings:
    """The pages of the bots' matches past the first, made while the workers make the match pages: each once every
    match on it is made, its rows then being in :attr:`arena.site.snapshot.BuildCache.row_html`. At 1,000 bots these are
    8,000 pages that the building process would otherwise make alone after the workers finish, one core idle. The
    first page of each is the bot's own page, which waits for the think times of all its matches."""

    def __init__(self, snap: snapshot.Snapshot, manifest: output.Manifest, version: str) -> None:
        self.snap, self.manifest, self.version = snap, manifest, version
        self.made: set[str] = set()
        """The paths of the pages made (:func:`tournament_pages` leaves them out)."""
        self._waiting: list[listings_data.Listing] | None = None

    def arrived(self, upto: int) -> None:
        """Told that the matches before position ``upto`` are made: make the pages that show no later match."""
        if self._waiting is None:
            # Last match last: popped from the end, the page whose matches are made first.
            self._waiting = sorted((listing for bot in self.snap.bots
                                    for listing in bot_data.bot_listings(self.snap, bot.id)[1:]),
                                   key=lambda listing: listing.last, reverse=True)
        while self._waiting and self._waiting[-1].last < upto:
            listing = self._waiting.pop()
            _put_page(self.manifest, self.version, listing.path, listing.inputs, partial(render_listing, listing))
            self.made.add(listing.path)


def _meanwhile(snap: snapshot.Snapshot, manifest: output.Manifest, version: str, full: bool,
               rest: Callable[[snapshot.Snapshot], None] | None) -> None:
    """What a build does while its workers make the match pages: read the rest of the snapshot; in a full build,
    make every page but the match pages and the bots' own."""
    if rest is not None:
        rest(snap)
    if full:
        write_pages(snap, manifest, version, None, False)


def downloads(snap: snapshot.Snapshot) -> list[tuple[str, str]]:
    """The tournament's results to download (:data:`arena.site.downloads.DOWNLOADS`), from what ``arena standings
    --json`` and ``arena matches --json`` give."""
    standings = standings_with_confidence(snap.standings, snap.sure, snap.shown)
    return [(urls.results_href(snap.slug, "results.json"),
             json.dumps(downloads_mod.results_json(snap, standings), ensure_ascii=False, separators=(",", ":"))),
            (urls.results_href(snap.slug, "standings.csv"), downloads_mod.standings_csv(standings)),
            (urls.results_href(snap.slug, "matches.csv"), downloads_mod.matches_csv(snap.match_list))]


THINK_FILE = "think.json"
"""In a tournament's directory of the site: its bots' think times as the last build summed them, and the matches
they are of (:meth:`arena.match.thinktime.Tally.state`), so that a rebuild reads the logs of new matches only."""


def bots_think(snap: snapshot.Snapshot, manifest: output.Manifest, version: str,
               made: Mapping[int, Tally]) -> dict[int, Tally]:
    """Each bot's think times over the tournament's finished matches: those of the matches this build made
    (``made``, by bot id), the sums the last build kept for the others (:data:`THINK_FILE`), and the logs of any match
    counted in neither (read here); the sums are kept for the next build."""
    path = f"t/{snap.slug}/{THINK_FILE}"
    total: dict[int, Tally] = {bot.id: Tally() for bot in snap.bots}
    fresh: set[int] = set()
    for bot_id, tally in made.items():
        total.setdefault(bot_id, Tally()).merge(tally)
        fresh |= tally.matches
    done = {stamp.id for stamp in snap.stamps if stamp.status == "done"}
    for bot_id, kept in _kept_think(manifest, path, version).items():
        # A kept sum is used whole or not at all: of a match made again, or one no longer in the store, it holds
        # what cannot be taken out again.
        if bot_id in total and not kept.matches & fresh and kept.matches <= done:
            total[bot_id].merge(kept)
    for stamp in snap.stamps:
        if stamp.status != "done" or stamp.sealed:  # a sealed one is counted once its group is over
            continue
        # A look-up, not a setdefault with a new Tally for each of a big league's 400,000 seats.
        missing = [seat for seat, bot_id in enumerate(stamp.bot_ids)
                   if bot_id not in total or stamp.id not in total[bot_id].matches]
        if not missing:
            continue
        view = common.match_view(snap, stamp)[0]  # None: its page says the log is missing or corrupt
        seats = [Tally(matches={stamp.id}) for _ in stamp.bot_ids] if view is None else view.tallies_of(stamp.id)
        for seat in missing:
            total.setdefault(stamp.bot_ids[seat], Tally()).merge(seats[seat])
    text = json.dumps({"format": 1, "version": version,
                       "bots": {str(bot_id): tally.state() for bot_id, tally in sorted(total.items())}},
                      separators=(",", ":"))
    manifest.put((path,), output.key(text), partial(_text_file, path, text))
    return total


def _kept_think(manifest: output.Manifest, path: str, version: str) -> dict[int, Tally]:
    """The sums the last build kept, if that build was of this code and the file is what it wrote."""
    entry = manifest.old.get(path)
    if entry is None or not manifest.fresh(path, entry.key):
        return {}
    try:
        kept = json.loads((manifest.out / path).read_text(encoding="utf-8"))
        if kept.get("format") != 1 or kept.get("version") != version:
            return {}
        return {int(bot_id): Tally.from_state(state) for bot_id, state in kept["bots"].items()}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return {}


def write_highlights(snap: snapshot.Snapshot, manifest: output.Manifest, version: str,
                     made: Mapping[int, list[highlights_data.Moment]]) -> None:
    """The tournament's highlights page, from the moments of the matches this build made (``made``, by match id),
    those the last build kept (:data:`arena.site.pages.highlights.MOMENTS_FILE`) of matches still there, and the
    logs of any finished match looked at by neither (read here); the best are kept for the next build."""
    path = f"t/{snap.slug}/{highlights_data.MOMENTS_FILE}"
    done = {stamp.id for stamp in snap.stamps if stamp.status == "done" and not stamp.sealed}
    kept, seen = _kept_moments(manifest, path, version)
    # A kept moment of a match made again is replaced by what this build found in it.
    found = [m for m in kept if m.match_id in done and m.match_id not in made]
    looked = (seen & done) | (set(made) & done)
    for moments in made.values():
        found += moments
    for stamp in snap.stamps:
        if stamp.id in done and stamp.id not in looked:
            view = common.match_view(snap, stamp)[0]
            found += [] if view is None else highlights_data.moments(view, stamp.id)
            looked.add(stamp.id)
    found = highlights_data.best(found)
    text = json.dumps({"format": 1, "version": version, "seen": highlights_data.runs(looked),
                       "moments": highlights_data.to_state(found)}, separators=(",", ":"))
    manifest.put((path,), output.key(text), partial(_text_file, path, text))
    page = highlights_data.highlights_page(snap, found, len(looked))
    _put_page(manifest, version, page.path, page, partial(render_highlights, page))


def _kept_moments(manifest: output.Manifest, path: str, version: str) -> tuple[list[highlights_data.Moment], set[int]]:
    """The moments the last build kept and the matches it looked at, if that build was of this code and the file
    is what it wrote."""
    entry = manifest.old.get(path)
    if entry is None or not manifest.fresh(path, entry.key):
        return [], set()
    try:
        kept = json.loads((manifest.out / path).read_text(encoding="utf-8"))
        if kept.get("format") != 1 or kept.get("version") != version:
            return [], set()
        return highlights_data.from_state(kept["moments"]), highlights_data.unrun(kept["seen"])
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return [], set()


STEPS_FILE = "steps.json"
"""In a tournament's directory of the site: the replay step of each forfeit (:func:`arena.site.common.fault_rows`)
of its faulted matches, with where their logs were and their size and time, so that a rebuild's tables of faults
(the tournament's, each bot's) read the logs of new faults only: at 10,000 matches, hundreds of logs a build."""


def _log_source(snap: snapshot.Snapshot, stamp: MatchStamp) -> list[Any] | None:
    found = locate_log(stamp.log_path, snap.store_dir, snap.name, stamp.idx)
    return None if found is None else [os.fspath(found[0]), found[1].st_size, found[1].st_mtime_ns]


def restore_forfeit_steps(snap: snapshot.Snapshot, manifest: output.Manifest, version: str) -> None:
    """Put the forfeit steps the last build kept (:data:`STEPS_FILE`) in ``snap``'s cache, those of the matches
    whose logs are still the ones read (and if that build was of this code and the file is what it wrote)."""
    path = f"t/{snap.slug}/{STEPS_FILE}"
    entry = manifest.old.get(path)
    if entry is None or not manifest.fresh(path, entry.key):
        return
    try:
        kept = json.loads((manifest.out / path).read_text(encoding="utf-8"))
        if kept.get("format") != 1 or kept.get("version") != version:
            return
        stamps = {stamp.id: stamp for stamp in snap.stamps}
        for match_id, (source, steps) in kept["matches"].items():
            stamp = stamps.get(int(match_id))
            if stamp is not None and source == _log_source(snap, stamp):
                snap.cache.forfeits[stamp.id] = {int(seat): int(step) for seat, step in steps.items()}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return


def save_forfeit_steps(snap: snapshot.Snapshot, manifest: output.Manifest, version: str) -> None:
    """Keep the forfeit steps of ``snap``'s faulted matches that this build knows (:data:`STEPS_FILE`)."""
    path = f"t/{snap.slug}/{STEPS_FILE}"
    matches = {}
    for position in sorted({position for position, _ in snap.faulted}):
        stamp = snap.stamps[position]
        if stamp.sealed:  # its log is not read while sealed: no steps to keep, and none must be kept as found
            continue
        steps = snap.cache.forfeits.get(stamp.id)
        source = None if steps is None else _log_source(snap, stamp)
        if steps is not None and source is not None:
            matches[str(stamp.id)] = [source, {str(seat): step for seat, step in sorted(steps.items())}]
    text = json.dumps({"format": 1, "version": version, "matches": matches}, separators=(",", ":"))
    manifest.put((path,), output.key(text), partial(_text_file, path, text))


def _text_file(path: str, text: str) -> list[tuple[str, output.Content]]:
    return [(path, text)]


def _asset_file(asset: str, content: bytes) -> list[tuple[str, output.Content]]:
    return [(f"assets/{asset}", content)]


def _page_file(path: str, render: Callable[[], str]) -> list[tuple[str, output.Content]]:
    return [(path, render())]


@dataclass(frozen=True)
class BuildReport:
    out: Path
    tournaments: tuple[str, ...]
    pages: int
    """The files of the site this build made or kept."""
    seconds: float
    corrupt_logs: tuple[str, ...] = ()
    """Logs found but unreadable: their match pages say so, and the build warns."""
    written: int = 0
    """The files this build wrote (the others were already what it would write)."""
    removed: int = 0
    """Files removed: pages that no longer exist, leftovers of a build that was stopped."""
    written_files: tuple[str, ...] = ()
    """The site-relative paths of the files written, in the order they were (:attr:`written` of them)."""

    @property
    def index(self) -> Path:
        return self.out / "index.html"


def build_site(store: Store, out: Path, names: Sequence[str] | None = None, workers: int | None = None,
               parallel_from: int = PARALLEL_FROM, full: bool = False, progress: Progress | None = None,
               live_refresh_s: int | None = None) -> BuildReport:
    """Build the home page and every page of the tournaments ``names`` (default: all) into ``out``: only what
    changed since the last build there unless ``full`` (see :func:`write_site`); match pages by up to ``workers``
    processes (default: the CPUs) when ``parallel_from`` or more need writing, ``progress`` told how many. With
    ``live_refresh_s``, the tournaments are being played: their pages say how far they are and reload themselves
    that often (:class:`arena.site.snapshot.Live`; arena/site/live.py builds so while a run plays).

    Raises KeyError naming a tournament the store does not have.
    """
    workers = workers if workers is not None else os.cpu_count() or 1
    wanted = [row["name"] for row in store.tournaments()] if names is None else list(names)
    # Each tournament's standings and totals are read while the workers make its match pages.
    snaps = [snapshot.snapshot(store, name, whole=False) for name in wanted]
    if live_refresh_s is not None:
        for snap in snaps:
            snap.live = snapshot.live_of(snap, live_refresh_s)
    existing = {path.parent.name for path in (out / "t").glob("*/index.html")} if (out / "t").is_dir() else set()

    def home() -> home_data.HomePage:
        return home_data.home_page(store, {snap.slug for snap in snaps} | existing, {snap.id: snap for snap in snaps})

    return write_site(out, snaps, home, full, workers, parallel_from, progress,
                      partial(snapshot.read_rest, store=store))
