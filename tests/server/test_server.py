"""The league server against a real ``arena serve`` process on loopback, with httpx as the client.

One server (and one league) serves the whole module, in file order: authors are added with the CLI while it runs,
bots are uploaded as real archives and checked in the real sandbox, the league plays real matches, and the last
test kills the server with SIGKILL and starts it again on the same store. The fast profile keeps the real server's
refusals (no token, hostile archives), which need no league match; the tests that wait for matches are slow.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import threading
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from arena import procfs
from arena.bots.scaffold import scaffold
from arena.match.matchlog import load
from arena.match.spectator import public_event
from arena.registry.client import pack
from arena.stats.ratings import RatingConfig, rate_all
from arena.stats.standings import final_ratings, rated_matches
from arena.store import Store
from tests.support.diarist import diarist, moves_of, slow_greedy
from tests.support.server import Server, free_port, league_results, make_bot

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_bots"
SECRET = "SECRET-STDERR-7f3a"
LEAKY = f'''\
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "hello":
        print(json.dumps({{"type": "ready"}}), flush=True)
    elif message["type"] == "turn":
        sys.stderr.write("{SECRET}: what only my author may read\\n")
        sys.stderr.flush()
        sys.exit(3)
'''
CONFIG = """\
league:
  name: ladder
  bots: ["registry:*", {house}]
  players: 2
  seed: 5
  rules: {{threshold: 30}}
  workers: 1
server:
  uploads_per_hour: 1
  max_upload_kb: 64
  logins_per_hour: 12
  login_attempts_per_hour: 20
  trusted_proxies: [127.0.0.1]
"""


def arena(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arena", *args], capture_output=True, text=True, check=check,
                          cwd=ROOT, timeout=60)


def serving(root: Path, playing: bool) -> Iterator[Server]:
    """A server on this module's config; ``playing``: its league has two house bots and plays from the start, else
    one (greedy), so it plays nothing until an author's bot enters."""
    house = [SAMPLES / "greedy", *([make_bot(root / "house", "leaky", code=LEAKY)] if playing else [])]
    config = root / "league.yaml"
    config.write_text(CONFIG.format(house=", ".join(map(str, house))))
    with Server(root, config, root / "results" / "arena.db", free_port()).running() as running:
        yield running


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from serving(tmp_path_factory.mktemp("league"), playing=True)


@pytest.fixture(scope="module")
def tokens(server: Server) -> dict[str, str]:
    """Authors added with the CLI while the server runs."""
    return {name: server.add_author(name) for name in ("alice", "bob", "carol", "dave")}


