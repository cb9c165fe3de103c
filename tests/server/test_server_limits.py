"""The server's limits as pieces, without a server: bounded YAML, the upload queue's rules, rate-limited logs,
look-alike names, walks of deep trees. tests/server/test_server_dos.py runs the attacks against a real server."""

from __future__ import annotations

import io
import itertools
import logging
import os
import tarfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from arena.bots.archive import ArchiveRejected, unpack
from arena.bots.files import SubmissionRejected, remove_tree, scan, walk
from arena.bots.manifest import ManifestError, load_bot
from arena.registry.versions import Registry, sweep_incoming
from arena.server.admission import Admission, AdmissionLimits
from arena.server.authors import looks_alike, skeleton
from arena.server.guard import ConnectionLimits, GuardMismatch, RateLimitedLog, guarded_protocol, self_test
from arena.server.sessions import MAX_PER_AUTHOR, LoginGate, LoginLimits, Sessions
from arena.server.views import Views
from arena.store import Store
from arena.yamlfile import TooLargeError, excerpt, load_yaml


def bomb(depth: int) -> str:
    levels = ["&l0 [lol,lol,lol,lol,lol,lol,lol,lol,lol,lol]"]
    levels += [f"&l{i} [{','.join([f'*l{i - 1}'] * 10)}]" for i in range(1, depth)]
    return f"name: bomb\ncommand: python3 bot.py\ndescription: [{', '.join(levels)}]\n"


def test_an_alias_bomb_is_refused_before_it_is_expanded() -> None:
    started = time.process_time()
    with pytest.raises(TooLargeError, match="line 3: too many values: more than 100000 once its aliases"):
        load_yaml(bomb(12))  # 10**12 leaves: expanding it, or its repr, would never end
    assert time.process_time() - started < 1.0
    assert load_yaml(bomb(2))["description"][1][0][0] == "lol"  # a few aliases are fine


@pytest.mark.parametrize("text, message", [
    ("[" * 5000 + "]" * 5000, "nested too deeply"),
    ("a: " + "x" * (2 << 20), "too long: 2097155 bytes"),
    ("a: &a [1, *a]", "an alias inside its own anchor"),
])
def test_other_unbounded_yaml_is_refused_with_a_yaml_error(text: str, message: str) -> None:
    with pytest.raises(yaml.YAMLError, match=message):
        load_yaml(text)


def test_a_bomb_in_bot_yaml_is_a_short_manifest_error(tmp_path: Path) -> None:
    (tmp_path / "bot.yaml").write_text(bomb(9))
    with pytest.raises(ManifestError) as refused:
        load_bot(tmp_path)
    assert "more than 2000 once its aliases" in str(refused.value) and len(str(refused.value)) < 300


def test_a_wrong_value_is_shown_as_a_bounded_excerpt(tmp_path: Path) -> None:
    (tmp_path / "bot.yaml").write_text("name: x\ncommand: python3 bot.py\nauthor: [" + ", ".join(["y" * 200] * 200)
                                       + "]\n")
    with pytest.raises(ManifestError, match=r"field author: expected a string, got \['yyy") as refused:
        load_bot(tmp_path)
    assert len(str(refused.value)) < 300
    (tmp_path / "bot.yaml").write_text("name: x\ncommand: python3 bot.py\n# " + "z" * (70 << 10) + "\n")
    with pytest.raises(ManifestError, match=r"too long: \d+ bytes \(a bot.yaml may have at most 64 KiB\)"):
        load_bot(tmp_path)
    nested: list[object] = []
    for _ in range(100):
        nested = [nested] * 10
    assert len(excerpt(nested)) <= 120  # 10**100 leaves: looked at, not walked


