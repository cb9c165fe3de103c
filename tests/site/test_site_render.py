"""Rendering and writing the results site (arena/site/html.py, build.py, output.py) and its commands (arena site
build/serve, and the build at the end of arena run): every page is written, every link resolves, untrusted text is
escaped."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from html import escape as html_escape
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from arena.cli.main import main
from arena.match import matchview
from arena.match.matchlog import load
from arena.match.matchview import MatchView
from arena.site import build as site_build
from arena.site import common, output, snapshot, urls
from arena.site import html as site_html
from arena.site.pages import listings as listings_data
from arena.store import Store, StoredMatch
from tests.sigint import default_sigint
from tests.sitestore import STDERR, broken_links, fill_store, make_store

ROOT = Path(__file__).resolve().parents[2]
EVIL = "<script>alert('name')</script>"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, Path, site_build.BuildReport]:
    directory = tmp_path_factory.mktemp("built")
    store = make_store(directory)
    fill_store(store, name="evil", bots=(EVIL, "plain"), repeats=3, logs=True)
    out = directory / "site"
    return store, out, site_build.build_site(store, out)


def test_every_page_is_written(built: tuple[Store, Path, site_build.BuildReport]) -> None:
    store, out, report = built
    assert report.index == out / "index.html" and report.index.is_file()
    assert set(report.tournaments) == {"t", "evil"}
    for snap in (snapshot.snapshot(store, "t"), snapshot.snapshot(store, "evil")):
        assert (out / urls.tournament_href(snap.slug)).is_file()
        assert (out / urls.matches_href(snap.slug)).is_file()
        for bot in snap.bots:
            assert (out / urls.bot_href(snap.slug, bot.slug)).is_file()
        for match in snap.matches:
            assert (out / urls.match_href(snap.slug, match.id)).is_file()
    # Two tournaments in one store: the second's ids are not its schedule positions, and its pages go by the ids.
    evil = snapshot.snapshot(store, "evil").matches[0]
    assert evil.id != evil.idx + 1
    heading = (out / urls.match_href(snapshot.snapshot(store, "evil").slug, evil.id)).read_text(encoding="utf-8")
    assert f"<h1>Match #{evil.id} " in heading and f"matches/{evil.id}.html" in urls.match_href("x", evil.id)
    assert (out / "assets" / "style.css").is_file() and (out / "assets" / "replay.js").is_file()
    written = [p for p in out.rglob("*") if p.is_file() and p.name != output.MANIFEST]
    assert len(written) == report.pages


def test_every_link_resolves(built: tuple[Store, Path, site_build.BuildReport]) -> None:
    _, out, _ = built
    assert broken_links(out) == []


def test_pages_have_accessible_tables_and_no_external_resources(
        built: tuple[Store, Path, site_build.BuildReport]) -> None:
    _, out, _ = built
    for page in out.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        assert html.count("<table") == html.count("<caption>"), page
        assert "<th>" not in html, f"{page}: a header cell without scope"
        assert not re.search(r'(?:src|href)="(?:https?:)?//', html), f"{page}: an external resource"
        assert 'aria-label="Breadcrumb"' in html


def test_untrusted_names_and_stderr_are_escaped(built: tuple[Store, Path, site_build.BuildReport]) -> None:
    store, out, _ = built
    snap = snapshot.snapshot(store, "evil")
    evil_bot = next(bot for bot in snap.bots if bot.name == EVIL)
    assert evil_bot.slug.startswith("_b")
    assert "<script>alert" not in (out / "index.html").read_text(encoding="utf-8")
    pages = [out / urls.tournament_href(snap.slug), out / urls.bot_href(snap.slug, evil_bot.slug)]
    pages += [out / urls.match_href(snap.slug, m.id) for m in snap.matches]
    for page in pages:
        html = page.read_text(encoding="utf-8")
        assert "<script>alert" not in html, page
        assert "&lt;script&gt;alert(&#39;name&#39;)" in html or "\\u003cscript\\u003e" in html, page
    faulty = out / urls.match_href(snap.slug, snap.matches[4].id)
    html = faulty.read_text(encoding="utf-8")
    assert "RuntimeError: &lt;script&gt;alert(&#39;stderr&#39;)&lt;/script&gt;" in html
    # Faults are shown with their reason code, on the match page and in the tournament's table of faults.
    assert '<code class="reason">crash.exit</code>' in html
    assert '<code class="reason">crash.exit</code>' in (out / urls.tournament_href(snap.slug)).read_text("utf-8")
    # The replay's data file cannot close a script element, and holds the name as it is.
    loaded = re.search(r'<script src="(\d+\.js)"></script>', html)  # next to its page
    assert loaded is not None
    script = (faulty.parent / loaded.group(1)).read_text(encoding="utf-8")
    assert "<" not in script and script.startswith("window.arenaMatch = ") and script.endswith(";\n")
    assert json.loads(script[len("window.arenaMatch = "):-2])["names"][0] == EVIL
    assert STDERR not in html


def test_a_parallel_build_writes_the_same_site(built: tuple[Store, Path, site_build.BuildReport],
                                               tmp_path: Path) -> None:
    store, serial, report = built
    parallel = site_build.build_site(store, tmp_path / "parallel", workers=2, parallel_from=1)
    assert parallel.pages == report.pages
    for page in serial.rglob("*"):
        if page.is_file() and page.name != output.MANIFEST:
            assert (tmp_path / "parallel" / page.relative_to(serial)).read_bytes() == page.read_bytes(), page
    # Made by the workers (the bots' pages from a snapshot sent in pieces), every file has the key the building
    # process gives it: a rebuild keeps them all.
    keys = [{path: entry[0] for path, entry in json.loads((site / output.MANIFEST).read_bytes())["files"].items()}
            for site in (serial, tmp_path / "parallel")]
    assert keys[0] == keys[1]
    assert site_build.build_site(store, tmp_path / "parallel", workers=2, parallel_from=1).written == 0


def test_match_page_without_a_log_says_so(tmp_path: Path) -> None:
    store = make_store(tmp_path, limit=2, logs=False)
    report = site_build.build_site(store, tmp_path / "site")
    html = (report.out / "t/t/matches/1.html").read_text(encoding="utf-8")  # the first match: id 1
    assert "event log of this match is missing" in html and "match-data" not in html
    assert "Places" in html and broken_links(report.out) == []


def test_rebuilding_one_tournament_keeps_the_others_and_drops_stale_pages(tmp_path: Path) -> None:
    store = make_store(tmp_path, limit=4)
    fill_store(store, name="other", bots=("x", "y"), repeats=1, logs=False)
    out = tmp_path / "site"
    site_build.build_site(store, out)
    stale = out / "t" / "t" / "matches" / "999.html"
    stale.write_text("old")
    report = site_build.build_site(store, out, ["t"])
    assert report.tournaments == ("t",)
    assert not stale.exists() and (out / "t" / "other" / "index.html").is_file()
    assert 'href="t/other/index.html"' in (out / "index.html").read_text(encoding="utf-8")
    fresh = tmp_path / "fresh"
    site_build.build_site(store, fresh, ["other"])
    home = (fresh / "index.html").read_text(encoding="utf-8")
    assert 'href="t/t/index.html"' not in home and "arena site build t" in home
    assert broken_links(fresh) == []


def test_cli_site_build(tmp_path: Path) -> None:
    make_store(tmp_path, limit=3)
    db = tmp_path / "arena.db"
    result = CliRunner().invoke(main, ["site", "build", "--db", str(db), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["out"] == str(tmp_path / "site") and summary["tournaments"] == ["t"]
    assert Path(summary["index"]).is_file()
    result = CliRunner().invoke(main, ["site", "build", "t", "--db", str(db), "--out", str(tmp_path / "x")])
    assert result.exit_code == 0 and (tmp_path / "x" / "t" / "t" / "index.html").is_file()
    assert "site: " in result.stdout
    result = CliRunner().invoke(main, ["site", "build", "nope", "--db", str(db)])
    assert result.exit_code == 2 and "no tournament 'nope' (known: t)" in result.stderr
    result = CliRunner().invoke(main, ["site", "build", "--db", str(tmp_path / "none.db")])
    assert result.exit_code == 2 and "no results store" in result.stderr


def test_cli_site_serve_listens_on_localhost(tmp_path: Path) -> None:
    make_store(tmp_path, limit=1)
    site_build.build_site(Store(tmp_path / "arena.db"), tmp_path / "site")
    process = subprocess.Popen([sys.executable, "-m", "arena", "site", "serve", "--port", "0", "--out",
                                str(tmp_path / "site")], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               preexec_fn=default_sigint)  # noqa: PLW1509
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert url is not None, line
        with urllib.request.urlopen(url.group(0) + "t/t/index.html", timeout=10) as response:
            assert response.status == 200 and b"Standings" in response.read()
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)  # a bound on a hang, far from the normal exit: load has taken it past 10 s
    result = CliRunner().invoke(main, ["site", "serve", "--out", str(tmp_path / "empty")])
    assert result.exit_code == 2 and "no site here" in result.stderr


@pytest.mark.slow
def test_arena_run_builds_the_site_unless_told_not_to(tmp_path: Path) -> None:
    config = {"name": "small", "bots": [str(ROOT / "sample_bots" / "greedy"), str(ROOT / "sample_bots" / "random")],
              "players": 2, "repeats": 1, "seed": 2, "rules": {"threshold": 20}, "workers": 2}
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(config))
    db = tmp_path / "results" / "arena.db"
    result = CliRunner().invoke(main, ["run", str(path), "--db", str(db), "--no-site", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["site"] is None and not (tmp_path / "results" / "site").exists()
    # Each match's log has its view beside it (arena/match/matchview.py), made by the worker that played it.
    logs = sorted((tmp_path / "results" / "logs" / "small").glob("*.jsonl.gz"))
    assert logs and all(matchview.read_view(os.fspath(log), log.stat()) == matchview.derive(load(log), 2)
                        for log in logs)
    result = CliRunner().invoke(main, ["run", str(path), "--db", str(db)])
    assert result.exit_code == 0, result.output
    index = tmp_path / "results" / "site" / "index.html"
    assert f"site: {index}" in result.stderr and index.is_file()
    assert (tmp_path / "results" / "site" / "t" / "small" / "matches" / "1.html").is_file()  # match 1 (its id)
    assert broken_links(tmp_path / "results" / "site") == []
    assert os.path.getsize(tmp_path / "results" / "site" / "t" / "small" / "matches" / "1.html") > 1000


def test_a_store_beside_the_site_sources_never_builds_into_them(tmp_path: Path) -> None:
    """``--db`` without ``--out`` for a store at the top of a checkout (where ``site/`` holds the templates and
    assets): the site goes to ``results/site`` there, and the source folder is left exactly as it was."""
    sources = tmp_path / "site"
    shutil.copytree(site_html.SITE_DIR, sources)
    before = sorted((p.relative_to(sources), p.read_bytes()) for p in sources.rglob("*") if p.is_file())
    make_store(tmp_path, limit=2)
    result = CliRunner().invoke(main, ["site", "build", "--db", str(tmp_path / "arena.db"), "--json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["out"] == str(tmp_path / "results" / "site")
    assert (tmp_path / "results" / "site" / "t" / "t" / "index.html").is_file()
    assert sorted((p.relative_to(sources), p.read_bytes()) for p in sources.rglob("*") if p.is_file()) == before


def test_small_things_a_reader_sees(built: tuple[Store, Path, site_build.BuildReport]) -> None:
    """One number per match, players in its title, the tournament in the matches list's title, settings as a table,
    no absolute paths of the organiser's machine, and a favicon on every page."""
    store, out, _ = built
    snap = snapshot.snapshot(store, "t")
    match = snap.matches[1]
    html = (out / urls.match_href(snap.slug, match.id)).read_text(encoding="utf-8")
    names = " v ".join(snap.bot_link(bot)[0] for bot in match.bot_ids)
    assert f"<title>Match #{match.id}: {names} · t · arena</title>" in html
    assert f"arena show {match.id}" in html and f"Match #{match.idx}<" not in html
    listing = (out / urls.matches_href(snap.slug)).read_text(encoding="utf-8")
    assert "<title>All matches of t · arena</title>" in listing
    assert f">#{match.id}</a>" in listing
    tournament = (out / urls.tournament_href(snap.slug)).read_text(encoding="utf-8")
    rating = tournament[tournament.index('<th scope="row">rating</th>'):]
    assert rating.startswith('<th scope="row">rating</th><td><dl class="nested">') and "{&#34;" not in tournament
    for bot in snap.bots:
        page = (out / urls.bot_href(snap.slug, bot.slug)).read_text(encoding="utf-8")
        assert bot.manifest["directory"] == f"/bots/{bot.name}" and f"/bots/{bot.name}<" not in page
        assert f"<th scope=\"row\">directory</th><td><code>{bot.name}</code>" in page
    assert (out / "assets" / "favicon.svg").is_file()
    for page in out.rglob("*.html"):
        assert 'rel="icon" href="' in page.read_text(encoding="utf-8"), page


