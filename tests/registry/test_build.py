"""Compiled bots: a ``build:`` in bot.yaml, run in the real sandbox by ``arena check`` and ``arena submit``; the
c and cpp templates built and checked as they are; and every way a build can fail storing nothing."""

from __future__ import annotations

import json
import os
import socket
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from arena.bots.manifest import load_bot
from arena.bots.scaffold import scaffold
from arena.cli.main import main
from arena.registry.build import BuildLimits, run_build
from arena.registry.check import check_bot
from arena.registry.versions import Registry
from arena.sandbox.process import ProcessSandbox

BROKEN_C = "int main(void) { return undeclared_thing; }\n"


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def bot_with_build(root: Path, name: str, build: str, source: str = BROKEN_C) -> Path:
    """A C bot whose build: is ``build`` (its sources are the c template's unless ``source`` says otherwise)."""
    directory = scaffold(name, "c", root / name)
    (directory / "bot.c").write_text(source)
    manifest = (directory / "bot.yaml").read_text().splitlines()
    (directory / "bot.yaml").write_text("\n".join(f"build: {build}" if line.startswith("build:") else line
                                                  for line in manifest) + "\n")
    return directory


def stored_nothing(registry: Path) -> bool:
    incoming = registry / ".incoming"
    return Registry(registry).names() == [] and (not incoming.exists() or not any(incoming.iterdir()))


def source_files(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in directory.iterdir()}


@pytest.mark.parametrize("language, source, output, magic", [
    # C is the fast profile's compiled bot: the C++ and Java toolchains take the same path at 3-7 times the cost.
    ("c", "bot.c", "bot", b"\x7fELF"),
    pytest.param("cpp", "bot.cpp", "bot", b"\x7fELF", marks=pytest.mark.slow),
    pytest.param("java", "Bot.java", "Bot.class", b"\xca\xfe\xba\xbe", marks=pytest.mark.slow)])
def test_scaffold_build_check_submit_a_compiled_bot(tmp_path: Path, language: str, source: str, output: str,
                                                    magic: bytes) -> None:
    bot = scaffold("compiled", language, tmp_path / "compiled")
    before = source_files(bot)
    assert set(before) == {"bot.yaml", "README.md", source}
    code, out, _ = cli("check", str(bot))
    assert code == 0, out
    assert "✓ build: built in" in out and "fit to enter a tournament" in out
    assert source_files(bot) == before  # built in a scratch copy: the author's directory is untouched

    registry = tmp_path / "bots"
    code, out, _ = cli("submit", str(bot), "--registry", str(registry), "--json")
    assert code == 0, out
    result = json.loads(out)
    assert result["status"] == "stored" and result["version"] == 1
    assert [s["step"] for s in result["check"]["steps"]] == ["manifest", "files", "build", "hello", "self-play",
                                                             "vs greedy"]
    [version] = Registry(registry).versions("compiled")
    binary = version.directory / output
    assert binary.is_file() and binary.read_bytes()[:4] == magic
    assert os.access(binary, os.X_OK) or language == "java"
    assert not stat.S_IMODE(binary.stat().st_mode) & 0o222 and not version.directory.stat().st_mode & 0o222
    # files_hash is the built tree (what load_bot sees and tournaments record); source_hash what was submitted.
    assert version.files_hash == load_bot(version.directory).files_hash == result["files_hash"]
    assert version.source_hash == load_bot(bot).files_hash != version.files_hash
    assert source_files(bot) == before

    code, out, _ = cli("submit", str(bot), "--registry", str(registry), "--json")
    assert code == 0 and json.loads(out)["status"] == "unchanged"  # identical sources: not a new version
    assert len(Registry(registry).versions("compiled")) == 1


def test_a_compile_error_shows_the_log_and_stores_nothing(tmp_path: Path) -> None:
    bot = bot_with_build(tmp_path, "broken", "gcc -O2 -o bot bot.c")
    code, out, _ = cli("check", str(bot))
    assert code == 1
    assert "✗ build" in out and "build log (last lines):" in out
    assert "undeclared_thing" in out and "error" in out  # the compiler's own words
    assert "- hello" in out  # skipped, not failed

    registry = tmp_path / "bots"
    code, out, _ = cli("submit", str(bot), "--registry", str(registry))
    assert code == 1
    assert "rejected, nothing stored: the build failed: `gcc -O2 -o bot bot.c` exited with status 1" in out
    assert "undeclared_thing" in out
    assert stored_nothing(registry)