def test_the_upload_queue_takes_one_per_author_and_a_bounded_number_in_all() -> None:
    now = [0.0]
    queue = Admission(AdmissionLimits(slots=1, queue=1, attempts_per_hour=3), clock=lambda: now[0])
    assert queue.take("alice") is None
    busy = queue.take("alice")
    assert busy is not None and busy.status == 429 and "one at a time" in busy.error
    assert queue.take("bob") is None
    full = queue.take("carol")
    assert full is not None and full.status == 503 and full.retry_after > 0
    queue.release("alice")
    queue.release("bob")
    for _ in range(2):
        assert queue.take("alice") is None
        queue.release("alice")
    limited = queue.take("alice")  # her fourth attempt within the hour, refused ones counted
    assert limited is not None and limited.status == 429 and "refused ones included" in limited.error
    assert limited.retry_after == 3600
    now[0] = 3600.5
    assert queue.take("alice") is None


def test_one_authors_logins_end_only_their_own_oldest_sessions() -> None:
    sessions = Sessions()
    alice = sessions.start(1)
    mallory = [sessions.start(2) for _ in range(10_000)]  # the review's flood, past the global cap
    assert sessions.author_id(alice) == 1
    assert sessions.count(2) == MAX_PER_AUTHOR and sessions.count() == MAX_PER_AUTHOR + 1
    assert sessions.author_id(mallory[0]) is None and sessions.author_id(mallory[-1]) == 2
    sessions.end(mallory[-1])
    assert sessions.count(2) == MAX_PER_AUTHOR - 1


def test_logins_are_rate_limited_per_address_and_per_author() -> None:
    now = [0.0]
    gate = LoginGate(LoginLimits(per_author=2, per_address=3), clock=lambda: now[0])
    assert [gate.attempt("10.0.0.1") for _ in range(4)] == [None, None, None, 3600]
    assert gate.attempt("10.0.0.2") is None  # another address has its own count
    assert [gate.login(7) for _ in range(3)] == [None, None, 3600]
    assert gate.login(8) is None
    now[0] = 1800.0
    assert gate.attempt("10.0.0.1") == 1800 and gate.login(7) == 1800
    now[0] = 3600.5
    assert gate.attempt("10.0.0.1") is None and gate.login(7) is None


def test_log_lines_are_rate_limited_per_message() -> None:
    now = [0.0]
    limiter = RateLimitedLog(per_minute=3, clock=lambda: now[0])

    def record(message: str) -> logging.LogRecord:
        return logging.LogRecord("asyncio", logging.ERROR, __file__, 1, message, None, None)

    passed = [limiter.filter(record("socket.accept() out of system resource")) for _ in range(1000)]
    assert passed.count(True) == 3
    assert limiter.filter(record("another message"))
    now[0] = 61
    later = record("socket.accept() out of system resource")
    assert limiter.filter(later) and "[997 more like the next line dropped" in later.msg


def test_the_guard_fits_the_installed_uvicorn_and_its_self_test_says_when_it_does_not() -> None:
    self_test(guarded_protocol(ConnectionLimits()))  # arena serve runs this before it binds its port
    guarded: Any = guarded_protocol(ConnectionLimits())

    class Renamed(guarded):  # type: ignore[misc, valid-type]
        """As a uvicorn whose flow control has another name: every request fails inside the protocol."""

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            del self.flow

    logging.getLogger("asyncio").disabled = True  # the loop's own report of the failed callback
    try:
        with pytest.raises(GuardMismatch, match=r"uvicorn \S+: arena's connection guard .* does not fit"):
            self_test(Renamed)
    finally:
        logging.getLogger("asyncio").disabled = False


@pytest.mark.parametrize("a, b, alike", [
    ("alice-greedy", "a1ice-greedy", True), ("alice-greedy", "alice_greedy", True), ("greedy", "gr33dy", True),
    ("modern", "modem", True), ("alice-greedy", "alice-greedy-v2", False), ("random", "randy", False),
])
def test_look_alike_names_share_a_skeleton(a: str, b: str, alike: bool) -> None:
    assert (skeleton(a) == skeleton(b)) is alike