@pytest.fixture(scope="module")
def quiet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server whose league plays nothing, for the fast tests of what the server refuses: a league playing beside
    them would spend a core on matches that they never look at."""
    yield from serving(tmp_path_factory.mktemp("quiet"), playing=False)


@pytest.fixture(scope="module")
def quiet_tokens(quiet: Server) -> dict[str, str]:
    return {name: quiet.add_author(name) for name in ("alice", "bob", "dave")}


def test_uploads_without_a_valid_token_get_401(quiet: Server, quiet_tokens: dict[str, str]) -> None:
    server, tokens = quiet, quiet_tokens
    body = pack(SAMPLES / "random")
    for token in (None, "not-a-token", tokens["alice"][:-1]):
        reply = server.upload(token, body)
        assert reply.status_code == 401, reply.text
        assert "API token" in reply.json()["error"]
    assert reply.headers["www-authenticate"].startswith("Bearer")
    arena("author", "revoke", "dave", "--db", str(server.db))
    assert server.upload(tokens["dave"], body).status_code == 401  # revoked: at once, server still running


@pytest.mark.slow
def test_the_author_journey(server: Server, tokens: dict[str, str], tmp_path: Path) -> None:
    bot = make_bot(tmp_path, "alice-bot", SAMPLES / "random")
    reply = server.upload(tokens["alice"], pack(bot), **{"Content-Type": "application/gzip"})
    assert reply.status_code == 201, reply.text
    body = reply.json()
    assert (body["status"], body["name"], body["version"], body["label"]) == ("stored", "alice-bot", 1, "alice-bot@1")
    assert body["check"]["fit"] is True
    assert [step["step"] for step in body["check"]["steps"]][:3] == ["manifest", "files", "hello"]
    listing = httpx.get(f"{server.url}/api/bots").json()["bots"]
    assert [(b["name"], b["owner"], b["latest"]) for b in listing] == [("alice-bot", "alice", 1)]
    # The new version enters the league and plays; its rating moves off the prior and firms up.
    server.wait_for("alice-bot@1 to play league matches",
                    lambda: server.standings().get("alice-bot@1", {}).get("matches", 0) >= 4)
    line = server.standings()["alice-bot@1"]
    assert line["active"] is True and line["sigma"] < 8.333 and line["mu"] != 25.0
    # The league is a tournament in the store like any other.
    standings = json.loads(arena("standings", "ladder", "--json", "--db", str(server.db)).stdout)
    assert "alice-bot@1" in [row["bot"] for row in standings["standings"]]
    reply = httpx.get(f"{server.url}/api/me", headers={"Authorization": f"Bearer {tokens['alice']}"})
    assert reply.headers["cache-control"] == "no-store"  # it holds stderr: no shared cache may keep it
    mine = reply.json()
    assert mine["author"] == "alice" and mine["bots"][0]["versions"][0]["check"]["fit"] is True
    assert len(mine["matches"]) >= 4 and {m["bot"] for m in mine["matches"]} == {"alice-bot@1"}
    assert httpx.get(f"{server.url}/api/me").status_code == 401
    status = arena("league", "status", "--db", str(server.db)).stdout
    assert status.startswith("ladder: since") and "matches played" in status
    assert "3 bots in the field (0 left)" in status and "pairs in the field met" in status
    # /api/league shows how evenly the field meets: every pair of the three, each bot against its fair share.
    # The spread is a snapshot refreshed every few seconds while the league schedules: wait until the one shown
    # has every pair of the three met (alice-bot@1's first batch may have met only one of the house bots).
    def spread() -> dict[str, object]:
        return httpx.get(f"{server.url}/api/league").json()["spread"] or {}
    server.wait_for("the spread to show every pair of the three met",
                    lambda: spread().get("pairs") == 3 and int(spread().get("least_meetings", 0)) >= 1)
    league = httpx.get(f"{server.url}/api/league").json()
    assert {bot["bot"] for bot in league["spread"]["bots"]} == {"alice-bot@1", "greedy", "leaky"}
    assert league["spread"]["least_meetings"] >= 1 and league["throttled"] == {} and league["error"] is None
    home = httpx.get(f"{server.url}/").text  # the live page shows the column it is ordered by
    assert "ordered by strength" in home and '<th scope="col" class="num" aria-sort="descending"' in home


@pytest.mark.slow
def test_a_rejected_upload_claims_no_name_and_another_authors_name_is_403(
        server: Server, tokens: dict[str, str], tmp_path: Path) -> None:
    broken = make_bot(tmp_path, "contested", code=LEAKY)
    reply = server.upload(tokens["bob"], pack(broken))
    assert reply.status_code == 422, reply.text
    error = reply.json()["error"]
    assert reply.json()["check"]["fit"] is False and "admission check" in error, error
    assert error.startswith("the bot failed the check's ") and error.count("failed the check") == 1, error
    good = make_bot(tmp_path / "good", "contested", SAMPLES / "greedy")
    assert server.upload(tokens["carol"], pack(good)).status_code == 201  # bob's failure claimed nothing
    arena("submit", str(SAMPLES / "random"), "--db", str(server.db))  # the organiser's own bot, submitted locally
    for author, name in (("bob", "contested"), ("bob", "alice-bot"), ("bob", "random")):
        taken = server.upload(tokens[author], pack(make_bot(tmp_path / author / name, name, SAMPLES / "random")))
        assert taken.status_code == 403, taken.text
        owner = "the organiser" if name == "random" else "another author"
        assert f"the bot name {name!r} belongs to {owner}" in taken.json()["error"]


@pytest.mark.slow
def test_the_rate_limit_counts_accepted_uploads_only(server: Server, tokens: dict[str, str], tmp_path: Path) -> None:
    # carol's one upload an hour went to "contested"; bob's 422 and 403s did not count against him.
    again = make_bot(tmp_path, "carol-two", SAMPLES / "random")
    limited = server.upload(tokens["carol"], pack(again))
    assert limited.status_code == 429, limited.text
    assert int(limited.headers["retry-after"]) > 3000 and "1 accepted uploads an hour" in limited.json()["error"]
    assert server.upload(tokens["bob"], pack(make_bot(tmp_path, "bob-bot", SAMPLES / "random"))).status_code == 201
    names = [b["name"] for b in httpx.get(f"{server.url}/api/bots").json()["bots"]]
    assert "carol-two" not in names and "bob-bot" in names


@pytest.mark.slow
def test_a_compiled_bot_is_built_on_upload_and_a_failed_build_stores_nothing(
        server: Server, tmp_path: Path) -> None:
    fay = server.add_author("fay")
    broken = scaffold("fay-c", "c", tmp_path / "broken")
    (broken / "bot.c").write_text("int main(void) { return undeclared_thing; }\n")
    reply = server.upload(fay, pack(broken))
    assert reply.status_code == 422, reply.text
    body = reply.json()
    assert "the build failed: `gcc -O2 -std=c11 -Wall -Wextra -o bot bot.c` exited with status 1" in body["error"]
    [build] = [step for step in body["check"]["steps"] if step["step"] == "build"]
    assert build["ok"] is False and "undeclared_thing" in build["stderr_tail"]  # the compiler's log
    assert "fay-c" not in [b["name"] for b in httpx.get(f"{server.url}/api/bots").json()["bots"]]
    assert not (server.db.parent / "bots" / "fay-c").exists()
    # The failed build neither claimed the name nor counted toward fay's one upload an hour.
    good = scaffold("fay-c", "c", tmp_path / "good")
    reply = server.upload(fay, pack(good))
    assert reply.status_code == 201, reply.text
    body = reply.json()
    assert (body["label"], body["check"]["fit"]) == ("fay-c@1", True)
    assert [step["step"] for step in body["check"]["steps"]][:4] == ["manifest", "files", "build", "hello"]
    stored = server.db.parent / "bots" / "fay-c" / "1"
    assert (stored / "bot").read_bytes()[:4] == b"\x7fELF"
    versions = json.loads((stored.parent / "versions.json").read_text())["versions"]
    assert versions[0]["author"] == "fay" and versions[0]["files_hash"] == body["files_hash"]
    bots = {b["name"]: b for b in httpx.get(f"{server.url}/api/bots").json()["bots"]}
    assert bots["fay-c"]["owner"] == "fay"


@pytest.mark.slow
def test_an_oversized_upload_is_413_with_or_without_content_length(server: Server, tokens: dict[str, str]) -> None:
    big = os.urandom(100 << 10)
    reply = server.upload(tokens["alice"], big)
    assert reply.status_code == 413 and "at most 64 KiB" in reply.json()["error"]

    def chunks() -> Iterator[bytes]:
        for _ in range(10):
            yield os.urandom(10 << 10)

    streamed = httpx.post(f"{server.url}/api/bots", content=chunks(), timeout=60,
                          headers={"Authorization": f"Bearer {tokens['alice']}"})
    assert streamed.status_code == 413


BOUNDARY = "------------------------d74496d66958873e"
CURL_F = (f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="bot.tar.gz"\r\n'
          f"Content-Type: application/octet-stream\r\n\r\n").encode() + b"%b" + f"\r\n--{BOUNDARY}--\r\n".encode()
"""The body ``curl -F file=@bot.tar.gz`` sends (the usual habit): the archive inside a multipart form."""


def hostile_zip(members: Sequence[tuple[zipfile.ZipInfo | str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as bundle:
        for info, content in members:
            bundle.writestr(info, content)
    return buffer.getvalue()


def symlink_tar() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        manifest = b"name: linky\ncommand: python3 bot.py\n"
        info = tarfile.TarInfo("bot.yaml")
        info.size = len(manifest)
        tar.addfile(info, io.BytesIO(manifest))
        link = tarfile.TarInfo("bot.py")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        tar.addfile(link)
    return buffer.getvalue()


def test_hostile_archives_are_refused_and_write_nothing_outside_scratch(
        quiet: Server, quiet_tokens: dict[str, str]) -> None:
    server, tokens = quiet, quiet_tokens
    manifest = b"name: hostile\ncommand: python3 bot.py\n"
    cases = {
        "zip slip": (hostile_zip([("bot.yaml", manifest), ("../../../../escaped.py", b"pwned")]), "'..'"),
        "symlink": (symlink_tar(), "bot.py: a symlink to '/etc/passwd'"),
        "zip bomb": (hostile_zip([("bot.yaml", manifest), ("zeros", bytes(16 << 20))]), "compression bomb"),
        "garbage": (b"just some bytes", "not a .tar.gz or a .zip"),
        "curl -F": (CURL_F % pack(SAMPLES / "greedy"), "a multipart form (curl -F), not an archive: send the raw"),
    }
    for case, (body, words) in cases.items():
        assert len(body) < 64 << 10, case
        reply = server.upload(tokens["alice"], body, **({"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}
                                                         if case == "curl -F" else {}))
        assert reply.status_code == 400, (case, reply.text)
        assert words in reply.json()["error"], (case, reply.json())
    assert not list(server.root.rglob("escaped.py"))
    assert "hostile" not in [b["name"] for b in httpx.get(f"{server.url}/api/bots").json()["bots"]]
    scratch = server.db.parent / "bots" / ".incoming" / "uploads"
    assert not list(scratch.iterdir())  # every upload's scratch directory is gone


@pytest.mark.slow
def test_a_bots_stderr_is_in_the_store_but_never_on_public_pages(server: Server) -> None:
    server.wait_for("the site to hold league pages", lambda: any((server.db.parent / "public" / "t").glob("*/bots/*")))
    # More than 20 matches rated, so that the ratings below were brought up to date over several batches (on a
    # loaded machine the site's first pages come well before that).
    server.wait_for("more than 20 matches rated", lambda: rated_count(server.db) > 20, seconds=180)
    store = Store(server.db)
    try:
        store.db.execute("BEGIN")  # one snapshot: the league writes on
        tails = [row[0] for row in store.db.execute("SELECT stderr_tail FROM seats WHERE stderr_tail LIKE ?",
                                                    (f"%{SECRET}%",))]
        # Ratings were brought up to date batch by batch: they equal a full recomputation in schedule order.
        row = store.tournament("ladder")
        assert row is not None
        tid = row["id"]
        upto = store.db.execute("SELECT max(match_idx) FROM ratings WHERE tournament_id = ?", (tid,)).fetchone()[0]
        rated = [match for match in rated_matches(store, tid) if match.index <= upto]
        full, _ = rate_all([row["id"] for row in store.bots(tid)], rated, RatingConfig())
        stored = final_ratings(store, tid)
        store.db.execute("COMMIT")
    finally:
        store.close()
    assert len(rated) > 20 and set(stored) == {bot for match in rated for bot in match.bots}
    assert all(abs(stored[bot].mu - full[bot].mu) < 1e-9 and abs(stored[bot].sigma - full[bot].sigma) < 1e-9
               for bot in stored)
    assert tails, "the leaky house bot's stderr should be stored for the organiser"
    public = [httpx.get(f"{server.url}{path}").text for path in ("/", "/api/standings", "/api/bots", "/api/league")]
    pages = list((server.db.parent / "public").rglob("*.html"))
    assert len(pages) > 5
    public += [page.read_text() for page in pages]
    assert not [text for text in public if SECRET in text]
    home = httpx.get(f"{server.url}/").text
    # It reloads itself by a script a user can pause, not by a meta refresh (which axe rates critical).
    assert "data-live-refresh" in home and "assets/live.js" in home and 'http-equiv="refresh"' not in home
    assert "leaky" in home  # the standings (a house bot: whether another test uploaded a bot is not this one's)
    assert httpx.get(f"{server.url}/site/").status_code == 200


def rated_count(db: Path) -> int:
    """How many of the league's matches the stored ratings have taken in."""
    store = Store(db)
    try:
        row = store.tournament("ladder")
        if row is None:
            return 0
        upto = store.db.execute("SELECT max(match_idx) FROM ratings WHERE tournament_id = ?", (row["id"],)).fetchone()[0]
        return 0 if upto is None else sum(1 for match in rated_matches(store, row["id"]) if match.index <= upto)
    finally:
        store.close()


