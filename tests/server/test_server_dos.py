"""The denial-of-service attacks of the 2026-12 review, each run against a real ``arena serve`` on loopback (started
with a descriptor limit of 1,024, as under systemd), while a probe measures what other clients get: p50/p95 of
``GET /`` and ``GET /api/standings``, printed with ``-s`` (bench/server_dos.py measures the same and prints JSON).

The probe's bound in these tests is loose (the machine is shared and loaded: a p95 of 1 s is what the bench shows
on a quiet one); what each test asserts unambiguously is the attack's own limit: the refusal, the closed
connection, the file never written.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench.server_dos import (
    Probe,
    alias_bomb,
    deep_build,
    form_hold,
    hold_connections,
    many_directories,
    scratch_bytes,
    slow_failing_build,
    start_server,
    tar_gz,
)
from tests.support.server import Server

pytestmark = [pytest.mark.slow, pytest.mark.long]

ROOT = Path(__file__).resolve().parents[2]
PLAYER = (ROOT / "sample_bots" / "random" / "bot.py").read_bytes()
LIMITS = """\
  max_connections: 100
  header_timeout_s: 2
  body_timeout_s: 2
  upload_queue: 2
  attempts_per_hour: 6
  build_scratch_mb: 64
"""
PROBE_BOUND_MS = 5000
"""What the tests assert of the probe's p95 on a loaded machine (unguarded, the attacks made it 30,000+ ms)."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with start_server(tmp_path_factory.mktemp("dos"), LIMITS, open_files=1024) as running:
        yield running


def report(name: str, probe: Probe) -> None:
    found = probe.report()
    print(f"\n{name}: " + "; ".join(f"{path} p50 {entry['p50_ms']} ms, p95 {entry['p95_ms']} ms, "
                                    f"{entry['requests']} answered, {entry['failed']} failed {entry['failures']}"
                                    for path, entry in found.items()))
    assert probe.worst_p95_ms() < PROBE_BOUND_MS, found


def test_an_alias_bomb_is_a_short_400_and_stalls_no_one(server: Server) -> None:
    token = server.add_author("bomber")
    with Probe("127.0.0.1", server.port) as probe:
        started = time.monotonic()
        reply = server.upload(token, alias_bomb(8))
        took = time.monotonic() - started
        time.sleep(1)
    assert reply.status_code == 400 and "once its aliases (*name) are expanded" in reply.json()["error"]
    assert len(reply.content) < 1000 and took < 30
    report("alias bomb", probe)
    assert not any(probe.failures.values())


def test_held_connections_are_closed_and_capped_and_the_log_stays_small(server: Server) -> None:
    log_before = server.log.stat().st_size
    with Probe("127.0.0.1", server.port) as probe:
        held = hold_connections(server.port, 1100, 5)  # more than the server's 1,024 descriptors
        open_files = server.open_files_now()
    assert held["opened"] >= 1000
    assert held["closed_by_server"] == held["opened"]  # none left hanging: timed out or evicted
    assert open_files < 300
    assert httpx.get(f"{server.url}/api/league").json()["state"] != "stopped"
    growth = server.log.stat().st_size - log_before
    print(f"\nheld connections: {held}, server descriptors {open_files}, log +{growth} bytes")
    assert growth < 200_000
    report("1,100 held connections", probe)
    answered = sum(len(times) for times in probe.times.values())
    # While every held connection is younger than the eviction age, the cap answers a new one at once with 503 and
    # Retry-After (how many probes land in that window depends on the host's load: 10-30%). What the attack must
    # not do is make a client wait or lose its connection.
    stalled = [failure for failures in probe.failures.values() for failure in failures if failure != "HTTP 503"]
    assert answered >= 4 and len(stalled) <= answered // 4, stalled


def open_paths(pid: int) -> list[str]:
    """What process ``pid`` has open, skipping descriptors it closes while they are listed."""
    found = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            found.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except FileNotFoundError:
            pass
    return found


def test_the_upload_form_is_refused_before_its_archive_is_read(server: Server) -> None:
    with Probe("127.0.0.1", server.port) as probe:
        answers = form_hold(server.port, connections=20)
        kept = scratch_bytes(server)
        deleted = open_paths(server.pid)
    # Every held form got its 401 (a bad token) without sending the rest of its 5 MiB: nothing spooled.
    assert {line for line, _ in answers} == {"HTTP/1.1 401 Unauthorized"}
    assert kept == 0 and not [path for path in deleted if path.endswith("(deleted)")]
    print(f"\nheld forms: slowest answer {max(took for _, took in answers):.2f} s")
    report("20 held upload forms", probe)


