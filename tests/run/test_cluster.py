"""Tournaments on a Dask cluster (arena/run/cluster.py), on loopback only: a LocalCluster, then a real ``dask
scheduler`` with ``dask worker`` subprocesses whose working directories hold none of the bots; a worker killed
mid-match, a worker of another arena version, and TLS with certificates made here."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from arena.bots.manifest import load_bot
from arena.match import matchview
from arena.run.config import load_config
from arena.run.tournament import run_tournament
from arena.stats.standings import standings as read_standings
from arena.store import Store
from tests.support.runs import error_said

# Found, not imported: importing Dask costs every test worker half a CPU second while it collects.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("distributed") is None,
                                reason="the cluster extra is not installed (pip install 'least-score-arena[cluster]')")

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_bots"
BOTS = [SAMPLES / "greedy", SAMPLES / "random", SAMPLES / "js-greedy"]
DASK = str(Path(sys.executable).parent / "dask")
START_TIMEOUT_S = 90


def write_config(directory: Path, **overrides: object) -> Path:
    config = {"name": "t", "bots": [str(bot) for bot in BOTS], "players": 2, "repeats": 2, "seed": 3,
              "rules": {"threshold": 25}, "limits": {"move_ms": 2000}, "workers": 2} | overrides
    path = directory / "t.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def results(db: Path) -> tuple[list[dict], list[dict]]:
    """The standings and every match's result (not its timing), as stored."""
    store = Store(db)
    tid = store.latest_tournament()["id"]
    standings = [line.to_dict(rank) for rank, line in enumerate(read_standings(store, tid), 1)]
    matches = [{key: value for key, value in match.items() if key not in ("id", "duration_s")}
               for match in store.match_list(tid)]
    return standings, matches


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, tuple[list[dict], list[dict]]]:
    """The config, and what the local process pool makes of it."""
    directory = tmp_path_factory.mktemp("reference")
    path = write_config(directory)
    report = run_tournament(load_config(path), Store(directory / "a.db"))
    assert report.played == 12 and report.failed == 0
    return path, results(directory / "a.db")


def run_cli(config: Path, db: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "arena", "run", str(config), "--db", str(db), "--no-site",
                           "--json", *args], cwd=ROOT, capture_output=True, text=True, env=env, timeout=300,
                          check=False)


class Cluster:
    """A ``dask scheduler`` and ``dask worker`` processes on 127.0.0.1, each in its own process group and its own
    directory (the workers' bot caches are there too)."""

    def __init__(self, directory: Path, tls: list[str] | None = None, port: int = 0) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.tls = tls or []
        self.scheduler_file = directory / "scheduler.json"
        self.processes: dict[str, subprocess.Popen] = {}
        self.start("scheduler", [DASK, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard",
                                 "--scheduler-file", str(self.scheduler_file), *self.tls,
                                 *(["--protocol", "tls"] if self.tls else [])])
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self.scheduler_file.exists():
            assert time.monotonic() < deadline and self.processes["scheduler"].poll() is None, self.log("scheduler")
            time.sleep(0.1)
        while True:  # written as the scheduler starts: wait until it names an address
            try:
                self.address: str = json.loads(self.scheduler_file.read_text())["address"]
                break
            except (ValueError, KeyError):
                time.sleep(0.1)

    def start(self, name: str, command: list[str], env: dict[str, str] | None = None) -> None:
        home = self.directory / name
        home.mkdir()
        with open(home / "out.log", "wb") as log:  # the child has its own copy of the descriptor
            self.processes[name] = subprocess.Popen(
                command, cwd=home, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True, env={**os.environ, **(env or {})})

    def add_worker(self, name: str, *extra: str, threads: int = 1) -> None:
        cache = self.directory / name / "cache"
        self.start(name, [DASK, "worker", self.address, "--nthreads", str(threads), "--no-dashboard", "--name", name,
                          "--local-directory", str(self.directory / name / "dask"), *self.tls, *extra],
                   env={"ARENA_BOT_CACHE": str(cache)})

    def wait_for_workers(self, count: int) -> dict[str, str]:
        """Block until ``count`` workers joined; their addresses by name."""
        from distributed import Client
        from distributed.security import Security

        security = Security(**dict(zip(("tls_ca_file", "tls_client_cert", "tls_client_key"), self.tls[1::2])))
        with Client(self.address, security=security if self.tls else None, timeout=START_TIMEOUT_S) as client:
            client.wait_for_workers(count, timeout=START_TIMEOUT_S)
            return {info["name"]: address for address, info in client.scheduler_info(n_workers=-1)["workers"].items()}

    def log(self, name: str) -> str:
        return (self.directory / name / "out.log").read_text(errors="replace")[-3000:]

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    started = Cluster(tmp_path / "cluster")
    try:
        yield started
    finally:
        started.stop()


