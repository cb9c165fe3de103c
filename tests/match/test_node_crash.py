"""A Node bot that throws a TypeError on its third move, end to end: what its author sees of the crash.

Node prints the bot's own line first (``/.../bot.js:LINE``, the source line, a caret), then the ``TypeError`` and the
frames, its internal ones last: every place a crash is shown must show the error line and the ``bot.js:LINE`` frame,
not only the tail of stderr. Real bots in the real sandbox: ``arena match``, ``arena run`` into a real store, ``arena
show`` and its ``--json``, the site's match page, and the league server's ``/api/me`` for the bot's author. Each
plays real matches with node, so every test here is slow.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from arena.match.matchlog import find_log
from arena.registry.client import pack
from arena.site import urls
from arena.store import Store
from tests.support.server import Server, free_port

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_bots"
CRASHING = """\
"use strict";
// Plays its first two moves (its first card, from the deck), then reads a field of undefined: under the tests'
// threshold only, so that it passes the server's admission check (a match to 30) and crashes in the league.
const readline = require("readline");
let moves = 0;
let crashes = false;
function chooseMove(message) {
  moves += 1;
  const state = crashes && moves >= 3 ? undefined : { hand: message.hand };
  return { type: "play", discard: [state.hand[0]], take: "deck" };
}
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const message = JSON.parse(line);
  if (message.type === "hello") crashes = message.rules.threshold === 40;
  if (message.type === "hello") process.stdout.write(JSON.stringify({ type: "ready" }) + "\\n");
  else if (message.type === "turn") process.stdout.write(JSON.stringify(chooseMove(message)) + "\\n");
});
"""
LINE = CRASHING.splitlines().index('  return { type: "play", discard: [state.hand[0]], take: "deck" };') + 1
ERROR = "TypeError: Cannot read properties of undefined"
FRAME = f"bot.js:{LINE}"

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("node") is None, reason="needs node")]


def make_node_bot(where: Path, name: str = "crashy") -> Path:
    directory = where / name
    directory.mkdir(parents=True)
    (directory / "bot.js").write_text(CRASHING)
    (directory / "bot.yaml").write_text(f"name: {name}\ncommand: node bot.js\nlanguage: javascript\n")
    return directory


def arena(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arena", *args], check=False, capture_output=True, text=True, cwd=cwd,
                          timeout=300)


def shows_the_crash(text: str) -> bool:
    return ERROR in text and FRAME in text


def test_the_cli_and_the_site_show_the_type_error_and_its_line(tmp_path: Path) -> None:
    bot = make_node_bot(tmp_path)
    played = arena("match", str(bot), str(SAMPLES / "greedy"), "--threshold", "40", "--log",
                   str(tmp_path / "m.jsonl.gz"), cwd=tmp_path)
    assert played.returncode == 0, played.stderr
    assert "crash.exit" in played.stdout and shows_the_crash(played.stdout), played.stdout

    config = tmp_path / "t.yaml"
    config.write_text(f"name: nodecrash\nbots: [{bot}, {SAMPLES / 'greedy'}]\nplayers: 2\nrepeats: 1\nseed: 3\n"
                      "format: round-robin\nworkers: 1\nrules: {threshold: 40}\n")
    db = tmp_path / "results" / "arena.db"
    ran = arena("run", str(config), "--db", str(db), cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    store = Store(db, readonly=True)
    faulted = [m for m in store.match_list(store.latest_tournament()["id"])
               if any(p["fault"] == "crash" for p in m["players"])]
    assert faulted, "the node bot crashed in no match"
    number = faulted[0]["id"]

    shown = arena("show", str(number), "--db", str(db), cwd=tmp_path)
    assert shown.returncode == 0 and shows_the_crash(shown.stdout), shown.stdout
    assert f"match {number} " in shown.stdout  # the number asked for is the match shown
    as_json = json.loads(arena("show", str(number), "--db", str(db), "--json", cwd=tmp_path).stdout)
    assert as_json["id"] == number
    crashed = next(p for p in as_json["result"]["players"] if p["fault"] is not None)
    assert shows_the_crash(crashed["stderr"])
    # Its think times: two moves answered, the third not (it crashed thinking), from the log.
    think = as_json["think"][crashed["seat"]]
    assert think["moves"] == 2 and think["unanswered"] == 1 and think["closest"]["match"] == number

    # The site: the page named by the number is that match, and its fault shows the crash.
    site = db.parent / "site"
    page = (site / urls.match_href("nodecrash", number)).read_text(encoding="utf-8")
    assert f"<h1>Match #{number} " in page and f"arena show {number}" in page
    faults = page[page.index('<section id="faults">'):page.index("</section>", page.index('<section id="faults">'))]
    assert shows_the_crash(faults), faults
    # Its event log to download is the runner's, whole (a local run shows stderr: the fault record keeps it).
    log = site / urls.match_log_href("nodecrash", number)
    assert f'href="{log.name}" download' in page
    stored = store.match(number)
    assert stored is not None and stored.result is not None
    runners = find_log(stored.result.log_path, db.parent, "nodecrash", stored.idx)
    assert runners is not None and log.read_bytes() == runners.read_bytes()


@pytest.fixture()
def league(tmp_path: Path) -> Iterator[Server]:
    config = tmp_path / "league.yaml"
    config.write_text(f"league:\n  name: ladder\n  bots: [\"registry:*\", {SAMPLES / 'greedy'}]\n  players: 2\n"
                      "  seed: 5\n  workers: 1\n  rules: {threshold: 40}\n")
    with Server(tmp_path, config, tmp_path / "results" / "arena.db", free_port()).running() as running:
        yield running


def test_the_authors_page_on_the_server_shows_the_type_error_and_its_line(league: Server, tmp_path: Path) -> None:
    token = league.add_author("nina")
    reply = league.upload(token, pack(make_node_bot(tmp_path / "upload", "nina-js")),
                          **{"Content-Type": "application/gzip"})
    assert reply.status_code == 201, reply.text
    mine = {"Authorization": f"Bearer {token}"}

    def crashed() -> list[dict[str, object]]:
        seats = httpx.get(f"{league.url}/api/me", headers=mine).json()["matches"]
        return [seat for seat in seats if seat.get("fault")]

    league.wait_for("a crash of nina-js in the league", lambda: bool(crashed()), seconds=120)
    seat = crashed()[0]
    assert shows_the_crash(json.dumps(seat)), seat
    # Not on the public site: its stderr is its author's only, and so is its event log's part of it.
    page = f"{league.url}/site/{seat['href']}"
    league.wait_for("the public site's page of that match", lambda: httpx.get(page).status_code == 200)
    public = httpx.get(page).text
    assert f"<h1>Match #{seat['match']} " in public and ERROR not in public and FRAME not in public
    log = httpx.get(page.removesuffix(".html") + ".jsonl.gz")
    assert log.status_code == 200
    text = gzip.decompress(log.content).decode()
    assert '"t":"fault"' in text and ERROR not in text and FRAME not in text