@pytest.mark.slow
def test_the_upload_page_checks_its_csrf_token_and_shows_the_result(server: Server, tmp_path: Path) -> None:
    token = server.add_author("frank")
    archive = pack(make_bot(tmp_path, "frank-bot", SAMPLES / "random"))
    with httpx.Client(base_url=server.url, timeout=120) as browser:
        page = browser.get("/upload")
        assert page.status_code == 200 and 'type="file" name="archive"' in page.text
        csrf = page.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        assert browser.cookies["arena_csrf"] == csrf
        files = {"archive": ("frank-bot.tar.gz", archive, "application/gzip")}
        forged = httpx.post(f"{server.url}/upload", data={"csrf": csrf, "token": token}, files=files)
        assert forged.status_code == 403 and "CSRF" in forged.text  # another site: no cookie
        wrong = browser.post("/upload", data={"csrf": csrf + "x", "token": token}, files=files)
        assert wrong.status_code == 403
        bad_token = browser.post("/upload", data={"csrf": csrf, "token": "nope"}, files=files)
        assert bad_token.status_code == 401
        done = browser.post("/upload", data={"csrf": csrf, "token": token}, files=files)
        assert done.status_code == 201, done.text
        assert "Stored frank-bot@1" in done.text and '<table id="check">' in done.text
    assert "frank-bot" in [b["name"] for b in httpx.get(f"{server.url}/api/bots").json()["bots"]]


