"""Match views (arena/match/matchview.py): what the site derives from a match's log, made where the match is played and
kept beside the log. A site built from views is the site built from the logs alone, byte for byte; a view that is
stale, corrupt, of a newer format or missing is never used, and the log is read instead; a read-only store still
builds. (That ``arena run`` leaves a view beside each log: tests/site/test_site_render.py, the build after a run.)"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from arena.match import matchview
from arena.match.matchlog import LoadedLog, load
from arena.site import build, common, output, snapshot, urls
from arena.site.pages import match as match_data
from arena.store import Store
from tests.sitestore import fill_store, make_store


def site_files(out: Path) -> dict[str, bytes]:
    """Every file of a built site but its manifest (which holds the times the files were written)."""
    return {os.fspath(path.relative_to(out)): path.read_bytes() for path in sorted(out.rglob("*"))
            if path.is_file() and path.name != output.MANIFEST}


def views_of(store_dir: Path) -> list[Path]:
    return sorted(store_dir.rglob(f"*{matchview.SUFFIX}"))


def tamper(view: Path, **changes: Any) -> None:
    """Rewrite a view file with ``changes`` to its JSON (what a build would show, were it to use it)."""
    content = json.loads(gzip.decompress(view.read_bytes()))
    content.update(changes)
    view.write_bytes(gzip.compress(json.dumps(content).encode()))


def counting_loads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The logs read from now on, by the views' module and by the site's (a single-process build)."""
    read: list[Path] = []
    real = matchview.load

    def counted(path: Path) -> LoadedLog:
        read.append(Path(path))
        return real(path)

    monkeypatch.setattr(matchview, "load", counted)
    monkeypatch.setattr(common, "load", counted)
    return read


@pytest.fixture
def store(tmp_path: Path) -> Store:
    """Two tournaments with logs and think times: one of bots with slugs for names (the runner's), one with a name
    that is not plain (a space), whose pages cannot use a view made with stand-in names."""
    store = make_store(tmp_path / "store", think=True)
    fill_store(store, name="odd", bots=("my bot", "b\u00b7c", "plain"), players=3, repeats=1, think=True)
    return store