def bot_processes(marker: str) -> list[int]:
    """Live processes whose command line names ``marker`` (bwrap binds a bot's cached directory by its path)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.slow
@pytest.mark.long
def test_local_cluster_gives_the_local_pool_results(reference, tmp_path):
    _, expected = reference
    path = write_config(tmp_path, cluster="local:2")  # the config's key, the same results: not in its identity
    report = run_tournament(load_config(path), Store(tmp_path / "a.db"))
    assert report.played == 12 and report.failed == 0 and not report.interrupted
    assert results(tmp_path / "a.db") == expected
    assert report.cluster is not None and report.cluster.workers == 2
    assert sum(report.cluster.per_worker.values()) == 12
    files = sorted((tmp_path / "logs" / "t").iterdir())
    logs = [path for path in files if not path.name.endswith(matchview.SUFFIX)]
    assert len(logs) == 12 and not [log for log in logs if not log.name.endswith(".jsonl.gz")]
    # Each with its view, made by the worker that played it and kept as of the log written here (arena/match/matchview.py).
    assert [path for path in files if path not in logs] == [matchview.view_path(log) for log in logs]
    assert all(matchview.read_view(os.fspath(log), log.stat()) is not None for log in logs)
    verified = subprocess.run([sys.executable, "-m", "arena", "replay", "--verify", str(logs[0])], cwd=ROOT,
                              capture_output=True, text=True, check=False)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def wait_until_done(db: Path, count: int, runner: subprocess.Popen) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        assert time.monotonic() < deadline and runner.poll() is None, "the run ended before it could be disturbed"
        try:
            # Read-only: a plain connect would create an empty file, which the runner rightly refuses as a store.
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as probe:
                if probe.execute("SELECT count(*) FROM matches WHERE status = 'done'").fetchone()[0] >= count:
                    return
        except sqlite3.Error:
            pass  # not created yet
        time.sleep(0.05)


def start_run(config: Path, db: Path, address: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "arena", "run", str(config), "--db", str(db), "--no-site",
                             "--json", "--cluster", address], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


@pytest.mark.slow
@pytest.mark.long
def test_a_worker_with_several_threads_plays_several_matches_at_once_with_the_same_results(reference, cluster,
                                                                                          tmp_path):
    path, expected = reference
    cluster.add_worker("wide", threads=3)
    workers = cluster.wait_for_workers(1)
    db = tmp_path / "a.db"
    runner = start_run(path, db, cluster.address)
    stdout, stderr = runner.communicate(timeout=300)
    assert runner.returncode == 0, stderr
    assert results(db) == expected
    assert json.loads(stdout)["cluster"]["matches_per_worker"] == {workers["wide"]: 12}


@pytest.mark.slow
@pytest.mark.long
def test_real_workers_without_the_bots_one_refused_one_killed(reference, cluster, tmp_path):
    """Three ``dask worker`` processes in directories without the bots: one reports another arena version and is
    refused; one is killed (kill -9 of its process group) in the middle of a match; nothing changes."""
    path, expected = reference
    preload = tmp_path / "other_version.py"  # written here: a test module would be imported by pytest itself
    preload.write_text("import arena\narena.__version__ = '0.0.0+other'\n")
    cluster.add_worker("w1")
    cluster.add_worker("w2")
    cluster.add_worker("old", "--preload", str(preload))
    workers = cluster.wait_for_workers(3)
    db = tmp_path / "a.db"
    runner = start_run(path, db, cluster.address)
    victim = str(cluster.directory / "w1" / "cache")
    deadline = time.monotonic() + START_TIMEOUT_S
    while not bot_processes(victim):  # w1 is in the middle of a match
        assert time.monotonic() < deadline and runner.poll() is None, "w1 never played"
        time.sleep(0.02)
    os.killpg(cluster.processes["w1"].pid, signal.SIGKILL)  # its nanny and its worker
    cluster.processes["w1"].wait()
    stdout, stderr = runner.communicate(timeout=300)
    assert runner.returncode == 0, stderr
    done = json.loads(stdout)
    assert done["played"] == 12
    assert results(db) == expected
    with sqlite3.connect(db) as probe:
        assert probe.execute("SELECT count(*), sum(status = 'done'), max(attempts) FROM matches").fetchone() \
            == (12, 12, 1)

    report = done["cluster"]
    assert report["address"] == cluster.address
    assert set(report["matches_per_worker"]) <= {workers["w1"], workers["w2"]}
    assert sum(report["matches_per_worker"].values()) == 12
    assert list(report["refused"]) == [workers["old"]]
    assert "arena 0.0.0+other, the runner has" in report["refused"][workers["old"]]
    assert f"refusing worker {workers['old']}" in stderr
    hashes = {load_bot(bot).files_hash for bot in BOTS}
    # Every bot reached the live worker by content, into its own cache; the refused one got none.
    assert {entry.name for entry in (cluster.directory / "w2" / "cache").iterdir()} == hashes
    assert not (cluster.directory / "old" / "cache").exists()
    deadline = time.monotonic() + 10
    while bot_processes(victim):  # bwrap dies with its worker, and the bots with it
        assert time.monotonic() < deadline, f"bots of the killed worker live on: {bot_processes(victim)}"
        time.sleep(0.1)


def make_certificates(directory: Path) -> list[str]:
    """A CA and one certificate it signs for 127.0.0.1 (used by the scheduler, the worker and the runner)."""
    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=arena-test-ca",
            "-keyout", "ca.key", "-out", "ca.pem")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", "node.key",
            "-out", "node.csr")
    (directory / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "node.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "2", "-extfile", "ext.cnf", "-out", "node.pem")
    return ["--tls-ca-file", str(directory / "ca.pem"), "--tls-cert", str(directory / "node.pem"),
            "--tls-key", str(directory / "node.key")]


@pytest.mark.slow
@pytest.mark.long
def test_tls_cluster_and_a_lost_scheduler(reference, tmp_path):
    """A TLS cluster with certificates made here; its scheduler killed mid-run: the runner says so, connects to the
    scheduler that listens there again, and finishes the run with the results of an uninterrupted one."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed to make the test's certificates")
    path, expected = reference
    certificates = tmp_path / "certs"
    certificates.mkdir()
    tls = make_certificates(certificates)
    cluster = Cluster(tmp_path / "cluster", tls)
    again = None
    try:
        assert cluster.address.startswith("tls://127.0.0.1:")
        cluster.add_worker("w1")
        cluster.wait_for_workers(1)
        plain = run_cli(path, tmp_path / "plain.db", "--cluster", cluster.address)
        assert plain.returncode == 1 and "tls:// needs certificates" in error_said(plain)
        env = {**os.environ, "DASK_DISTRIBUTED__COMM__TLS__CA_FILE": tls[1],
               "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT": tls[3], "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY": tls[5]}
        db = tmp_path / "a.db"
        runner = start_run(path, db, cluster.address, env)
        wait_until_done(db, 2, runner)
        cluster.stop()
        again = Cluster(tmp_path / "again", tls, port=int(cluster.address.rsplit(":", 1)[1]))
        again.add_worker("w2")
        stdout, stderr = runner.communicate(timeout=300)
        assert runner.returncode == 0, stderr
        assert f"lost the Dask scheduler at {cluster.address}" in stderr and "connecting again" in stderr
        done = json.loads(stdout)
        assert done["cluster"]["reconnects"] == 1 and done["cluster"]["workers"] == 1
        assert results(db) == expected
    finally:
        cluster.stop()
        if again is not None:
            again.stop()