def login(client: httpx.Client, token: str) -> httpx.Response:
    """Log in at /me/login as a browser would: read the form's CSRF token, post it with the API token."""
    form = client.get("/me/login")
    csrf = form.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    return client.post("/me/login", data={"csrf": csrf, "token": token})


def csrf_of(page: httpx.Response) -> str:
    return page.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]


def test_a_login_flood_logs_no_one_else_out_and_is_refused_with_429(quiet: Server, quiet_tokens: dict[str, str]) -> None:
    """The review's L1: one author's loop of logins once evicted every other session. Each client says its address
    with X-Forwarded-For, which the server trusts from loopback (``trusted_proxies``: a proxy on the host)."""
    server, tokens = quiet, quiet_tokens
    victim = httpx.Client(base_url=server.url, timeout=60, headers={"X-Forwarded-For": "198.51.100.1"})
    flood = httpx.Client(base_url=server.url, timeout=60, headers={"X-Forwarded-For": "198.51.100.2"})
    guesser = httpx.Client(base_url=server.url, timeout=60, headers={"X-Forwarded-For": "198.51.100.3"})
    with victim, flood, guesser:
        assert login(victim, tokens["alice"]).status_code == 303
        assert victim.get("/me").status_code == 200
        csrf = csrf_of(flood.get("/me/login"))
        answers, first_session = [], None
        for _ in range(25):
            reply = flood.post("/me/login", data={"csrf": csrf, "token": tokens["bob"]})
            answers.append(reply)
            if first_session is None and reply.status_code == 303:
                first_session = flood.cookies["arena_session"]
        codes = [reply.status_code for reply in answers]
        # 12 logins an hour per author, 20 attempts an hour per address (this server's config), then 429 each time.
        assert codes == [303] * 12 + [429] * 13, codes
        assert "with this token" in answers[12].text and "from your address" in answers[-1].text
        assert all(0 < int(reply.headers["retry-after"]) <= 3600 for reply in answers[12:])
        # Bob's own oldest sessions made room for his newest (10 at most per author); alice's is untouched.
        assert httpx.get(f"{server.url}/me", cookies={"arena_session": first_session}).status_code == 303
        assert flood.get("/me").status_code == 200
        assert victim.get("/me").status_code == 200
        # Failed logins count toward the address's limit too.
        csrf = csrf_of(guesser.get("/me/login"))
        codes = [guesser.post("/me/login", data={"csrf": csrf, "token": f"guess-{n}"}).status_code
                 for n in range(21)]
        assert codes == [401] * 20 + [429], codes