def test_a_missing_compiler_is_named(tmp_path: Path) -> None:
    report = check_bot(bot_with_build(tmp_path, "exotic", "no-such-compiler bot.c"))
    assert report.steps[2].got == ("`no-such-compiler bot.c` exited with status 127 (is 'no-such-compiler' installed "
                                   "on the host? the build sees the host's /usr, /bin and /lib only)")
    assert "no-such-compiler" in report.steps[2].stderr_tail


@pytest.mark.slow  # waits out a build clock far above a loaded machine's compile
def test_a_build_over_its_time_limit_is_killed(tmp_path: Path) -> None:
    bot = bot_with_build(tmp_path, "slow", "sh -c 'echo compiling; sleep 60'")
    report = check_bot(bot, build_limits=BuildLimits(seconds=1.5))
    build = report.steps[2]
    assert (build.name, build.ok) == ("build", False)
    assert build.got == "the build did not finish within 1.5 s (its time limit)"
    assert "compiling" in build.stderr_tail and report.seconds < 10
    code, out, _ = cli("submit", str(bot), "--registry", str(tmp_path / "bots"), "--build-seconds", "1.5")
    assert code == 1 and "did not finish within 1.5 s" in out and stored_nothing(tmp_path / "bots")


def test_a_build_has_no_network(tmp_path: Path) -> None:
    # A real listener on loopback, reachable from here: the build, in its own network namespace, cannot reach it.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        bot = bot_with_build(tmp_path, "online", f"python3 -c \"import socket; socket.create_connection("
                                                 f"('127.0.0.1', {port}), timeout=2); print('reached it')\"")
        report = check_bot(bot)
    build = report.steps[2]
    assert build.ok is False and "exited with status 1" in build.got
    assert "ConnectionRefusedError" in build.stderr_tail or "unreachable" in build.stderr_tail
    assert "reached it" not in build.stderr_tail


def test_a_build_over_its_memory_or_output_limit_fails(tmp_path: Path) -> None:
    greedy = bot_with_build(tmp_path, "greedy-build", "python3 -c \"x = [b'x' * (32 << 20) for _ in range(40)]\"")
    report = check_bot(greedy, build_limits=BuildLimits(memory_mb=256))
    assert report.steps[2].ok is False
    assert report.steps[2].got == "the build used more than 256 MiB of memory (its limit)"
    chatty = bot_with_build(tmp_path, "chatty-build", "python3 -c \"print('x' * 3000000)\"")
    report = check_bot(chatty, build_limits=BuildLimits(output_kb=64))
    assert report.steps[2].got == "the build wrote more than 64 KiB of output (its limit)"


def test_what_a_build_leaves_goes_through_the_submission_guards(tmp_path: Path) -> None:
    bot = bot_with_build(tmp_path, "sly", "ln -s /etc/passwd leak")
    sandbox = ProcessSandbox()
    try:
        result = run_build(load_bot(bot), tmp_path / "built", sandbox=sandbox)
    finally:
        sandbox.close()
    assert not result.ok and "the build left something a bot may not hold: leak: a symlink" in result.reason
    assert not (tmp_path / "built").exists()
    code, out, _ = cli("submit", str(bot), "--registry", str(tmp_path / "bots"))
    assert code == 1 and "a symlink" in out and stored_nothing(tmp_path / "bots")


def test_a_build_may_not_rewrite_the_manifest(tmp_path: Path) -> None:
    bot = bot_with_build(tmp_path, "shifty", "sh rename.sh")
    (bot / "rename.sh").write_text("printf 'name: someone-else\\ncommand: ./bot\\n' > bot.yaml\n")
    report = check_bot(bot)
    assert report.steps[2].got == "the build changed bot.yaml; a build may write any file but that one"
    code, out, _ = cli("submit", str(bot), "--registry", str(tmp_path / "bots"))
    assert code == 1 and "changed bot.yaml" in out and stored_nothing(tmp_path / "bots")