def test_cluster_addresses_are_checked(tmp_path):
    path = write_config(tmp_path, cluster="http://nowhere:1")
    done = run_cli(path, tmp_path / "a.db")  # --json: the error is a JSON object on stdout (docs/CLI.md)
    error = json.loads(done.stdout)
    assert done.returncode == 2 and "cluster: expected a Dask scheduler address" in error["error"]
    assert error["field"] == "cluster"
    done = run_cli(write_config(tmp_path), tmp_path / "a.db", "--cluster", "local:0")
    assert done.returncode == 2 and "--cluster" in done.stdout and "local:N" in json.loads(done.stdout)["error"]


def test_bots_travel_by_content_and_a_wrong_hash_is_refused(tmp_path, monkeypatch):
    from arena.run.cluster import WorkerUnfit, materialise, pack_bot

    monkeypatch.setenv("ARENA_BOT_CACHE", str(tmp_path / "cache"))
    bot = load_bot(SAMPLES / "greedy")
    blob = pack_bot(bot)
    other = load_bot(SAMPLES / "random")
    with pytest.raises(WorkerUnfit, match="hashing to"):
        materialise(other.files_hash, blob)  # a blob that is not what it claims to be never enters the cache
    assert not (tmp_path / "cache" / other.files_hash).exists()
    unpacked = materialise(bot.files_hash, blob)
    assert unpacked == tmp_path / "cache" / bot.files_hash
    assert load_bot(unpacked).files_hash == bot.files_hash and load_bot(unpacked).command == bot.command
    assert all(path.stat().st_mode & 0o004 for path in unpacked.rglob("*"))  # bots run as other uids
    assert materialise(bot.files_hash, b"not even a tar") == unpacked  # cached: reused, not unpacked again
    (tmp_path / "cache").chmod(0o777)
    with pytest.raises(WorkerUnfit, match="only writable by"):
        materialise(bot.files_hash, blob)