@pytest.mark.slow
def test_an_authors_page_shows_their_own_stderr_and_no_one_elses(server: Server, tmp_path: Path) -> None:
    gina, hank = server.add_author("gina"), server.add_author("hank")
    noisy = make_bot(tmp_path, "gina-bot", SAMPLES / "random")
    marker = "GINA-ONLY-STDERR-41c9"
    source = (noisy / "bot.py").read_text()
    (noisy / "bot.py").write_text(source.replace(
        "import arena_bot\n", f"import arena_bot\nimport sys\nsys.stderr.write({marker!r} + '\\n')\n", 1))
    assert server.upload(gina, pack(noisy)).status_code == 201
    assert server.upload(hank, pack(make_bot(tmp_path, "hank-bot", SAMPLES / "random"))).status_code == 201
    server.wait_for("gina-bot@1 to play", lambda: server.standings().get("gina-bot@1", {}).get("matches", 0) >= 2)
    with httpx.Client(base_url=server.url, timeout=60) as browser:
        assert browser.get("/me").headers["location"] == "/me/login"  # not logged in: to the login form
        # Another site's form has no CSRF cookie, and a bad token is refused: neither starts a session.
        page = browser.get("/me/login").text
        csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        assert httpx.post(f"{server.url}/me/login", data={"csrf": csrf, "token": gina}).status_code == 403
        assert browser.post("/me/login", data={"csrf": csrf, "token": "nope"}).status_code == 401
        reply = login(browser, gina)
        assert reply.status_code == 303 and reply.headers["location"] == "/me"
        cookie = reply.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and "path=/me" in cookie
        mine = browser.get("/me")
        assert mine.status_code == 200 and mine.headers["cache-control"] == "no-store"
        assert "gina-bot@1" in mine.text and marker in mine.text and 'id="my-matches"' in mine.text
        assert "hank-bot" not in mine.text and SECRET not in mine.text
        session = browser.cookies["arena_session"]
        page = browser.get("/me").text
        csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        assert browser.post("/me/logout", data={"csrf": csrf}).status_code == 200
        assert browser.get("/me").status_code == 303
    # The session ended on the server, not only in the browser: its old cookie opens nothing.
    stolen = httpx.get(f"{server.url}/me", cookies={"arena_session": session})
    assert stolen.status_code == 303
    with httpx.Client(base_url=server.url, timeout=60) as other:
        assert login(other, hank).status_code == 303
        theirs = other.get("/me").text
        assert "hank-bot@1" in theirs and "gina-bot" not in theirs and marker not in theirs
        arena("author", "revoke", "hank", "--db", str(server.db))
        assert other.get("/me").status_code == 303  # revoked: the session ends with the token
    public = [httpx.get(f"{server.url}{path}").text for path in ("/", "/api/standings", "/api/bots", "/api/league")]
    assert not [text for text in public if marker in text]