def _files(out: Path) -> dict[str, tuple[bytes, int]]:
    """Every file of a site but its manifest: content and modification time."""
    return {p.relative_to(out).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in out.rglob("*") if p.is_file() and p.name != output.MANIFEST}


def _same_as_a_full_build(store: Store, out: Path, scratch: Path) -> None:
    full = site_build.build_site(store, scratch, full=True)
    assert {path: content for path, (content, _) in _files(out).items()} == \
        {path: content for path, (content, _) in _files(scratch).items()}
    assert full.written == full.pages


def test_a_rebuild_writes_exactly_the_files_that_changed(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    out = tmp_path / "site"
    first = site_build.build_site(store, out)
    assert first.written == first.pages and (out / output.MANIFEST).is_file()
    # Nothing changed: nothing written.
    before = _files(out)
    again = site_build.build_site(store, out)
    assert (again.written, again.removed, again.pages) == (0, 0, first.pages) and _files(out) == before
    # A new tournament and two matches gone from the first: the new pages, the home page and the first
    # tournament's pages that show those matches are written, the gone matches' pages removed, nothing else.
    fill_store(store, name="u", bots=("delta", "epsilon"), repeats=1, logs=True)
    snap = snapshot.snapshot(store, "t")
    gone = snap.matches[-2:]
    store.drop_matches(snap.id, [m.idx for m in gone])
    report = site_build.build_site(store, out)
    after = _files(out)
    rewritten = {path for path, (_, mtime) in after.items() if path not in before or before[path][1] != mtime}
    changed = {path for path, (content, _) in after.items() if before.get(path, (None,))[0] != content}
    assert rewritten == changed and report.written == len(changed)
    assert "index.html" in changed and any(path.startswith("t/u/") for path in changed)
    assert not any(path.startswith("t/t/matches/") and path[len("t/t/matches/"):][0].isdigit()
                   for path in changed - {urls.match_href("t", snap.matches[-3].id)}), "match pages left alone"
    for match in gone:
        assert urls.match_href("t", match.id) not in after and urls.match_data_href("t", match.id) not in after
        assert urls.match_log_href("t", match.id) not in after
    assert report.removed == 3 * len(gone)  # each a page, a data file and its event log to download
    kept = snap.matches[0]
    log = common.match_log(snap, kept)[0]
    assert log is not None  # the event log to download is the runner's file, linked (one file system here)
    assert (out / urls.match_log_href("t", kept.id)).stat().st_ino == log.path.stat().st_ino
    _same_as_a_full_build(store, out, tmp_path / "full")


def test_a_rebuild_repairs_files_deleted_or_changed_by_hand(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    out = tmp_path / "site"
    site_build.build_site(store, out)
    snap = snapshot.snapshot(store, "t")
    (out / urls.match_href("t", snap.matches[0].id)).unlink()
    (out / urls.match_data_href("t", snap.matches[1].id)).write_text("broken", encoding="utf-8")
    (out / urls.matches_href("t")).write_text("<p>junk</p>", encoding="utf-8")
    (out / "t" / "t" / "stray.html").write_text("left by something else", encoding="utf-8")
    report = site_build.build_site(store, out)
    # Exactly the three damaged files are written again, and the stray removed.
    assert (report.written, report.removed) == (3, 1)
    _same_as_a_full_build(store, out, tmp_path / "full")
    # A lost manifest: everything is made again (in a staged copy), and the site is whole.
    (out / output.MANIFEST).unlink()
    assert site_build.build_site(store, out).written == report.pages
    _same_as_a_full_build(store, out, tmp_path / "full2")


def test_site_build_full_flag_and_json(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    db = str(store.path)
    runner = CliRunner()
    first = runner.invoke(main, ["site", "build", "--db", db, "--json"], catch_exceptions=False)
    assert first.exit_code == 0, first.stderr
    summary = json.loads(first.stdout)
    assert summary["written"] == summary["pages"] > 10
    again = json.loads(runner.invoke(main, ["site", "build", "--db", db, "--json"]).stdout)
    assert again["written"] == 0
    forced = json.loads(runner.invoke(main, ["site", "build", "--db", db, "--json", "--full"]).stdout)
    assert forced["written"] == forced["pages"] == summary["pages"]


def _build_killed_part_way(db: Path, out: Path, written: Path, *args: str) -> None:
    """Start ``arena site build`` in a real process and SIGKILL it as soon as it has written a match page into
    ``written`` (the stage of a full build, or the site itself), so that it dies in the middle of its work."""
    build = subprocess.Popen([sys.executable, "-m", "arena", "site", "build", "--db", str(db), "--out", str(out), *args],
                             cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while build.poll() is None and not any(written.glob("t/*/matches/[0-9]*.html")):
            written = next(out.parent.glob(f".{out.name}.{build.pid}-*.tmp"), written)
            time.sleep(0.005)  # a look every few ms: the build writes its match pages for a good part of a second
        build.send_signal(signal.SIGKILL)
    finally:
        assert build.wait(timeout=60) == -signal.SIGKILL, "the build ended before it could be killed"


@pytest.mark.slow
def test_a_build_killed_part_way_leaves_a_whole_site_and_the_next_build_repairs_it(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    out = tmp_path / "site"
    # A full build killed: the site is not there yet (its stage was), and the next build makes it whole and
    # removes the dead build's stage.
    _build_killed_part_way(store.path, out, tmp_path / "no such stage yet", "--full")
    assert not out.exists() and list(tmp_path.glob(".site.*.tmp"))
    site_build.build_site(store, out)
    assert not list(tmp_path.glob(".site.*")) and broken_links(out) == []
    _same_as_a_full_build(store, out, tmp_path / "full")
    # An incremental build killed while it writes a new tournament's pages in place: the old manifest still
    # stands, so the next build finds what the killed one wrote, keeps what is right and finishes the rest.
    before = json.loads((out / output.MANIFEST).read_text(encoding="utf-8"))
    fill_store(store, name="u", bots=("delta", "epsilon", "zeta"), repeats=8, logs=True)
    _build_killed_part_way(store.path, out, out)
    assert json.loads((out / output.MANIFEST).read_text(encoding="utf-8")) == before
    report = site_build.build_site(store, out)
    assert report.written > 0 and not list(out.rglob(".*.tmp")) and broken_links(out) == []
    _same_as_a_full_build(store, out, tmp_path / "full2")


@pytest.mark.parametrize("workers", [1, 2])
def test_a_build_tells_its_progress(tmp_path: Path, workers: int) -> None:
    # What arena site build's progress bar shows: the match pages made so far, of those to make, rising to all.
    store = make_store(tmp_path)
    told: list[tuple[str, int, int]] = []
    site_build.build_site(store, tmp_path / "site", workers=workers, parallel_from=4,
                      progress=lambda name, done, total: told.append((name, done, total)))
    matches = len(snapshot.snapshot(store, "t").stamps)
    assert told and {(name, total) for name, _, total in told} == {("t", matches)}
    assert [done for _, done, _ in told] == sorted(done for _, done, _ in told) and told[-1][1] == matches
    told.clear()
    site_build.build_site(store, tmp_path / "site", workers=workers, progress=lambda *args: told.append(args))
    assert told == []  # nothing to make: nothing to tell


def test_a_new_stylesheet_is_one_file_written_and_the_code_version_covers_the_package(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Pages link the assets by name: a new asset is that file written, not every page again. The pages' version
    # is the templates' and the whole package's (the narrator's wording is on every match page).
    assets = tmp_path / "assets"
    shutil.copytree(site_build.ASSET_DIR, assets)
    monkeypatch.setattr(site_build, "ASSET_DIR", assets)
    store = make_store(tmp_path)
    out = tmp_path / "site"
    site_build.build_site(store, out)
    (assets / "style.css").write_text((assets / "style.css").read_text() + "\n/* darker */\n", encoding="utf-8")
    again = site_build.build_site(store, out)
    assert (again.written, again.removed) == (1, 0)
    assert (out / "assets" / "style.css").read_text(encoding="utf-8").endswith("/* darker */\n")
    narrator = tmp_path / "narrate.py"
    narrator.write_text("A = 1\n")
    before = output.code_version(narrator)
    package = site_build.PACKAGE_DIR
    assert (package / "game" / "narrate.py").is_file() and (package / "site" / "pages" / "match.py").is_file()
    narrator.write_text("A = 2\n")
    output.code_version.cache_clear()
    assert output.code_version(narrator) != before


def test_a_version_that_left_the_league_is_marked_in_the_standings(tmp_path: Path) -> None:
    store = make_store(tmp_path, limit=6, logs=False)
    bots = {row["name"]: int(row["id"]) for row in store.bots(1)}
    store.set_active(1, [bots["alpha"], bots["gamma"]])  # beta's entry is gone from the league
    html = (site_build.build_site(store, tmp_path / "site").out / "t/t/index.html").read_text(encoding="utf-8")
    assert html.count("(left the league)") == 1
    assert re.search(r">beta</a> <span class=\"unit left\">\(left the league\)", html)


def _fault_table_links(html: str) -> list[tuple[int, str]]:
    """The (match id, replay step) each row of a page's table of faults links to (a link without a step fails)."""
    table = html[html.index('<table class="faults">'):]
    table = table[:table.index("</table>")]
    rows = re.findall(r'<th scope="row"><a href="([^"]*)">#(\d+)</a>', table)
    found = [re.fullmatch(r"(?:\.\./)*t/[^/]+/matches/(\d+)\.html#step=(\d+)", href) for href, _ in rows]
    assert all(found) and rows, rows
    return sorted((int(hit.group(1)), hit.group(2)) for hit in found if hit)


def test_faults_pages_forfeits_and_the_wording_of_the_standings(
        built: tuple[Store, Path, site_build.BuildReport]) -> None:
    """Every fault reachable from its bot's faults page, each linked to its replay step; a match with a forfeit
    says rule 8.6 in its result's caption (one without does not); the standings say "placed above" and never round
    a probability up to 100%."""
    store, out, _ = built
    snap = snapshot.snapshot(store, "t")
    tournament = (out / urls.tournament_href(snap.slug)).read_text(encoding="utf-8")
    for bot in snap.bots:
        faults = [(m, p) for m in snap.matches for _, b, p in snapshot.seated(m) if b == bot.id and p and p.fault]
        path = out / urls.faults_href(snap.slug, bot.slug)
        assert path.is_file() == bool(faults)
        if not faults:
            continue
        html = path.read_text(encoding="utf-8")
        steps = re.findall(r'href="\.\./\.\./matches/(\d+)\.html#step=(\d+)"', html)
        assert {int(match) for match, _ in steps} == {m.id for m, _ in faults}
        for match, step in set(steps):
            log, _ = common.match_log(snap, next(m for m in snap.matches if m.id == int(match)))
            assert log is not None and log.events[int(step) - 1]["type"] == "forfeit"
        assert f"×{len(faults)}</strong>" in html and "crash.exit" in html and "Faults by the round" in html
        # Reachable from the bot's page and from the tournament's.
        faults_link = f'href="faults.html">Every fault of {bot.name} ({len(faults)})</a>'
        bot_html = (out / urls.bot_href(snap.slug, bot.slug)).read_text(encoding="utf-8")
        assert faults_link in bot_html
        assert f'bots/{bot.slug}/faults.html">{bot.name} ({len(faults)})</a>' in tournament
        # The bot page's table of its latest faults links each to its step too.
        assert _fault_table_links(bot_html) == sorted(
            (m.id, dict(steps)[str(m.id)]) for m, _ in faults[-common.FAULTS_SHOWN:])
    # So does the tournament page's table of the latest faults (every fault here: fewer than it shows).
    everyone = [m for m in snap.matches for _, _, p in snapshot.seated(m) if p and p.fault]
    assert 0 < len(everyone) <= common.FAULTS_SHOWN
    linked = _fault_table_links(tournament)
    assert sorted(linked) == sorted((m.id, str(matchview.forfeit_steps(common.match_log(snap, m)[0].events)[1]))
                                    for m in everyone)
    forfeited = next(m for m in snap.matches if any(p and p.fault for _, _, p in snapshot.seated(m)))
    clean = next(m for m in snap.matches if not any(p and p.fault for _, _, p in snapshot.seated(m)))
    html = (out / urls.match_href(snap.slug, forfeited.id)).read_text(encoding="utf-8")
    assert "(rule 8.6)" in html and "ranks below every player that did not, eliminated ones included" in html
    assert 'data-forfeit>forfeited in round 2</span>' in html and ">see it in the replay</a>" in html
    assert "rule 8.6" not in (out / urls.match_href(snap.slug, clean.id)).read_text(encoding="utf-8")
    # The standings: P(above next) as the CLI prints it, the rank as the CLI's (the 95% interval, or "-" with the
    # reason when there are too few deals), head to head in places.
    assert "placed above – tied – below" in tournament and "wins – ties – losses" not in tournament
    cells = re.findall(r'<td class="num opt pnext[^"]*">([^<]*)</td>', tournament)
    assert cells == [html_escape(r.p_text) for r in snap.standing_rows]
    ranks = re.findall(r'<td class="num rank"[^>]*>([^<]*)</td>', tournament)
    assert ranks == [r.shared_rank if r.shared_rank == "-" else r.shared_rank.replace("-", "–")
                     for r in snap.standing_rows]
    assert snap.shown.note is not None and f"Not enough data: {snap.shown.note}." in tournament
def test_match_index_is_written_escaped_and_linked(built: tuple[Store, Path, site_build.BuildReport]) -> None:
    store, out, _ = built
    for name in ("t", "evil"):
        snap = snapshot.snapshot(store, name)
        text = (out / urls.match_index_href(snap.slug)).read_text(encoding="utf-8")
        prefix = "window.arenaIndex = "
        assert text.startswith(prefix) and text.endswith(";\n")
        assert "<" not in text and ">" not in text  # no bot's name can close a script element
        assert json.loads(text[len(prefix):-2]) == listings_data.match_index(snap)
        # Every listing's filter names the index relative to itself.
        pages = [out / urls.matches_href(snap.slug), *(out / urls.bot_href(snap.slug, b.slug) for b in snap.bots)]
        for page in pages:
            found = re.search(r'data-index="([^"]+)"', page.read_text(encoding="utf-8"))
            assert found is not None, page
            assert (page.parent / found.group(1)).resolve() == (out / urls.match_index_href(snap.slug)).resolve()


def test_a_rebuild_reads_no_log_for_the_steps_of_faults_it_knew(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tables of faults link each to its replay step, read from the match's log: a rebuild takes the steps the
    last build kept (site_build.STEPS_FILE, with each log's size and time) rather than read hundreds of logs again."""
    store = make_store(tmp_path)
    out = tmp_path / "site"
    site_build.build_site(store, out)
    snap = snapshot.snapshot(store, "t")
    faulted = {snap.stamps[position].id for position, _ in snap.faulted}
    kept = json.loads((out / "t" / "t" / site_build.STEPS_FILE).read_text(encoding="utf-8"))["matches"]
    assert faulted and {int(match) for match in kept} == faulted
    read: list[int] = []
    real = common.match_view

    def counted(snap: snapshot.Snapshot, match: StoredMatch) -> tuple[MatchView | None, Path | None]:
        read.append(match.id)  # a match's log, or its view (arena/match/matchview.py)
        return real(snap, match)

    monkeypatch.setattr(common, "match_view", counted)
    before = _files(out)
    assert site_build.build_site(store, out).written == 0 and _files(out) == before
    assert not set(read) & faulted
    # Without the steps kept, the build reads them (the counting sees it).
    (out / "t" / "t" / site_build.STEPS_FILE).unlink()
    site_build.build_site(store, out)
    assert set(read) & faulted


def test_a_worker_that_cannot_start_fails_the_build_instead_of_hanging_it(monkeypatch: pytest.MonkeyPatch,
                                                                         tmp_path: Path) -> None:
    # A process pool whose initializer raises starts new workers forever: the worker keeps why it failed and its
    # first task raises it, which ends the build with that reason.
    monkeypatch.setattr(site_build, "_worker", None)
    monkeypatch.setattr(site_build, "_start_failure", site_build._start_failure)
    (tmp_path / "snapshot.pickle").write_bytes(b"not a snapshot")
    site_build._start_worker(str(tmp_path / "snapshot.pickle"), tmp_path / "site", staged=True, version="v")
    with pytest.raises(RuntimeError, match=r"a worker of the site build could not start: UnpicklingError"):
        site_build._write_chunk([])


