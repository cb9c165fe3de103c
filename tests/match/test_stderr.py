"""What is kept of a bot's stderr and what is shown of it (arena/match/stderr.py): the head and the tail within a byte
cap, and an error_view with the first error and the last lines, so that a Node bot's crash shows its ``TypeError``
and its own ``bot.js`` line everywhere an author looks (issue 25): ``arena match``, ``arena show`` and its
``--json``, and the site's fault listing; and a clean seat's stderr too, on the local site and in ``arena show``."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from arena.match.stderr import CLEAN_BYTES, FAULT_BYTES, StderrKeeper, error_view
from arena.server.public import publish
from arena.store import Store
from tests.sitestore import fill_store

ROOT = Path(__file__).resolve().parents[2]
THROWS = "const seen = message.nothing; return seen.cards;"


def test_the_first_error_survives_a_flood_after_it() -> None:
    kept = StderrKeeper(64 * 1024)
    written = [b"Exception in thread \"main\" java.lang.NullPointerException: hand is null\n",
               b"\tat Bot.move(Bot.java:41)\n", *(f"debug: turn {turn}\n".encode() for turn in range(20_000))]
    for chunk in written:
        kept.add(chunk)
    text = kept.text()
    cut = re.search(r"\n\[\.\.\. (\d+) bytes of stderr cut \.\.\.\]\n", text)
    assert cut is not None
    assert len(text.encode()) - len(cut.group(0)) <= 64 * 1024  # the cap, the line that says so aside
    assert len(text.encode()) - len(cut.group(0)) + int(cut.group(1)) == sum(map(len, written))  # counted exactly
    assert "NullPointerException: hand is null" in text and "Bot.java:41" in text and "debug: turn 19999" in text
    shown = error_view(text)
    assert shown.splitlines()[0].startswith("Exception in thread") and "Bot.java:41" in shown
    assert shown.splitlines()[-1] == "debug: turn 19999" and len(shown.splitlines()) <= 26


def test_a_short_stderr_is_shown_whole_and_a_python_traceback_ends_with_its_message() -> None:
    assert error_view("one\ntwo\n") == "one\ntwo"
    trace = ["debug"] * 50 + ["Traceback (most recent call last):", '  File "bot.py", line 9, in <module>',
                              "ZeroDivisionError: division by zero"]
    shown = error_view("\n".join(trace)).splitlines()
    assert shown[-1] == "ZeroDivisionError: division by zero" and shown[-2].endswith("line 9, in <module>")


def node_bot(where: Path) -> tuple[Path, int]:
    """js-greedy, changed to throw a TypeError on its third move when it sits in seat 0, and to talk on stderr on
    every move in seat 1 (a clean match whose stderr is kept); and the line of bot.js that throws."""
    bot = where / "jsbug"
    shutil.copytree(ROOT / "sample_bots" / "js-greedy", bot)
    (bot / "bot.yaml").write_text((bot / "bot.yaml").read_text().replace("name: js-greedy", "name: jsbug"))
    source = (bot / "bot.js").read_text()
    source = source.replace('''  if (message.type === "turn") return chooseMove(message, rules);''', f'''  if (message.type === "turn") {{
    turns += 1;
    if (seat === 1) console.error(`jsbug: thinking about move ${{turns}}`);
    if (seat === 0 && turns === 3) {{ {THROWS} }}
    return chooseMove(message, rules);
  }}''')
    source = source.replace('''    rules = Object.assign({}, DEFAULT_RULES, message.rules);''', '''    rules = Object.assign({}, DEFAULT_RULES, message.rules);
    seat = message.seat;''')
    source = source.replace("let rules = DEFAULT_RULES;", "let rules = DEFAULT_RULES;\nlet turns = 0;\nlet seat = 0;")
    (bot / "bot.js").write_text(source)
    line = next(n for n, text in enumerate(source.splitlines(), 1) if THROWS in text)
    return bot, line


def arena(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arena", *args], capture_output=True, text=True, cwd=cwd, timeout=300,
                          check=False)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_a_node_bots_type_error_is_shown_with_its_own_line_everywhere(tmp_path: Path) -> None:
    bot, line = node_bot(tmp_path)
    message = "TypeError: Cannot read properties of undefined (reading 'cards')"
    frame = f"bot.js:{line}:"
    played = arena("match", str(bot), "sample:greedy", "--threshold", "100", "--log", "m.jsonl.gz", cwd=tmp_path)
    assert played.returncode == 0, played.stderr
    assert "crash.exit" in played.stdout and message in played.stdout and frame in played.stdout, played.stdout

    config = tmp_path / "t.yaml"
    config.write_text(f"name: bugs\nbots: [{bot}, sample:greedy]\nplayers: 2\nrepeats: 1\nseed: 3\n"
                      "rules: {threshold: 100}\nworkers: 1\n")
    db = tmp_path / "results" / "arena.db"
    ran = arena("run", str(config), "--db", str(db), cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    listed = json.loads(arena("matches", "--db", str(db), "--json", cwd=tmp_path).stdout)["matches"]
    seat_of = {m["id"]: next(p["seat"] for p in m["players"] if p["bot"] == "jsbug") for m in listed}
    crashed = next(mid for mid, seat in seat_of.items() if seat == 0)
    clean = next(mid for mid, seat in seat_of.items() if seat == 1)

    shown = arena("show", str(crashed), "--db", str(db), cwd=tmp_path)
    assert shown.returncode == 0 and message in shown.stdout and frame in shown.stdout, shown.stdout
    as_json = json.loads(arena("show", str(crashed), "--db", str(db), "--json", cwd=tmp_path).stdout)
    seat = next(p for p in as_json["result"]["players"] if p["name"] == "jsbug")
    assert seat["fault"]["reason"] == "crash.exit" and message in seat["stderr"] and frame in seat["stderr"]

    quiet = arena("show", str(clean), "--db", str(db), cwd=tmp_path)  # a clean seat's stderr: its last lines
    assert "FAULT" not in quiet.stdout and "stderr:" in quiet.stdout and "jsbug: thinking about move" in quiet.stdout
    kept = json.loads(arena("show", str(clean), "--db", str(db), "--json", cwd=tmp_path).stdout)
    assert "jsbug: thinking about move 3\n" in next(p["stderr"] for p in kept["result"]["players"] if p["name"] == "jsbug")

    site = tmp_path / "results" / "site" / "t" / "bugs"
    listing = (site / "index.html").read_text()
    assert message.replace("'", "&#39;") in listing and frame in listing
    page = (site / "matches" / f"{crashed}.html").read_text()
    assert f"Match #{crashed} " in page and message.replace("'", "&#39;") in page and frame in page
    assert "jsbug: thinking about move 3" in (site / "matches" / f"{clean}.html").read_text()

    # A league server publishes the same store's pages without any stderr, a fault's or a clean seat's.
    store = Store(db, readonly=True)
    try:
        publish(store, "bugs", tmp_path / "public")
    finally:
        store.close()
    public = [path.read_text() for path in (tmp_path / "public").rglob("*") if path.suffix in (".html", ".js")]
    assert len(public) > 5 and any(f"Match #{crashed} " in text for text in public)
    assert not [text for text in public if "TypeError" in text or "thinking about move" in text or frame in text]


def test_a_clean_seats_budget_keeps_the_first_error_and_the_last_lines_within_its_cap() -> None:
    kept = StderrKeeper(FAULT_BYTES)
    written = [b"/b/bot.js:12\n", b"TypeError: hand is undefined\n", b"    at move (/b/bot.js:12:5)\n",
               *(f"debug: turn {turn}\n".encode() for turn in range(5_000))]
    for chunk in written:
        kept.add(chunk)
    assert len(kept.text().encode()) > 8 * CLEAN_BYTES  # the faulted seat's view: up to FAULT_BYTES
    text = kept.text(CLEAN_BYTES)
    cut = re.search(r"\n\[\.\.\. (\d+) bytes of stderr cut \.\.\.\]\n", text)
    assert cut is not None
    assert len(text.encode()) - len(cut.group(0)) <= CLEAN_BYTES
    assert len(text.encode()) - len(cut.group(0)) + int(cut.group(1)) == sum(map(len, written))  # counted exactly
    assert text.startswith("/b/bot.js:12\nTypeError: hand is undefined\n") and text.endswith("debug: turn 4999\n")
    assert kept.text(1 << 20) == kept.text()
    short = StderrKeeper(FAULT_BYTES)
    short.add(b"one line\n")
    assert short.text(CLEAN_BYTES) == "one line\n"


def test_retention_keeps_each_bots_latest_matches_stderr_and_clears_the_rest(tmp_path: Path) -> None:
    store = Store(tmp_path / "arena.db")
    tid = fill_store(store, logs=False)  # 12 matches of 2 seats: 8 per bot, a crash's stderr every fifth match

    def with_stderr() -> list[tuple[int, int]]:
        return [(row[0], row[1]) for row in store.db.execute(
            "SELECT bot_id, match_id FROM seats WHERE stderr_tail IS NOT NULL ORDER BY 1, 2 DESC")]

    assert len(with_stderr()) == 24
    latest = {bot: [m for b, m in with_stderr() if b == bot][:3] for bot in {row["id"] for row in store.bots(tid)}}
    assert store.clear_old_stderr(tid, 3) == 24 - 9
    assert with_stderr() == sorted(((b, m) for b, ms in latest.items() for m in ms), key=lambda s: (s[0], -s[1]))
    assert store.clear_old_stderr(tid, 3) == 0  # a pass with nothing new to clear clears nothing
    crashed = [m for m in store.matches(tid) if m.result is not None and m.result.players[1].fault is not None]
    old = [m for m in crashed if m.id not in latest[store.db.execute(
        "SELECT bot_id FROM seats WHERE match_id = ? AND seat = 1", (m.id,)).fetchone()[0]]]
    assert old and all(m.result is not None and m.result.players[1].stderr_tail == "" for m in old)
    store.close()
