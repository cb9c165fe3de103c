"""The live site: ``arena run --live`` keeps the results site current while the matches play.

The end-to-end test holds the run at chosen points with a bot that waits, before it says ready, for a file named
after its seat to appear in its own directory (the sandbox mounts that directory, so the test's file reaches it):
the test sees the site at each hold without racing a clock, and then lets the run go on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from arena.site import build, live, output, snapshot, urls
from arena.store import Store
from tests.sitestore import broken_links, make_store
from tests.support.gate import gate_bot, open_gate

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_bots"


def files(out: Path) -> dict[str, int]:
    """Every file of a site (but the manifest) with its modification time."""
    return {path.relative_to(out).as_posix(): path.stat().st_mtime_ns for path in out.rglob("*")
            if path.is_file() and path.name != output.MANIFEST}


def wait_for(condition, what: str, runner: subprocess.Popen[bytes], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert runner.poll() is None, f"the run ended before {what}"
        assert time.monotonic() < deadline, f"no {what} within {timeout:.0f} s"
        time.sleep(0.05)


def page_says(page: Path, text: str) -> bool:
    """Whether ``page`` says ``text``; a page that is there is always whole (written to a temporary name, renamed
    over the old one): read dozens of times while builds write it, it must never be seen cut off."""
    try:
        html = page.read_text(encoding="utf-8")
    except FileNotFoundError:
        return False
    assert html.rstrip().endswith("</html>"), f"{page} read half-written"
    return text in html


def settled(out: Path) -> bool:
    """Whether the last build into ``out`` is over: its manifest (saved last) describes every file as it is, and
    no temporary file of a build under way is there."""
    manifest = output.Manifest.load(out)
    return bool(manifest.old) and all(manifest.fresh(path, entry.key) for path, entry in manifest.old.items()) \
        and not list(out.rglob("*.tmp"))


@pytest.mark.slow
def test_arena_run_live_shows_the_run_as_it_goes_and_a_final_site_at_the_end(tmp_path: Path) -> None:
    gate = gate_bot(tmp_path / "gate")
    # Slots greedy 0, random 1, gate 2: the schedule is (0,1) (1,0) (0,2) (2,0) (1,2) (2,1), so with one worker
    # the gate holds the run at match index 2 (its seat 1) until go-1, then at index 3 (seat 0) until go-0.
    config = {"name": "watched", "bots": [str(SAMPLES / "greedy"), str(SAMPLES / "random"), str(gate)],
              "players": 2, "repeats": 1, "seed": 4, "rules": {"threshold": 20}, "workers": 1,
              "limits": {"hello_ms": 600_000}}
    path = tmp_path / "watched.yaml"
    path.write_text(yaml.safe_dump(config))
    db, out = tmp_path / "results" / "arena.db", tmp_path / "public"
    runner = subprocess.Popen([sys.executable, "-m", "arena", "run", str(path), "--db", str(db), "--site", str(out),
                               "--live-every", "0", "--json"], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE,
                              # The gate bot waits for files that appear in its directory while it plays: a private
                              # view of the directory is a copy made at its launch (arena/sandbox/views.py).
                              env=os.environ | {"ARENA_PRIVATE_VIEWS": "0"})
    try:
        home = out / "index.html"
        page = out / "t" / "watched" / "index.html"
        wait_for(lambda: page_says(page, "live, 2 of 6 matches") and page_says(home, "2 / 6</td>")
                 and settled(out), "live site at 2 of 6", runner)
        held = files(out)
        text = page.read_text(encoding="utf-8")
        assert 'data-live-refresh="1"' in text and "assets/live.js" in text and "in progress" in text
        assert page_says(home, "assets/live.js")
        bot_page = next((out / "t" / "watched" / "bots").glob("greedy*/index.html"))
        assert page_says(bot_page, "live: being played")
        assert (out / "assets" / "live.js").is_file() and broken_links(out) == []
        ids = [stamp.id for stamp in snapshot.snapshot(Store(db, readonly=True), "watched").stamps]
        first, third = urls.match_href("watched", ids[0]), urls.match_href("watched", ids[2])
        assert "pending" in (out / third).read_text(encoding="utf-8")

        open_gate(gate, 1)
        wait_for(lambda: page_says(page, "live, 3 of 6 matches") and page_says(home, "3 / 6</td>")
                 and settled(out), "live site at 3 of 6", runner)
        after = files(out)
        rewritten = {name for name, mtime in after.items() if held.get(name) != mtime}
        assert not [name for name in rewritten if name.startswith("assets/")]
        assert {"index.html", "t/watched/index.html"} <= rewritten
        # Of the match files, the page of the match just played, no other: its replay's data and its event log
        # wait for the other rotation of its deal, still held by the gate (docs/SECURITY.md, "What a bot can learn").
        assert {name for name in rewritten if name.startswith("t/watched/matches/") and name[18].isdigit()} == {
            third}
        assert "pending" not in (out / third).read_text(encoding="utf-8")
        assert "once every rotation of its deal has been played" in (out / third).read_text(encoding="utf-8")

        open_gate(gate, 0)
        stdout, stderr = runner.communicate(timeout=300)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    assert runner.returncode == 0, stderr.decode()
    assert json.loads(stdout)["site"] == str(home)
    final = page.read_text(encoding="utf-8")
    assert "live.js" not in final and "data-live-refresh" not in final and "finished" in final
    assert "live.js" not in home.read_text(encoding="utf-8")
    assert len(list(out.glob("t/watched/matches/[0-9]*.html"))) == 6 and broken_links(out) == []
    assert (out / urls.match_data_href("watched", ids[2])).is_file()  # its deal played in both seats
    assert (out / urls.match_log_href("watched", ids[2])).is_file()
    assert files(out)[first] == after[first], "the final build leaves old match pages alone too"
    assert not list(out.parent.glob(f".{out.name}.*")), "no stage or temporary file left beside the site"


def test_a_live_build_marks_the_pages_and_the_last_build_unmarks_only_those(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    out = tmp_path / "site"
    build.build_site(store, out, workers=1)
    before = files(out)
    ticks = iter([0.0, 0.0, 0.5, 0.5, 20.0, 20.0, 20.0])
    site = live.LiveSite(store.path, "t", out, every_s=10, clock=lambda: next(ticks))
    assert site.due()
    marked = site.maybe()
    assert marked is not None and not site.due() and site.maybe() is None  # built at 0: not due at 0.5
    # Exactly the pages that say "live": the home page, the tournament's and its bots' (not the match pages or
    # the listings, which a long tournament has thousands of).
    bots = {urls.bot_href("t", bot.slug) for bot in snapshot.snapshot(store, "t").bots}
    assert set(marked.written_files) == {"index.html", "t/t/index.html"} | bots
    assert {name for name, mtime in files(out).items() if before[name] != mtime} == set(marked.written_files)
    assert 'data-live-refresh="10"' in (out / "t/t/index.html").read_text(encoding="utf-8")
    assert site.maybe() is not None and site.builds[-1].written_files == ()  # due at 20; nothing changed
    final = site.finish(store, workers=1)
    assert set(final.written_files) == set(marked.written_files)
    assert "live.js" not in (out / "t/t/index.html").read_text(encoding="utf-8")


def test_run_options_that_contradict_each_other_are_refused(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from arena.cli.main import main

    result = CliRunner().invoke(main, ["run", "demo", "--db", str(tmp_path / "a.db"), "--no-site", "--live"])
    assert result.exit_code == 2 and "--no-site" in result.stderr and "--live" in result.stderr
    result = CliRunner().invoke(main, ["run", "demo", "--live-every", "-1"])
    assert result.exit_code == 2 and "--live-every" in result.stderr



def test_a_league_publish_says_live_with_no_total_and_a_second_writes_nothing(tmp_path: Path) -> None:
    from arena.server.public import LIVE_REFRESH_S, publish

    store = make_store(tmp_path)
    out = tmp_path / "public"
    publish(store, "t", out)
    page = (out / "t/t/index.html").read_text(encoding="utf-8")
    done = len(snapshot.snapshot(store, "t").stamps)
    assert f"live, {done} matches played" in page and f'data-live-refresh="{LIVE_REFRESH_S}"' in page
    assert "assets/live.js" in page and "live: being played" in (out / "index.html").read_text(encoding="utf-8")
    assert publish(store, "t", out).written_files == ()
