"""The newcomer's author messages (issue 40, findings 6-8 and 12-14): each mistake gets a message that names its real
cause. Real bots in the real sandbox where the cause lives there; the ``--server`` errors against a real plain-HTTP
server on loopback."""

from __future__ import annotations

import dataclasses
import http.server
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from arena.bots.manifest import ManifestError, load_bot
from arena.cli.main import main
from arena.game.results import Fault, Reason
from arena.match.protocol import Limits
from arena.registry.check import READ_ALL, check_bot, explain
from arena.registry.client import ServerURLError, pack, upload
from arena.resources import data_dir
from arena.sandbox import SandboxLimits, cgroups
from arena.sandbox.process import ProcessSandbox

QUICK_HELLO = Limits(hello_ms=500)
"""For a bot that never answers: it times out whatever the deadline, so a short one races nothing. A bot that
exits is checked with the default deadline, which its exit ends at once."""
GREEDY = data_dir("sample_bots") / "greedy"


def failed(directory: Path, limits: Limits = Limits()) -> tuple[str, list[str]]:
    report = check_bot(directory, limits=limits)
    step = next(step for step in report.steps if step.ok is False)
    return step.got, step.advice


def test_a_binary_only_its_owner_may_run_is_named_with_the_sandboxs_user(tmp_path: Path) -> None:
    box = ProcessSandbox()
    try:
        per_bot_uid, why = box.guarantees()["per_bot_uid"]
    finally:
        box.close()
    if not per_bot_uid:
        pytest.skip(f"the bot runs as this user here: {why}")
    bot = tmp_path / "private"
    bot.mkdir()
    (bot / "bot").write_text("#!/usr/bin/env python3\n" + (GREEDY / "bot.py").read_text())
    (bot / "bot").chmod(0o700)  # its owner may run it; the bot's own uid may not
    (bot / "bot.yaml").write_text("name: private\ncommand: ./bot\n")
    _, advice = failed(bot)
    assert any("bot: not readable (or not runnable) by the sandbox's user" in line and "chmod a+rX bot" in line
               for line in advice), advice
    assert not any("chmod +x" in line for line in advice), advice


def test_exit_101_is_named_a_rust_panic(tmp_path: Path) -> None:
    bot = tmp_path / "panics"
    bot.mkdir()
    (bot / "bot.yaml").write_text("name: panics\ncommand: [sh, -c, \"read line; echo \\\"thread 'main' panicked at "
                                  "src/main.rs:5:9\\\" >&2; exit 101\"]\n")
    got, advice = failed(bot)
    assert "exited with status 101" in got
    assert advice and "Rust panic" in advice[0] and not any("keep reading stdin" in line for line in advice), advice


def test_reading_all_of_stdin_is_told_to_answer_each_line_not_to_flush(tmp_path: Path) -> None:
    bot = tmp_path / "slurp"
    bot.mkdir()
    (bot / "bot.py").write_text("import sys\nmessages = sys.stdin.read()\n")
    (bot / "bot.yaml").write_text("name: slurp\ncommand: python3 bot.py\n")
    _, advice = failed(bot, QUICK_HELLO)
    assert advice == [READ_ALL] and "answer each line as it comes" in READ_ALL and "flush" not in READ_ALL
    # a binary gives no source to read: then both causes, reading all first
    both = explain(Fault(Reason.TIMEOUT_HELLO, "nothing", 0), language="rust")
    assert "answer each line as it comes" in both[0] and "io::stdout().flush()" in both[0]


def test_bot_yml_is_named_as_the_wrong_file_name(tmp_path: Path) -> None:
    (tmp_path / "bot.yml").write_text("name: x\ncommand: ./x\n")
    with pytest.raises(ManifestError, match=r"bot.yaml: missing, but bot.yml is there: rename it to bot.yaml"):
        load_bot(tmp_path)
    result = CliRunner().invoke(main, ["check", str(tmp_path), "--json"])
    assert result.exit_code == 2 and "rename it to bot.yaml" in result.stdout


def test_the_memory_limit_fault_states_the_limit() -> None:
    if cgroups.detect()[0] is None:
        pytest.skip(f"no memory cgroup here: {cgroups.detect()[1]}")
    bot = load_bot(GREEDY)
    box = ProcessSandbox()
    try:
        balloon = dataclasses.replace(bot, command=("python3", "-c", "x = bytearray(200 << 20)"))
        process = box.launch(balloon, SandboxLimits(memory_mb=64))
        deadline = time.monotonic() + 120  # a generous bound, not a race: the kill comes at the first 64 MiB
        while (ended := process.poll()) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        process.kill()
    finally:
        box.close()
    assert ended is not None and ended.limit == "memory", ended
    assert ended.describe().startswith("killed by the memory limit (64 MiB"), ended.describe()


@pytest.fixture
def plain_server() -> Iterator[str]:
    """A plain-HTTP server on loopback that answers 404 to everything, as any web server does to a wrong path."""
    class NotFound(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.send_error(404)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_submit_to_a_plain_server_over_https_and_with_a_path_say_so(plain_server: str) -> None:
    body = pack(GREEDY)
    with pytest.raises(ServerURLError, match=f"answered in plain HTTP, not HTTPS: use http://{plain_server}"):
        upload(f"https://{plain_server}", "token", body)
    with pytest.raises(ServerURLError, match=f"--server is the server's root URL, without a path, such as "
                                             f"http://{plain_server}"):
        upload(f"http://{plain_server}/api/bots", "token", body)
    result = CliRunner().invoke(main, ["submit", str(GREEDY), "--server", f"https://{plain_server}", "--token", "t",
                                       "--json"], env={"HOME": os.environ.get("HOME", "/")})
    assert result.exit_code == 2 and "use http://" in json.loads(result.stdout)["error"], result.output