def test_a_site_built_from_views_is_the_site_built_from_the_logs(store: Store, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    store_dir = store.path.parent
    assert views_of(store_dir) == []
    from_logs = build.build_site(store, tmp_path / "logs")
    views = views_of(store_dir)
    # The first build read every log and kept its view for the next.
    assert len(views) == len(list((store_dir / "logs").rglob("*.jsonl.gz"))) > 10
    read = counting_loads(monkeypatch)
    from_views = build.build_site(store, tmp_path / "views")
    assert from_views.pages == from_logs.pages
    assert site_files(tmp_path / "views") == site_files(tmp_path / "logs")
    # Only the matches whose names are not plain read their logs (those of the tournament "odd").
    assert read and all(path.parent.name == "odd" for path in read)
    # A parallel build (its workers read the views too) makes the same files.
    build.build_site(store, tmp_path / "parallel", workers=2, parallel_from=1)
    assert site_files(tmp_path / "parallel") == site_files(tmp_path / "logs")


@pytest.mark.parametrize("spoil", ["stale", "corrupt", "newer", "missing", "other seats"])
def test_a_view_that_is_not_of_the_log_as_it_is_is_never_used(store: Store, tmp_path: Path, spoil: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    build.build_site(store, tmp_path / "reference")
    snap = snapshot.snapshot(store, "t")
    match = next(m for m in snap.matches if m.result is not None and m.result.players[1].fault is not None)
    log = common.match_log(snap, match)[0]
    assert log is not None
    view = matchview.view_path(log.path)
    wrong = {"events": "m", "think": "", "blocks": [], "forfeits": {}, "tallies": [], "stderr": False}
    if spoil == "stale":  # the log written again since (the same bytes, another time): the view is of the old one
        tamper(view, **wrong)
        status = log.path.stat()
        os.utime(log.path, ns=(status.st_atime_ns, status.st_mtime_ns + 1_000_000))
    elif spoil == "corrupt":
        view.write_bytes(view.read_bytes()[:40])
    elif spoil == "newer":
        tamper(view, format=matchview.FORMAT + 1, **wrong)
    elif spoil == "other seats":
        tamper(view, seats=3, **wrong)
    else:
        view.unlink()
    read = counting_loads(monkeypatch)
    build.build_site(store, tmp_path / "again", full=True)
    again, reference = site_files(tmp_path / "again"), site_files(tmp_path / "reference")
    if spoil == "stale":  # the steps of the faults are kept with each log's time, which changed
        del again["t/t/" + build.STEPS_FILE], reference["t/t/" + build.STEPS_FILE]
    assert again == reference
    assert log.path in read
    # The log read, its view is made again for the next build.
    status = log.path.stat()
    assert matchview.read_view(os.fspath(log.path), status) == matchview.derive(load(log.path), 2)


def test_a_view_is_what_a_build_would_derive_from_its_log(store: Store) -> None:
    snap = snapshot.snapshot(store, "t")
    for position, match in enumerate(snap.matches):
        log = common.match_log(snap, match)[0]
        assert log is not None
        made = matchview.view_log(log.path, len(match.bot_ids))
        assert made is not None and made == matchview.derive(log, len(match.bot_ids))
        kept = matchview.read_view(os.fspath(log.path), log.path.stat())
        think = match_data.match_page(snap, position, log).think
        assert kept == made and tuple(kept.tallies_of(match.id)) == think != ()
        assert kept.forfeits == matchview.forfeit_steps(log.events)


def test_a_view_sent_back_by_a_cluster_worker_is_kept_beside_the_log_written_again(store: Store,
                                                                                     tmp_path: Path) -> None:
    """A Dask worker plays into a scratch directory and sends the log and its view back (arena/run/cluster.py):
    the runner writes the log again, and the view is stamped with that log's size and time."""
    snap = snapshot.snapshot(store, "t")
    log = common.match_log(snap, snap.matches[0])[0]
    assert log is not None and matchview.view_log(log.path, 2) is not None
    here = tmp_path / "runner" / log.path.name
    here.parent.mkdir()
    here.write_bytes(log.path.read_bytes())
    sent = matchview.view_path(log.path).read_bytes()
    assert matchview.keep_moved_view(sent, here)
    kept = matchview.read_view(os.fspath(here), here.stat())
    assert kept is not None and kept == matchview.derive(load(here), 2)
    # Not the view of this log (another size), or not a view at all: nothing kept.
    other = tmp_path / "runner" / "other.jsonl.gz"
    other.write_bytes(log.path.read_bytes() + b"\0")
    assert not matchview.keep_moved_view(sent, other) and not matchview.keep_moved_view(b"junk", other)
    assert not matchview.view_path(other).exists()


def test_a_read_only_store_without_views_still_builds(read_only: Path, tmp_path: Path) -> None:
    """Its logs read, the views cannot be kept: the build is the same, and the next one reads the logs again."""
    made = make_store(tmp_path / "made", think=True)
    made.close()
    for item in (tmp_path / "made").iterdir():
        shutil.move(item, read_only / item.name)  # the store's log paths now missing: its logs are beside it
    store = Store(tmp_path / "ro" / "arena.db", readonly=True)
    build.build_site(store, tmp_path / "one")
    assert views_of(tmp_path / "ro") == []
    build.build_site(store, tmp_path / "two")
    assert site_files(tmp_path / "two") == site_files(tmp_path / "one")
    assert (tmp_path / "one" / urls.match_href("t", 1)).is_file()


def test_the_view_format_changes_with_what_a_view_holds(tmp_path: Path) -> None:
    """A golden view: when what a view holds (or how it is derived) changes, this fails until FORMAT is bumped
    and the digest below set, so that no build trusts a view an older arena made."""
    store = make_store(tmp_path, think=True)
    snap = snapshot.snapshot(store, "t")
    digests = []
    for match in snap.matches:
        log = common.match_log(snap, match)[0]
        assert log is not None
        held = matchview.derive(log, len(match.bot_ids)).to_json()
        held.pop("source")
        digests.append(json.dumps(held, sort_keys=True, ensure_ascii=False))
    digest = hashlib.sha256("\n".join(digests).encode()).hexdigest()[:16]
    assert (matchview.FORMAT, digest) == (1, GOLDEN), f"bump FORMAT and set GOLDEN to {digest!r}"


GOLDEN = "7c097bda9da6cafb"


def test_stand_in_names_give_the_encoding_of_any_plain_names() -> None:
    rng = random.Random(3)
    store_events = [{"type": "round_start", "round": 1, "starter": 0, "hands": [["5C", "TH"], ["2D"], []],
                     "floor": ["AS"], "scores": [0, 0, 0]},
                    {"type": "play", "seat": 0, "discard": ["5C"], "take": "deck", "drew": "KS"},
                    {"type": "declare", "seat": 1}]
    names = ["".join(rng.choice("abc-_19") for _ in range(rng.randint(1, 12))) for _ in range(3)]
    assert matchview.walk(store_events, names) == matchview.walk(store_events, matchview.stand_ins(3))


def test_a_site_without_stderr_offers_the_log_without_it_from_a_view_as_from_the_log(store: Store) -> None:
    snap = snapshot.snapshot(store, "t")
    match = next(m for m in snap.matches if m.result is not None and m.result.players[1].fault is not None)
    view, _ = common.match_view(snap, match)
    log = common.match_log(snap, match)[0]
    assert view is not None and log is not None and view.stderr
    offered = build.log_download(view, stderr=False)
    assert isinstance(offered, bytes) and offered == build.log_download(log, stderr=False)
    assert b"stderr_tail" not in gzip.decompress(offered)
    clean = next(m for m in snap.matches if m.result is not None and m.result.players[1].fault is None)
    plain = common.match_view(snap, clean)[0]
    assert plain is not None and not plain.stderr
    assert build.log_download(plain, stderr=False) == output.Linked(plain.log)
