"""The results-site commands: ``arena site build`` and ``arena site serve``, and the build at the end of ``arena run``.

Thin click commands over :func:`arena.site.build.build_site`, registered on the main group in ``arena/cli/main.py``
(kept apart from ``arena/cli/main.py`` so that file stays small). The site is static: ``serve`` is only a convenience
for looking at it on this machine, so it listens on 127.0.0.1 and nowhere else.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from arena.cli.common import ExitCode, db_option, emit_json, fail, json_option, open_store, progress_shown
from arena.site.build import BuildReport, Progress, build_site
from arena.site.html import SITE_DIR
from arena.store import Store

DEFAULT_OUT = Path("results/site")


def site_dir_for(db_path: Path) -> Path:
    """Where a store's site goes by default: ``site/`` beside it (``results/site`` for the default store). A store
    beside the site's own sources (a store at the top of the repository) gets ``results/site`` there instead: a
    build must never write into the templates and assets it is built from."""
    beside = db_path.parent / "site"
    if beside.resolve() == SITE_DIR.resolve() or (beside / "templates").is_dir():
        return db_path.parent / DEFAULT_OUT
    return beside


def build_after_run(store: Store, name: str, live: bool = False, out: Path | None = None) -> BuildReport:
    """The site of one tournament (and the home page), in ``out`` (default: beside the store): what ``arena run``
    does at its end (with a progress bar when ``live``)."""
    with site_progress(live) as progress:
        return warn_corrupt(build_site(store, site_dir_for(store.path) if out is None else out, [name],
                                       progress=progress))


def warn_corrupt(report: BuildReport, shown: int = 5) -> BuildReport:
    """Say on stderr which event logs are there but unreadable (their pages have no replay)."""
    for path in report.corrupt_logs[:shown]:
        click.echo(f"arena: warning: corrupt event log, its match page has no replay: {path}", err=True)
    if len(report.corrupt_logs) > shown:
        click.echo(f"arena: warning: ... and {len(report.corrupt_logs) - shown} more corrupt event logs", err=True)
    return report


@click.group("site")
def site_group() -> None:
    """The results site: static HTML standings, bots, matches and replays, readable from disk or any host."""


@site_group.command("build")
@click.argument("name", required=False)
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Where to write the site (default: site/ beside the store, results/site).")
@click.option("--full", is_flag=True,
              help="Make every page again (default: when the site is there, write only the pages that changed).")
@db_option("The results store (SQLite).")
@json_option("Print the build summary as JSON.")
def build(name: str | None, out_dir: Path | None, full: bool, db_path: Path, as_json: bool) -> None:
    """Build the site of tournament NAME (default: every tournament) from the store.

    A site already built there is updated in place: only the files whose data changed are written, and pages
    that no longer exist are removed (--full makes every page again)."""
    store = open_store(db_path)
    if name is not None and store.tournament(name) is None:
        known = ", ".join(row["name"] for row in store.tournaments()) or "none"
        fail(f"{db_path}: no tournament {name!r} (known: {known})")
    out = out_dir if out_dir is not None else site_dir_for(db_path)
    with site_progress(live=progress_shown(as_json)) as progress:
        report = warn_corrupt(build_site(store, out, None if name is None else [name], full=full, progress=progress))
    if as_json:
        emit_json({"out": str(out), "index": str(report.index), "tournaments": list(report.tournaments),
                   "pages": report.pages, "written": report.written, "removed": report.removed,
                   "seconds": round(report.seconds, 2), "corrupt_logs": list(report.corrupt_logs)})
    else:
        click.echo(f"site: {report.index.resolve()} ({report.pages} files, {report.written} written, "
                   f"{report.seconds:.1f} s)")


@contextlib.contextmanager
def site_progress(live: bool) -> Iterator[Progress | None]:
    """A progress bar of the match pages a build makes, a bar per tournament, on stderr when ``live`` (a
    terminal: in a log file it would be noise) and only when there are enough of them to wait for."""
    if not live:
        yield None
        return
    bars: dict[str, Any] = {}

    def show(name: str, done: int, total: int) -> None:
        if total < BAR_FROM:
            return
        bar = bars.get(name)
        if bar is None:
            bar = bars[name] = click.progressbar(length=total, label=f"{name}: match pages", file=sys.stderr,
                                                 show_eta=True, show_pos=True)
            bar.__enter__()
        bar.update(done - bar.pos)

    try:
        yield show
    finally:
        for bar in bars.values():
            bar.__exit__(None, None, None)


BAR_FROM = 500
"""Match pages from which a build shows a progress bar (fewer take a second or two)."""


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        click.echo(f"{self.address_string()} {format % args}", err=True)


@site_group.command("serve")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True,
              help="Port on 127.0.0.1 (0: any free port).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_OUT,
              show_default=True, help="The built site to serve.")
def serve(port: int, out_dir: Path) -> None:
    """Serve a built site on http://127.0.0.1:PORT/ until Ctrl-C (the site also opens from disk as it is)."""
    if not (out_dir / "index.html").is_file():
        fail(f"{out_dir}: no site here (build it first: arena site build --out {out_dir})")
    handler = functools.partial(_QuietHandler, directory=str(out_dir))
    try:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    except OSError as error:
        fail(f"cannot listen on 127.0.0.1:{port}: {error}", ExitCode.FAILED)
    with server:
        click.echo(f"serving {out_dir} at http://127.0.0.1:{server.server_address[1]}/ (Ctrl-C stops)", err=False)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