@pytest.mark.slow
def test_an_author_reads_the_line_their_bot_wrote_on_a_move_beside_that_move(server: Server, tmp_path: Path) -> None:
    """Issue 43: /me/matches/N shows each stderr line beside its move, to the bot's author only; the public pages,
    data files and log downloads never hold it."""
    ivy, hank = server.add_author("ivy"), server.add_author("jack")
    mark = "IVY-DIARY-90d2"
    assert server.upload(ivy, pack(diarist(tmp_path, "ivy-bot", mark))).status_code == 201
    played: list[tuple[int, list[int]]] = []  # (match, the steps of ivy-bot's moves) of its longest match

    def a_long_match() -> bool:
        # Against the leaky house bot (which crashes on its first turn) a match may end before ivy-bot moves.
        store = Store(server.db)
        try:
            rows = store.db.execute(
                "SELECT m.id, s.seat, m.log_path FROM matches m JOIN seats s ON s.match_id = m.id JOIN bots b "
                "ON b.id = s.bot_id WHERE b.name = 'ivy-bot@1' AND m.status = 'done'").fetchall()
        finally:
            store.close()
        found = [(match_id, moves_of(load(Path(path) if Path(path).is_absolute() else server.db.parent / path).events,
                                     seat)) for match_id, seat, path in rows]
        played[:] = sorted(found, key=lambda pair: len(pair[1]))[-1:]
        return bool(played) and len(played[0][1]) >= 5

    server.wait_for("ivy-bot@1 to play a match of 5 moves or more", a_long_match, seconds=120)
    [(match_id, moves)] = played
    turn = min(17, len(moves))  # the 17th move when the match has one (the league's threshold is 30)
    with httpx.Client(base_url=server.url, timeout=60) as browser:
        assert login(browser, ivy).status_code == 303
        assert f'href="/me/matches/{match_id}"' in browser.get("/me").text
        page = browser.get(f"/me/matches/{match_id}")
        assert page.status_code == 200 and page.headers["cache-control"] == "no-store"
        row = page.text.split(f'<tr id="step-{moves[turn - 1] + 1}">', 1)[1].split("</tr>", 1)[0]
        assert f"{mark} turn {turn}</pre>" in row and ("ivy-bot@1 throws" in row or "ivy-bot@1 declares" in row)
        assert "(" not in row.split("</td>", 1)[0]  # the move as the players saw it: no card drawn from the deck
    with httpx.Client(base_url=server.url, timeout=60) as other:
        assert login(other, hank).status_code == 303
        assert other.get(f"/me/matches/{match_id}").status_code == 404  # not theirs: as if there were no match
    assert httpx.get(f"{server.url}/me/matches/{match_id}", follow_redirects=False).status_code == 303
    server.wait_for("the site to publish that match", lambda: any(
        (server.db.parent / "public" / "t").glob(f"*/matches/{match_id}.html")))
    published = [p for p in (server.db.parent / "public").rglob("*") if p.is_file()]
    blobs = [gzip.decompress(p.read_bytes()) if p.name.endswith(".gz") else p.read_bytes() for p in published]
    assert not [blob for blob in blobs if mark.encode() in blob]