@pytest.mark.parametrize("name, other, alike", [
    ("alice-greedy-v2", "alice-greedy", True), ("alicegreedy2", "alice-greedy", True),
    ("a1ice_greedy-pro", "alice-greedy", True), ("new-alice-greedy", "alice-greedy", True),
    ("greedy-3", "greedy", True), ("greedy-plus", "greedy", False), ("alice-random", "alice-greedy", False),
    ("bob-greedy", "alice-greedy", False),
])
def test_look_alikes_are_compared_by_parts_and_versions(name: str, other: str, alike: bool) -> None:
    # L3 of the 2026-12-04 retest: alice-greedy-v2 and alicegreedy2 were stored for another author.
    assert looks_alike(name, other) is alike


def deep_tree(root: Path, depth: int) -> Path:
    """``depth`` nested directories under ``root``, a read-only file in the deepest, made with descriptors."""
    root.mkdir(parents=True)
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.close(os.open("f", os.O_WRONLY | os.O_CREAT, 0o444, dir_fd=fd))
    finally:
        os.close(fd)
    return root


def test_a_tree_deeper_than_the_recursion_limit_is_walked_refused_and_removed(tmp_path: Path) -> None:
    tree = deep_tree(tmp_path / "deep", 1100)  # past sys.getrecursionlimit(): os.walk and shutil.rmtree fail
    os.chmod(tmp_path / "deep" / "d", 0o555)
    walked = sum(1 for _ in itertools.islice(walk(tree), 100))
    assert walked == 100
    with pytest.raises(SubmissionRejected, match="nested too deeply"):
        scan(tree)
    remove_tree(tree)
    assert not tree.exists()


def test_an_archive_of_many_empty_directories_is_refused_at_the_cap(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for index in range(5000):
            info = tarfile.TarInfo(f"d{index}")
            info.type = tarfile.DIRTYPE
            tar.addfile(info)
    (tmp_path / "a.tar.gz").write_bytes(buffer.getvalue())
    (tmp_path / "out").mkdir()
    with pytest.raises(ArchiveRejected, match="too many directories: more than 500"):
        unpack(tmp_path / "a.tar.gz", tmp_path / "out")
    assert len(os.listdir(tmp_path / "out")) <= 502  # refused at the first past the cap


def test_a_start_sweeps_the_scratch_of_submits_that_are_gone(tmp_path: Path) -> None:
    incoming = tmp_path / ".incoming"
    gone = deep_tree(incoming / f"bot-{2 ** 22 + 7}-abcdefgh", 50)  # no such pid (above pid_max's default)
    alive = (incoming / f"bot-{os.getppid()}-abcdefgh")
    alive.mkdir()
    (incoming / "uploads" / "alice-x").mkdir(parents=True)
    removed = sweep_incoming(tmp_path)
    assert sorted(path.name for path in removed) == sorted([gone.name, "uploads"])
    assert [entry.name for entry in incoming.iterdir()] == [alive.name]


def test_a_changed_standings_is_made_once_while_the_others_get_the_previous_answer(tmp_path: Path) -> None:
    Store(tmp_path / "arena.db").close()
    views = Views(tmp_path / "arena.db", Registry(tmp_path / "bots"))
    try:
        assert views.cached("standings", 1, lambda: "old") == "old"
        making, release = threading.Event(), threading.Event()
        calls: list[int] = []
        made: list[str] = []

        def slow() -> str:
            calls.append(1)
            making.set()
            release.wait(30)
            return "new"

        maker = threading.Thread(target=lambda: made.append(views.cached("standings", 2, slow)))
        maker.start()
        assert making.wait(30)
        # 50 requests while the store changed and the first is making the new answer: none makes it again.
        assert [views.cached("standings", 2, slow) for _ in range(50)] == ["old"] * 50
        release.set()
        maker.join()
        assert made == ["new"] and views.cached("standings", 2, slow) == "new" and len(calls) == 1
    finally:
        views.close()
