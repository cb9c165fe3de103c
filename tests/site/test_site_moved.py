"""A site built before league bot versions had their own addresses (``bots/bob@1/``) had their pages under
``bots/_bID-bob-1/``: a rebuild leaves a redirect there to the page's address now, and keeps it (arena/site/moved.py);
a site that never had such pages gets none."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from arena.site.build import build_site
from arena.site.moved import ROW_ID_ADDRESS
from arena.store import Store
from tests.sitestore import as_before_addresses, broken_links, make_store

BOTS = ("bob-late@1", "alice@2", "gamma")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return make_store(tmp_path_factory.mktemp("moved"), bots=BOTS, repeats=8)


def bob_id(store: Store) -> int:
    return next(int(bot["id"]) for bot in store.bots(store.tournament("t")["id"]) if bot["name"] == "bob-late@1")


def redirect_of(page: Path) -> str:
    """Where a redirect page sends its reader; it says it three ways, and they must agree."""
    text = page.read_text()
    canonical = re.search(r'<link rel="canonical" href="([^"]+)">', text)
    refresh = re.search(r'<meta http-equiv="refresh" content="0; url=([^"]+)">', text)
    link = re.search(r'<a href="([^"]+)">', text)
    assert canonical and refresh and link, text
    assert canonical[1] == refresh[1] == link[1]
    return canonical[1]


@pytest.mark.parametrize("full", [False, True], ids=["incremental", "full"])
def test_old_bot_addresses_become_redirects_to_the_pages_now(store: Store, tmp_path: Path, full: bool) -> None:
    out = tmp_path / "site"
    build_site(store, out, workers=1)
    now = out / "t/t/bots/bob-late@1"
    pages = sorted(path.name for path in now.iterdir())
    assert "index.html" in pages and "faults.html" in pages  # more than one page
    old = as_before_addresses(out, "t", "bob-late@1", bob_id(store))
    assert old == f"t/t/bots/_b{bob_id(store)}-bob-late-1/" and not now.exists()

    build_site(store, out, workers=1, full=full)
    assert sorted(path.name for path in now.iterdir()) == pages
    assert sorted(path.name for path in (out / old).iterdir()) == pages  # each old page is a redirect now
    for name in pages:
        target = redirect_of(out / old / name)
        assert target == f"../bob-late@1/{name}"
        assert (out / old / name).parent.joinpath(target).resolve() == (now / name).resolve()
    assert broken_links(out) == []
    # Kept by the next build (an incremental one, as a live league's publish is), unchanged.
    before = {name: (out / old / name).stat().st_mtime_ns for name in pages}
    build_site(store, out, workers=1)
    assert {name: (out / old / name).stat().st_mtime_ns for name in pages} == before


def test_a_site_that_never_had_old_addresses_gets_no_redirects(store: Store, tmp_path: Path) -> None:
    out = tmp_path / "site"
    build_site(store, out, workers=1)
    build_site(store, out, workers=1)
    found = [path for path in out.rglob("*") if ROW_ID_ADDRESS.fullmatch(path.relative_to(out).as_posix())]
    assert found == []