@pytest.mark.slow
def test_a_spectator_follows_a_league_match_while_it_is_played_and_sees_no_hidden_card(
        server: Server, tmp_path: Path) -> None:
    """Issue 43: /api/live/N gives a match's moves as they are played, each as every player was told it."""
    # A bot that takes 50 ms a move: its matches against greedy last seconds, so some are in play to follow (the
    # house bots' are over in a blink, the leaky one crashing on its first turn).
    assert server.upload(server.add_author("lena"), pack(slow_greedy(tmp_path, "lena-bot", 0.05))).status_code == 201
    with httpx.Client(base_url=server.url, timeout=60) as spectator:
        followed: tuple[int, list[dict[str, Any]], int] | None = None  # (index, events, polls that brought some)

        def follow() -> bool:
            nonlocal followed
            playing = spectator.get("/api/live").json()["in_play"]
            if not playing:
                return False
            index, seen, growing = playing[0]["index"], [], 0
            while True:
                reply = spectator.get(f"/api/live/{index}", params={"from": len(seen)})
                assert reply.status_code == 200 and reply.headers["cache-control"] == "no-store"
                growing += bool(reply.json()["events"])
                seen += reply.json()["events"]
                if reply.json()["over"]:  # its last moves, and the end: kept a while for those a poll behind
                    break
            assert index not in [match["index"] for match in spectator.get("/api/live").json()["in_play"]]
            assert spectator.get(f"/api/live/{index}", params={"from": len(seen)}).json()["events"] == []
            followed = (index, seen, growing)
            return growing >= 2 and sum(event["type"] == "play" for event in seen) >= 2

        server.wait_for("a match followed over two moves or more while in play", follow, seconds=120)
    assert followed is not None
    index, seen, _ = followed
    hidden = [event for event in seen if {"hands", "drew", "totals", "live"} & set(event)]
    assert not hidden, hidden
    shown = {card for event in seen for card in [*event.get("discard", ()), *event.get("floor", ()),
                                                 event.get("take", "deck")] if card != "deck"}
    # every card seen is one thrown, taken from the floor or turned up on the floor: all public
    assert all(len(card) == 2 for card in shown)
    log_file = server.db.parent / "logs" / "ladder" / f"{index:06d}.jsonl.gz"
    server.wait_for("the followed match's log", log_file.is_file)
    log = load(log_file)
    assert seen == [public_event(event) for event in log.events]  # the match's own moves, in order, to its end
    assert any("drew" in event for event in log.events)  # which the log has, and the spectator did not see


def children(pid: int) -> set[int]:
    found = set()
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":\t", 1) for line in status.read_text().splitlines() if ":\t" in line)
        except OSError:
            continue
        if fields.get("PPid", "").strip() == str(pid):
            found.add(int(status.parent.name))
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


@pytest.mark.slow
def test_kill_9_loses_no_accepted_submission_and_the_league_resumes(
        server: Server, tokens: dict[str, str], tmp_path: Path) -> None:
    erin = server.add_author("erin")
    reply = server.upload(erin, pack(make_bot(tmp_path, "erin-bot", SAMPLES / "greedy")))
    assert reply.status_code == 201, reply.text
    played = httpx.get(f"{server.url}/api/league").json()["matches"].get("done", 0)
    assert server.process is not None
    workers = children(server.process.pid)
    assert workers, "the league's pool should be running"
    server.stop(signal.SIGKILL)
    server.wait_for("the pool's workers to die with the server", lambda: not any(map(alive, workers)), 20)
    server.start()
    bots = {b["name"]: b for b in httpx.get(f"{server.url}/api/bots").json()["bots"]}
    assert (bots["erin-bot"]["owner"], bots["erin-bot"]["latest"]) == ("erin", 1)
    server.wait_for("the league to resume and erin-bot@1 to play",
                    lambda: server.standings().get("erin-bot@1", {}).get("matches", 0) >= 2
                    and httpx.get(f"{server.url}/api/league").json()["matches"].get("done", 0) > played)
    assert httpx.get(f"{server.url}/api/league").json()["matches"].get("failed", 0) == 0
    assert {"alice-bot@1", "contested@1", "bob-bot@1", "greedy", "leaky"} <= set(server.standings())
    again = server.upload(erin, pack(make_bot(tmp_path / "again", "erin-bot", SAMPLES / "random")))
    assert again.status_code == 429  # the limit is in the store: a restart does not reset it