def test_without_a_cluster_dask_is_not_imported():
    code = ("import sys, arena.cli.main, arena.run.tournament, arena.run.players, arena.run.league; "
            "sys.exit(int(any(name.split('.')[0] in ('dask', 'distributed') for name in sys.modules)))")
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=False).returncode == 0


def test_a_cluster_player_tries_its_scheduler_again_ticking_until_its_patience_ends(monkeypatch, tmp_path):
    """Nothing listens at the address: the player says when it tries next and waits twice as long each time,
    ticking while it waits (a runner's lease and stop: a tick that raises ends it), and gives up once its patience
    is spent. Counted in tries, not timed: the waits are recorded, not slept."""
    import socket

    from arena.game.rules import Rules
    from arena.match.protocol import Limits
    from arena.run import cluster as dask_cluster
    from arena.run import players
    from arena.run.jobs import MatchJob
    from arena.sandbox import SandboxLimits

    class Stop(Exception):
        pass

    def stop() -> None:
        raise Stop

    with pytest.raises(Stop):
        players._waited(60.0, stop)  # the real wait ticks first: a stop ends it at once
    waits: list[float] = []

    def waited(seconds: float, tick) -> None:
        waits.append(seconds)
        tick()

    monkeypatch.setattr(players, "_waited", waited)
    monkeypatch.setattr(dask_cluster, "CONNECT_TIMEOUT_S", 0.05)
    with socket.socket() as probe:  # a loopback port that was free a moment ago: connections to it are refused
        probe.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{probe.getsockname()[1]}"
    bot = load_bot(SAMPLES / "greedy")
    job = MatchJob(0, 1, (bot, bot), Rules(), Limits(), SandboxLimits(), "process", str(tmp_path / "0.jsonl.gz"), 0)
    said: list[str] = []
    forever = players.DaskCluster(address, said.append, patience=None)
    with pytest.raises(Stop):
        list(forever.play([job], lambda: stop() if len(waits) == 6 else None))
    assert waits == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0] and not forever.connected and forever.stats.reconnects == 0
    assert [message.rsplit(": ", 1)[1] for message in said] == [f"trying again in {wait:.0f} s" for wait in waits]
    assert all(message.startswith(f"cannot reach the Dask scheduler at {address}") for message in said)

    said.clear()
    impatient = players.DaskCluster(address, said.append, patience=0.0)
    with pytest.raises(dask_cluster.ClusterError, match=r"cannot reach the Dask scheduler at .*\(tried for 0 s\)"):
        list(impatient.play([job], lambda: None))
    assert said == [] and not impatient.connected