@pytest.mark.parametrize("build, words", [
    ("7", "field build: expected a string such as 'gcc -O2 -o bot bot.c' or a list of strings, got 7"),
    ("''", "field build: expected a program to run, got an empty build"),
])
def test_a_bad_build_field_is_a_manifest_error(tmp_path: Path, build: str, words: str) -> None:
    bot = bot_with_build(tmp_path, "bad", build)
    code, _, err = cli("submit", str(bot), "--registry", str(tmp_path / "bots"))
    assert code == 2 and words in err


SAMPLES = Path(__file__).resolve().parents[2] / "sample_bots"


def test_arena_match_builds_a_bot_directory_once_and_plays_it_built(tmp_path: Path, monkeypatch) -> None:
    """A C bot straight from its sources plays `arena match`: built in the sandbox into results/builds under the
    hash of its sources, reused by the next match, and its own directory never written."""
    bot = scaffold("cbot", "c", tmp_path / "cbot")
    before = source_files(bot)
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("match", str(bot), str(SAMPLES / "greedy"), "--threshold", "30", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert {player["name"] for player in result["players"]} == {"cbot", "greedy"}
    assert all(player["fault"] is None for player in result["players"]), result
    builds = [path for path in (tmp_path / "results" / "builds").iterdir()]
    assert [path.name for path in builds] == [load_bot(bot).files_hash]
    assert (builds[0] / "bot").read_bytes()[:4] == b"\x7fELF"
    assert source_files(bot) == before, "the author's directory was written"
    built_at = (builds[0] / "bot").stat().st_mtime_ns
    code, _, err = cli("match", str(bot), str(SAMPLES / "greedy"), "--threshold", "30", "--seed", "2")
    assert code == 0, err
    assert (builds[0] / "bot").stat().st_mtime_ns == built_at, "built again for an unchanged bot"
    (bot / "bot.c").write_text((bot / "bot.c").read_text() + "\n/* edited */\n")
    code, _, err = cli("match", str(bot), str(SAMPLES / "greedy"), "--threshold", "30")
    assert code == 0, err
    assert len(list((tmp_path / "results" / "builds").iterdir())) == 2, "an edited bot was not built anew"


def test_a_tournament_with_a_bot_that_does_not_build_stops_before_it_plays(tmp_path: Path) -> None:
    broken = bot_with_build(tmp_path, "broken", "gcc -o bot bot.c")
    config = tmp_path / "t.yaml"
    config.write_text(f"name: t\nbots: [{broken}, {SAMPLES / 'greedy'}]\nplayers: 2\nseed: 1\nrepeats: 1\n")
    code, out, err = cli("run", str(config), "--db", str(tmp_path / "r" / "arena.db"), "--no-site")
    assert code == 1, (out, err)
    assert f"{broken}: the build of bot 'broken' failed" in err and "undeclared_thing" in err, err
    assert not (tmp_path / "r" / "builds").exists() or not any((tmp_path / "r" / "builds").iterdir())


def test_a_tournament_builds_its_bot_directories_beside_the_store_and_resumes_on_the_same_build(
        tmp_path: Path) -> None:
    bot = scaffold("cbot", "c", tmp_path / "cbot")
    config = tmp_path / "t.yaml"
    config.write_text(f"name: t\nbots: [{bot}, {SAMPLES / 'greedy'}]\nplayers: 2\nseed: 1\nrepeats: 1\n"
                      "rules: {threshold: 25}\n")
    db = tmp_path / "r" / "arena.db"
    code, out, err = cli("run", str(config), "--db", str(db), "--no-site", "--json", "--workers", "1")
    assert code == 0, err
    standings = {line["bot"]: line for line in json.loads(out)["standings"]}
    assert standings["cbot"]["faults"] == {}, standings
    builds = list((db.parent / "builds").iterdir())
    assert len(builds) == 1 and (builds[0] / "bot").is_file()
    code, _, err = cli("run", str(config), "--db", str(db), "--no-site")  # nothing left: same bot, same build
    assert code == 0, err
    assert "changed" not in err