@pytest.mark.slow  # a Dask cluster's league and the local pool's, one after the other: 52 s at load 13 on 2 cores
@pytest.mark.long
def test_a_league_on_a_local_dask_cluster_plays_what_the_local_pool_plays(tmp_path: Path) -> None:
    config = tmp_path / "league.yaml"
    config.write_text(f"league: {{name: spread, bots: [{SAMPLES / 'greedy'}, {SAMPLES / 'random'}, "
                      f"{SAMPLES / 'planner'}], players: 2, seed: 11, rules: {{threshold: 30}}, workers: 2, "
                      f"throttle: false}}\n")  # the throttle reads match times: the schedule would follow the load
    played = {}
    for where, options in (("dask", ("--cluster", "local:2")), ("pool", ())):
        root = tmp_path / where
        root.mkdir()
        server = Server(root, config, root / "arena.db", free_port(), options=options)
        server.start()
        try:
            want = 8 if where == "dask" else len(played["dask"])
            server.wait_for(f"{want} matches on the {where}", lambda server=server, want=want: httpx.get(
                f"{server.url}/api/league").json()["matches"].get("done", 0) >= want, seconds=90)
            league = httpx.get(f"{server.url}/api/league").json()
        finally:
            server.stop()
        assert league["error"] is None, league["error"]
        played[where] = league_results(root / "arena.db")
        if where == "dask":
            cluster = league["cluster"]
            assert cluster["address"] == "local:2" and cluster["workers"] == 2, cluster
            assert sum(cluster["matches_per_worker"].values()) >= 8 and cluster["refused"] == {}
            assert len(list((root / "logs" / "spread").glob("*.jsonl.gz"))) >= 8  # logs came back from the workers
        else:
            assert league["cluster"] is None
    both = sorted(set(played["dask"]) & set(played["pool"]))
    assert len(both) >= 8
    assert [played["dask"][idx] for idx in both] == [played["pool"][idx] for idx in both]


@pytest.mark.slow
def test_a_stop_cuts_an_uploads_build_short_and_answers_503(tmp_path: Path) -> None:
    """SIGTERM while an upload's build runs: the server stops without waiting for the build's time limit (an hour
    here; uvicorn waited for the request in flight, and so the stop for the whole build: 59 s with the default 60 s
    limit, and a test's stop() timed out at load 24), and the upload is answered 503, nothing stored."""
    config = tmp_path / "league.yaml"
    config.write_text(f"league: {{name: z, bots: ['registry:*', {SAMPLES / 'greedy'}], players: 2, seed: 3}}\n"
                      "server: {build_seconds: 3600}\n")
    server = Server(tmp_path, config, tmp_path / "results" / "arena.db", free_port())
    with server.running():
        assert server.process is not None
        token = server.add_author("ann")
        bot = make_bot(tmp_path / "up", "builder", code="print(1)\n")
        (bot / "bot.yaml").write_text("name: builder\ncommand: python3 bot.py\nbuild: sleep 3600\n")
        answers: list[httpx.Response] = []
        uploading = threading.Thread(target=lambda: answers.append(server.upload(token, pack(bot))))
        uploading.start()
        pid = server.process.pid
        server.wait_for("the build to start", lambda: any(
            procfs.command_line(child).startswith(b"sleep\0") for child in procfs.descendants(pid)), 120)
        server.stop()  # waits up to 60 s: without the cut it would wait for the hour
        uploading.join(60)
    assert [answer.status_code for answer in answers] == [503], [answer.text for answer in answers]
    assert "stopping" in answers[0].json()["error"]
    assert not (tmp_path / "results" / "bots" / "builder").exists()