@pytest.mark.slow
@pytest.mark.long
def test_a_league_that_loses_its_scheduler_connects_again_and_plays_on(tmp_path, monkeypatch):
    """A league on a real scheduler, which is killed mid-league: the league does not stop, says it is connecting
    again (and, while nothing listens there, when it tries next), and once a scheduler listens there again it
    plays on; every match is stored once."""
    import threading

    from arena.run import cluster as dask_cluster
    from arena.run.config import LeagueConfig
    from arena.run.league import League

    monkeypatch.setattr(dask_cluster, "CONNECT_TIMEOUT_S", 3.0)  # an attempt gives up sooner than 30 s

    def until(condition, what: str, timeout: float = START_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, f"{what}: {league.state.to_dict()}"
            time.sleep(0.1)

    cluster = Cluster(tmp_path / "cluster")
    again = None
    cluster.add_worker("w1")
    cluster.wait_for_workers(1)
    config = LeagueConfig(name="ladder", entries=(str(SAMPLES / "greedy"), str(SAMPLES / "random")), players=2,
                          seed=3, registry=tmp_path / "bots", cluster=cluster.address)
    league = League(config, tmp_path / "league.db")
    stop = threading.Event()
    loop = threading.Thread(target=league.run, args=(stop,))
    loop.start()
    try:
        until(lambda: league.state.matches_played >= 2, "the league plays on the cluster")
        cluster.stop()
        until(lambda: league.state.to_dict()["cluster"]["reconnects"] >= 1 and "connecting" in league.state.state,
              "it notices")
        until(lambda: "cannot reach the Dask scheduler" in league.state.state and "trying again in" in
              league.state.state, "it says when it tries next")
        assert loop.is_alive() and league.state.error is None
        before = league.state.matches_played
        again = Cluster(tmp_path / "again", port=int(cluster.address.rsplit(":", 1)[1]))
        again.add_worker("w2")
        until(lambda: league.state.matches_played >= before + 4, "it plays on once a scheduler is back")
        assert league.state.error is None and league.state.to_dict()["cluster"]["reconnects"] >= 1
    finally:
        stop.set()
        loop.join(timeout=120)
        cluster.stop()
        if again is not None:
            again.stop()
    assert not loop.is_alive()
    db = sqlite3.connect(tmp_path / "league.db")
    done = db.execute("SELECT idx, count(*) FROM matches WHERE status = 'done' GROUP BY idx").fetchall()
    assert len(done) >= 6 and all(count == 1 for _, count in done)
    assert db.execute("SELECT count(*) FROM matches WHERE status = 'failed'").fetchone()[0] == 0