def test_one_authors_uploads_queue_one_at_a_time_and_a_full_queue_is_503(server: Server) -> None:
    tokens = {name: server.add_author(name) for name in ("alice", "bob", "carol", "dave", "erin")}
    answers: list[tuple[str, httpx.Response]] = []
    lock = threading.Lock()

    def send(name: str, bot: str) -> None:
        reply = server.upload(tokens[name], slow_failing_build(bot, 6))
        with lock:
            answers.append((name, reply))

    with Probe("127.0.0.1", server.port) as probe:
        threads = [threading.Thread(target=send, args=("alice", f"alice-{i}")) for i in range(12)]
        threads += [threading.Thread(target=send, args=(name, f"{name}-slow")) for name in tokens if name != "alice"]
        for thread in threads:
            thread.start()
            time.sleep(0.05)
        for thread in threads:
            thread.join()
    statuses = sorted(reply.status_code for _, reply in answers)
    print(f"\nupload flood: {statuses}")
    # slots (1 on 2 cores) + upload_queue (2) admitted, each failing its build; the rest told when to come back
    slots = max(1, (os.cpu_count() or 2) // 2)
    assert statuses.count(422) == slots + 2
    assert sum(1 for name, reply in answers if name == "alice" and reply.status_code == 422) <= 1
    for _, reply in answers:
        if reply.status_code != 422:
            assert reply.status_code in (429, 503) and int(reply.headers["retry-after"]) > 0, reply.text
    report("16 slow uploads", probe)


def test_refused_uploads_count_against_the_attempts_limit(server: Server) -> None:
    token = server.add_author("frank")
    broken = tar_gz({"bot.yaml": b"name: [not, a, name]\n", "bot.py": PLAYER})
    statuses = [server.upload(token, broken).status_code for _ in range(7)]
    assert statuses[:6] == [400] * 6
    assert statuses[6] == 429


def test_a_revoked_authors_upload_in_flight_is_not_stored(server: Server) -> None:
    token = server.add_author("gina")
    manifest = b"name: gina-bot\ncommand: python3 bot.py\nbuild: sh -c 'sleep 8'\n"
    result: list[httpx.Response] = []
    upload = threading.Thread(target=lambda: result.append(server.upload(token, tar_gz(
        {"bot.yaml": manifest, "bot.py": PLAYER}))))
    upload.start()
    # Revoke once the build is under way (its scratch exists), not after a fixed pause a loaded host may outrun.
    incoming = server.root / "results" / "bots" / ".incoming"
    deadline = time.monotonic() + 60
    while not any(entry.name.startswith("gina-bot-") for entry in incoming.glob("*")):
        assert time.monotonic() < deadline and upload.is_alive(), f"the build never started: {result}"
        time.sleep(0.1)
    subprocess.run([sys.executable, "-m", "arena", "author", "revoke", "gina", "--db", str(server.db)], check=True,
                   capture_output=True, cwd=ROOT, timeout=60)
    upload.join()
    assert result[0].status_code == 401 and "revoked" in result[0].json()["error"]
    assert "gina-bot" not in [bot["name"] for bot in httpx.get(f"{server.url}/api/bots").json()["bots"]]


def test_house_bot_names_and_look_alikes_cannot_be_taken(server: Server) -> None:
    token = server.add_author("mallory")
    for name, expected in (("greedy", "belongs to a house bot"), ("gr33dy", "looks like 'greedy'"),
                           ("rand0m", "looks like 'random'")):
        reply = server.upload(token, tar_gz({"bot.yaml": f"name: {name}\ncommand: python3 bot.py\n".encode(),
                                             "bot.py": PLAYER}))
        assert reply.status_code == 403 and expected in reply.json()["error"], reply.text


def test_deep_trees_are_refused_cleanly_and_leave_nothing(server: Server) -> None:
    token = server.add_author("deep")
    directories = many_directories(40_000)
    with Probe("127.0.0.1", server.port) as probe:
        started = time.monotonic()
        deep = server.upload(token, deep_build("deep-bot"))
        deep_s = time.monotonic() - started
        started = time.monotonic()
        dirs = server.upload(token, directories)
        dirs_s = time.monotonic() - started
    print(f"\ndeep build: {deep.status_code} in {deep_s:.1f} s; 40,000 directories: {dirs.status_code} in "
          f"{dirs_s:.1f} s")
    assert deep.status_code == 422 and "nested too deeply" in deep.text, deep.text
    assert dirs.status_code == 400 and "too many directories" in dirs.json()["error"]
    assert dirs_s < 30
    assert scratch_bytes(server) == 0
    incoming = server.root / "results" / "bots" / ".incoming"
    assert [entry.name for entry in incoming.iterdir()] in ([], ["uploads"])
    report("deep trees", probe)


def test_a_build_that_fills_its_disk_hits_its_quota_not_the_hosts(server: Server) -> None:
    token = server.add_author("filler")
    fill = b"i=0; while head -c 20000000 /dev/zero > /bot/fill$i; do i=$((i+1)); done; echo wrote $i files; exit 1\n"
    archive = tar_gz({"bot.yaml": b"name: filler-bot\ncommand: python3 bot.py\nbuild: sh fill.sh\n",
                      "bot.py": PLAYER, "fill.sh": fill})
    result: list[httpx.Response] = []
    upload = threading.Thread(target=lambda: result.append(server.upload(token, archive)))
    most = 0
    with Probe("127.0.0.1", server.port) as probe:
        upload.start()
        while upload.is_alive():
            most = max(most, scratch_bytes(server))
            time.sleep(0.05)
    reply = result[0]
    print(f"\nfilling build: {reply.status_code}; the host's scratch peaked at {most} bytes")
    assert reply.status_code == 422, reply.text
    assert "ran out of room: its /bot and its /tmp hold at most 64 MiB each" in reply.json()["error"]
    assert "wrote 3 files" in reply.text  # 60 MB fit in the 64 MiB tmpfs, the fourth file did not
    assert most < 1 << 20  # the sources' copy; the build's bytes never reach the host's disk
    report("a build filling its disk", probe)


def test_the_public_bot_page_names_the_real_owner_not_the_declared_author(server: Server) -> None:
    token = server.add_author("olga")
    manifest = b"name: olga-bot\ncommand: python3 bot.py\nauthor: alice\ndescription: by alice, honest\n"
    reply = server.upload(token, tar_gz({"bot.yaml": manifest, "bot.py": PLAYER}))
    assert reply.status_code == 201, reply.text
    site = server.root / "results" / "public"
    deadline = time.monotonic() + 120

    def bot_page() -> str | None:
        for page in site.rglob("*.html"):
            text = re.sub(r"\s+", "", page.read_text())
            if "<h1>olga-bot@1<span" in text:
                return text
        return None

    while (page := bot_page()) is None:
        assert time.monotonic() < deadline, "olga-bot@1 never got a page"
        time.sleep(1)
    assert '<thscope="row">owner</th><td><code>olga</code></td>' in page
    assert '<thscope="row">author(declared)</th><td><code>alice</code></td>' in page


def test_a_restart_sweeps_what_a_kill_9_during_a_build_left(tmp_path: Path) -> None:
    with start_server(tmp_path / "league") as first:
        token = first.add_author("kim")
        manifest = b"name: kim-bot\ncommand: python3 bot.py\nbuild: sh -c 'sleep 30'\n"
        def send() -> None:
            with contextlib.suppress(httpx.HTTPError):  # the server is killed under it
                first.upload(token, tar_gz({"bot.yaml": manifest, "bot.py": PLAYER}), timeout=60)

        upload = threading.Thread(target=send, daemon=True)
        upload.start()
        incoming = tmp_path / "league" / "results" / "bots" / ".incoming"
        deadline = time.monotonic() + 60
        while not any(entry.name.startswith("kim-bot-") for entry in incoming.glob("*")):
            assert time.monotonic() < deadline, "the build never started"
            time.sleep(0.2)
        first.process.kill()
        first.process.wait()
    left = sorted(entry.name for entry in incoming.iterdir())
    assert any(name.startswith("kim-bot-") for name in left) and "uploads" in left
    with start_server(tmp_path / "league"):
        assert sorted(entry.name for entry in incoming.iterdir()) == ["uploads"]  # made anew, empty
        assert list((incoming / "uploads").iterdir()) == []


def test_every_answer_forbids_framing_and_foreign_scripts(server: Server) -> None:
    for path in ("/", "/api/standings", "/upload", "/me/login"):
        headers = httpx.get(f"{server.url}{path}").headers
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
        assert headers["x-frame-options"] == "DENY" and headers["x-content-type-options"] == "nosniff"
