"""What an operator sees of a real ``arena serve`` on loopback: ``/healthz``, ``/readyz``, ``/metrics`` in the
Prometheus text format, and the JSON log lines of ``--log-format json``.

The fast tests share one server whose league has a single house bot, so it waits for bots and plays nothing; the
slow test starts one whose league plays, and watches the match counter move.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from arena.server.metrics import PHASES, phase
from tests.support.server import SAMPLES, Server, league_server


def start(root: Path, house: list[Path], *options: str, server: str = "") -> Server:
    return league_server(root, "ops", house, *options, server=server)


@pytest.fixture(scope="module")
def quiet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A league of one house bot (it waits for bots), its logs in JSON."""
    with start(tmp_path_factory.mktemp("ops"), [SAMPLES / "greedy"], "--log-format", "json").running() as server:
        yield server


def samples(server: Server) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of ``/metrics``, parsed by prometheus-client's own parser, by name and labels."""
    reply = httpx.get(f"{server.url}/metrics", timeout=10)
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"].startswith("text/plain; version=")
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(reply.text) for sample in family.samples}


def value(found: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


def waiting(server: Server) -> bool:
    """Whether the league waits for bots (it is ready before, while it publishes its first site: "running")."""
    answer = httpx.get(f"{server.url}/readyz", timeout=10)
    return answer.status_code == 200 and answer.json()["phase"] == "waiting"


def test_health_and_readiness_answer(quiet: Server) -> None:
    health = httpx.get(f"{quiet.url}/healthz", timeout=10)
    assert (health.status_code, health.text) == (200, "ok\n")
    quiet.wait_for("the league to wait for bots", lambda: waiting(quiet))
    ready = httpx.get(f"{quiet.url}/readyz", timeout=10).json()
    assert ready["ready"] is True and ready["phase"] == "waiting" and ready["state"] == "waiting for bots"


def test_request_counts_and_latencies_are_labelled_by_route_template(quiet: Server) -> None:
    before = samples(quiet)
    for path in ("/api/standings", "/api/standings", "/me/play/abc/state", "/no/such/page/1", "/no/such/page/2"):
        httpx.get(f"{quiet.url}{path}", timeout=10)
    after = samples(quiet)
    moved = {key: after[key] - before.get(key, 0.0) for key in after if after[key] != before.get(key, 0.0)}
    total = "arena_http_requests_total"
    assert moved[(total, (("method", "GET"), ("route", "/api/standings"), ("status", "200")))] == 2
    # the template, not the path: a client that invents paths cannot add labels
    assert value(moved, total, method="GET", route="/me/play/{game}/state", status="404") == 1
    assert value(moved, total, method="GET", route="<unmatched>", status="404") == 2
    assert not any("/no/such" in str(key) or "abc" in str(key) for key in after)
    count = "arena_http_request_duration_seconds_count"
    assert value(moved, count, method="GET", route="/api/standings") == 2
    assert value(after, "arena_http_request_duration_seconds_sum", method="GET", route="/api/standings") > 0


def test_the_league_upload_queue_and_connections_are_reported(quiet: Server) -> None:
    quiet.wait_for("the league to wait for bots", lambda: waiting(quiet))
    found = samples(quiet)
    assert value(found, "arena_league_phase", arena_league_phase="waiting") == 1
    assert sum(value(found, "arena_league_phase", arena_league_phase=name) for name in PHASES) == 1
    assert value(found, "arena_ready") == 1
    assert value(found, "arena_league_matches_played_total") == 0
    assert value(found, "arena_check_slots") >= 1 and value(found, "arena_check_slots_in_use") == 0
    assert ("arena_upload_queue", ()) in found
    with httpx.Client() as held:  # a second connection kept open while /metrics is read on another
        held.get(f"{quiet.url}/healthz")
        assert value(samples(quiet), "arena_open_connections") >= 2


def test_json_logs_are_one_object_per_line_with_access_fields(quiet: Server) -> None:
    httpx.get(f"{quiet.url}/api/league?from=json-log-test", timeout=10)
    lines = (quiet.root / "serve.log").read_text().splitlines()
    records = [json.loads(line) for line in lines]  # every line: a JSON object, nothing else
    assert all({"time", "level", "logger", "message"} <= record.keys() for record in records)
    access = [record for record in records if record["logger"] == "uvicorn.access"
              and record["path"] == "/api/league?from=json-log-test"]
    assert len(access) == 1
    assert (access[0]["method"], access[0]["status"], access[0]["client"].split(":")[0]) == ("GET", 200, "127.0.0.1")
    assert any(record["logger"] == "arena.server" and "league 'ops'" in record["message"] for record in records)


@pytest.mark.parametrize(("state", "expected"), [
    ("starting", "starting"), ("running", "running"), ("waiting for bots", "waiting"),
    ("connecting to tcp://head:8786", "connecting"), ("paused by an error: trying again in 4 s", "failed"),
    ("paused: the disk is full (no space left for the league's results or logs); it goes on", "disk full"),
    ("lost the Dask scheduler at tcp://head:8786: connecting again", "stalled"), ("stopped", "stopped")])
def test_league_states_map_to_a_bounded_set_of_phases(state: str, expected: str) -> None:
    assert phase(state) == expected


@pytest.mark.slow
def test_the_match_counter_moves_as_the_league_plays(tmp_path: Path) -> None:
    with start(tmp_path, [SAMPLES / "greedy", SAMPLES / "random"]).running() as server:
        server.wait_for("matches", lambda: value(samples(server), "arena_league_matches_played_total") >= 2, 120)
        found = samples(server)
        assert value(found, "arena_league_batches_total") >= 1
        assert value(found, "arena_league_phase", arena_league_phase="running") == 1
        ready = httpx.get(f"{server.url}/readyz", timeout=10)
        assert ready.status_code == 200 and ready.json()["phase"] == "running"
        counted = value(samples(server), "arena_league_matches_played_total")
        assert counted <= httpx.get(f"{server.url}/api/league", timeout=10).json()["matches_played"]


def somaxconn() -> int:
    return int(Path("/proc/sys/net/core/somaxconn").read_text())


@pytest.mark.slow
def test_sigterm_and_sigint_stop_the_server_cleanly_with_exit_0(tmp_path: Path) -> None:
    """What systemd's and Docker's stop sends is a clean stop: exit 0, the league's lease let go, and under
    ``--log-format json`` a last line that is JSON too (it was "arena: interrupted" and exit 1). The server's
    listening queue is ``server.listen_backlog`` while it serves."""
    server = start(tmp_path, [SAMPLES / "greedy", SAMPLES / "random"], "--log-format", "json",
                   server="server: {listen_backlog: 1000}\n")
    with server.running():
        # The kernel's queue as configured, though asyncio calls listen() with its accept batch (128) when it starts
        shown = subprocess.run(["ss", "-ltnH", f"sport = :{server.port}"], capture_output=True, text=True,
                               check=True, timeout=30).stdout.split()
        assert shown[0] == "LISTEN" and int(shown[2]) == min(1000, somaxconn()), shown
        server.wait_for("matches", lambda: httpx.get(f"{server.url}/api/league").json()["matches_played"] >= 1, 120)
        server.stop(signal.SIGTERM)  # mid-league: a batch is in play or about to be
    assert server.process is not None and server.process.returncode == 0
    records = [json.loads(line) for line in (tmp_path / "serve.log").read_text().splitlines()]
    assert records[-1]["logger"] == "arena.server" and "'ops' stopped on SIGTERM" in records[-1]["message"]
    with sqlite3.connect(server.db) as store:
        assert store.execute("SELECT count(*) FROM leases").fetchone()[0] == 0
    (tmp_path / "serve.log").unlink()
    server.options = ()  # text logs, and Ctrl-C: the same
    with server.running():
        server.stop(signal.SIGINT)
    log = (tmp_path / "serve.log").read_text()
    assert server.process.returncode == 0, log
    assert "'ops' stopped on SIGINT" in log.splitlines()[-1] and "interrupted" not in log
