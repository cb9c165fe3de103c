"""The league server's refusals, in process: the application `arena serve` runs, driven by Starlette's TestClient
with its league not playing and no socket. A refusal needs no match and no network to be proved, so these run in
milliseconds; what needs a real server (the connection guard, uploads checked in the sandbox, the league) is
tests/server/test_server.py's and tests/server/test_server_dos.py's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from arena.server.app import ServerSettings, create_app
from arena.server.authors import add_author, revoke_author
from arena.server.config import load_serve_config
from arena.store import Store

ROOT = Path(__file__).resolve().parents[2]
CAP_KB = 64


@pytest.fixture
def app(tmp_path: Path) -> Iterator[tuple[TestClient, dict[str, str]]]:
    config = tmp_path / "league.yaml"
    config.write_text(f"league: {{name: in-process, bots: ['registry:*', {ROOT / 'sample_bots' / 'greedy'}], "
                      f"players: 2}}\nserver: {{max_upload_kb: {CAP_KB}}}\n")
    db = tmp_path / "arena.db"
    store = Store(db)
    try:
        tokens = {name: add_author(store, name) for name in ("ada", "bob")}
        revoke_author(store, "bob")
    finally:
        store.close()
    settings = ServerSettings(db=db, config=load_serve_config(config, tmp_path / "bots"),
                              site_dir=tmp_path / "public", scratch=tmp_path / "scratch", run_league=False)
    with TestClient(create_app(settings), base_url="http://127.0.0.1:8000") as client:
        yield client, tokens


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def csrf_of(page: str) -> str:
    return page.split('name="csrf" value="', 1)[1].split('"', 1)[0]


def test_an_upload_without_a_live_token_is_401_and_says_how_to_get_one(
        app: tuple[TestClient, dict[str, str]]) -> None:
    client, tokens = app
    for headers in ({}, bearer("not-a-token"), bearer(tokens["bob"])):  # none, unknown, revoked
        reply = client.post("/api/bots", content=b"x", headers=headers)
        assert reply.status_code == 401, reply.text
        assert reply.headers["www-authenticate"].startswith("Bearer")
        assert "arena author add" in reply.json()["error"]
    assert client.get("/api/me").status_code == 401


def test_an_oversized_upload_is_413_before_its_body_is_read(app: tuple[TestClient, dict[str, str]],
                                                            tmp_path: Path) -> None:
    client, tokens = app
    declared = client.post("/api/bots", content=b"x" * 10, headers=bearer(tokens["ada"]) | {
        "Content-Length": str((CAP_KB << 10) + 1)})
    assert declared.status_code == 413 and f"at most {CAP_KB} KiB" in declared.json()["error"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it streams
        for _ in range(CAP_KB + 1):
            yield b"\0" * 1024

    streamed = client.post("/api/bots", content=chunks(), headers=bearer(tokens["ada"]))
    assert streamed.status_code == 413
    assert list((tmp_path / "scratch").iterdir()) == []  # the partial upload is not kept


def test_forms_from_another_site_or_an_old_page_are_403(app: tuple[TestClient, dict[str, str]]) -> None:
    client, tokens = app
    csrf = csrf_of(client.get("/me/login").text)
    forged = TestClient(client.app, base_url="http://127.0.0.1:8000")  # another site: no cookie of ours
    assert forged.post("/me/login", data={"csrf": csrf, "token": tokens["ada"]}).status_code == 403
    assert client.post("/me/login", data={"csrf": csrf + "x", "token": tokens["ada"]}).status_code == 403
    assert client.post("/me/login", data={"csrf": csrf, "token": "nope"}).status_code == 401
    logged_in = client.post("/me/login", data={"csrf": csrf, "token": tokens["ada"]}, follow_redirects=False)
    assert logged_in.status_code == 303 and logged_in.headers["location"] == "/me"
    page = client.get("/upload").text
    assert client.post("/upload", data={"csrf": csrf_of(page) + "x", "token": tokens["ada"]},
                       files={"archive": ("bot.tar.gz", b"x")}).status_code == 403


def test_the_site_redirect_does_not_take_the_host_header(app: tuple[TestClient, dict[str, str]]) -> None:
    client, _ = app
    reply = client.get("/site", headers={"Host": "evil.example"}, follow_redirects=False)
    assert reply.status_code in (301, 302, 307, 308)
    assert "evil.example" not in reply.headers["location"]


def test_the_live_pages_of_a_match_not_in_play_say_so(app: tuple[TestClient, dict[str, str]]) -> None:
    """Issue 43: a match that is not in play has no feed (404), a page that will follow it when it starts, and a
    replay link that says why there is no replay yet, whatever the number asked."""
    client, _ = app
    for prefix in ("/api", "/api/v1"):
        assert client.get(f"{prefix}/live").json() == {"in_play": []}
        for index in ("5", "-1", "x", str(10**30)):
            missing = client.get(f"{prefix}/live/{index}")
            assert missing.status_code == 404 and missing.json()["status"] == "rejected", (index, missing.text)
        bad = client.get(f"{prefix}/live/5", params={"from": "x"})
        assert bad.status_code == 400 and bad.json() == {"status": "rejected", "error": "from: a whole number of events"}
    page = client.get("/live/5")
    assert page.status_code == 200 and page.headers["cache-control"] == "no-store"
    assert 'data-feed="/api/live/5"' in page.text and 'data-replay="/live/5/replay"' in page.text
    for index in (5, 10**30):
        replay = client.get(f"/live/{index}/replay", follow_redirects=False)
        assert replay.status_code == 404 and 'id="replay-later"' in replay.text and "not stored yet" in replay.text
