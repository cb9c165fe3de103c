"""The bot registry end to end: scaffold, check, submit, tournaments naming registry bots, and every rejection."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from arena.bots.files import MAX_FILES, SubmissionRejected, scan
from arena.bots.scaffold import scaffold
from arena.cli.main import main
from arena.registry.versions import Registry
from arena.run.config import ConfigError, load_config
from arena.run.plan import load_bots
from arena.run.tournament import run_tournament
from arena.store import Store
from tests.hostile import make_bot

ROOT = Path(__file__).resolve().parents[2]
GREEDY = ROOT / "sample_bots" / "greedy"


def submit(bot: Path, registry: Path, *extra: str) -> tuple[int, dict]:
    result = CliRunner().invoke(main, ["submit", str(bot), "--registry", str(registry), "--json", *extra])
    return result.exit_code, json.loads(result.stdout)


def stored_nothing(registry: Path) -> bool:
    incoming = registry / ".incoming"
    return Registry(registry).names() == [] and (not incoming.exists() or not any(incoming.iterdir()))


def write_config(directory: Path, bots: list[str], **extra) -> Path:
    config = {"name": "league", "bots": bots, "players": 2, "seed": 5, "rules": {"threshold": 25},
              "workers": 2} | extra
    path = directory / "league.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.parametrize("language", ["python", pytest.param("javascript", marks=pytest.mark.slow)])
def test_scaffold_check_submit_and_play_a_tournament(tmp_path, language):
    bot = scaffold("newcomer", language, tmp_path / "newcomer")
    assert {p.name for p in bot.iterdir()} == {"bot.yaml", "README.md", "bot.py" if language == "python" else "bot.js"}
    assert CliRunner().invoke(main, ["check", str(bot)]).exit_code == 0

    db = tmp_path / "results" / "arena.db"
    result = CliRunner().invoke(main, ["submit", str(bot), "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert "stored newcomer version 1" in result.output
    registry = tmp_path / "results" / "bots"  # the default: bots/ beside the store
    [version] = Registry(registry).versions("newcomer")
    assert version.fit and version.directory == registry / "newcomer" / "1"

    listing = CliRunner().invoke(main, ["bots", "--db", str(db), "--json"])
    assert listing.exit_code == 0
    assert json.loads(listing.stdout)["bots"][0]["name"] == "newcomer"

    # The config names no registry: `arena run --db` finds the one beside the store.
    config = write_config(tmp_path, ["registry:*", str(GREEDY)])
    ran = CliRunner().invoke(main, ["run", str(config), "--db", str(db), "--json"])
    assert ran.exit_code == 0, ran.output
    store = Store(db)
    try:
        rows = {row["name"]: row for row in store.bots(store.tournament("league")["id"])}
    finally:
        store.close()
    assert rows["newcomer"]["directory"] == str(registry / "newcomer" / "1")
    assert rows["newcomer"]["files_hash"] == version.files_hash
    faults = [s for s in json.loads(ran.stdout)["standings"] if s["faults"]]
    assert faults == []


def test_the_stored_copy_is_read_only_world_readable_and_identical(tmp_path):
    bot = scaffold("keeper", "python", tmp_path / "keeper")
    (bot / "lib").mkdir()
    (bot / "lib" / "helper.py").write_text("X = 1\n")
    (bot / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(bot / "run.sh", 0o700)
    (bot / "__pycache__").mkdir()
    (bot / "__pycache__" / "junk.pyc").write_bytes(b"\0")
    code, result = submit(bot, tmp_path / "reg")
    assert code == 0 and result["status"] == "stored"
    stored = Path(result["directory"])
    assert sorted(p.relative_to(stored).as_posix() for p in stored.rglob("*")) == [
        "README.md", "bot.py", "bot.yaml", "lib", "lib/helper.py", "run.sh"]
    assert stat.S_IMODE(stored.stat().st_mode) == 0o555
    assert stat.S_IMODE((stored / "lib").stat().st_mode) == 0o555
    assert stat.S_IMODE((stored / "bot.py").stat().st_mode) == 0o444
    assert stat.S_IMODE((stored / "run.sh").stat().st_mode) == 0o555
    assert (stored / "lib" / "helper.py").read_text() == "X = 1\n"
    from arena.bots.manifest import hash_files
    assert hash_files(stored) == hash_files(bot) == result["files_hash"]


def test_identical_resubmission_is_not_a_new_version(tmp_path):
    bot = scaffold("same", "python", tmp_path / "same")
    registry = tmp_path / "reg"
    assert submit(bot, registry)[1]["version"] == 1
    code, again = submit(bot, registry)
    assert code == 0 and again["status"] == "unchanged" and again["version"] == 1
    assert "identical to the latest version" in again["reason"]
    assert [v.version for v in Registry(registry).versions("same")] == [1]
    result = CliRunner().invoke(main, ["submit", str(bot), "--registry", str(registry)])
    assert result.exit_code == 0 and "nothing new to store" in result.output


@pytest.mark.slow
def test_versions_pinning_and_names_in_a_tournament(tmp_path):
    bot = scaffold("pinned", "python", tmp_path / "pinned")
    registry = tmp_path / "reg"
    assert submit(bot, registry)[1]["version"] == 1
    (bot / "bot.py").write_text((bot / "bot.py").read_text().replace("<= 4", "<= 3"))
    assert submit(bot, registry)[1]["version"] == 2
    reg = Registry(registry)
    assert [v.version for v in reg.resolve("pinned")] == [2]
    assert [v.version for v in reg.resolve("pinned@1")] == [1]
    assert [v.version for v in reg.resolve("pinned", "all")] == [1, 2]

    latest = load_config(write_config(tmp_path, ["registry:pinned", str(GREEDY)], registry=str(registry)))
    assert latest.bots[0] == registry.resolve() / "pinned" / "2"
    assert [b.name for b in load_bots(latest)] == ["pinned", "greedy"]  # one version plays: its plain name

    both = load_config(write_config(tmp_path, ["registry:pinned@1", "registry:*"],
                                    registry={"dir": str(registry)}))
    assert [b.name for b in load_bots(both)] == ["pinned@1", "pinned@2"]
    every = load_config(write_config(tmp_path, ["registry:*", str(GREEDY)],
                                     registry={"dir": str(registry), "versions": "all"}))
    assert [b.name for b in load_bots(every)] == ["pinned@1", "pinned@2", "greedy"]

    store = Store(tmp_path / "arena.db")
    try:
        report = run_tournament(both, store, workers=2)
        assert report.failed == 0 and report.played == report.total > 0
        rows = store.bots(report.tid)
    finally:
        store.close()
    assert [(r["name"], Path(r["directory"]).name) for r in rows] == [("pinned@1", "1"), ("pinned@2", "2")]


@pytest.fixture(scope="module")
def pinned_registry(tmp_path_factory):
    """A registry holding version 1 of a bot named pinned; the tests that use it only read it (a submit checks the
    bot in a real sandbox: once is enough)."""
    scratch = tmp_path_factory.mktemp("pinned")
    code, _ = submit(scaffold("pinned", "python", scratch / "pinned"), scratch / "reg")
    assert code == 0
    return scratch / "reg"


@pytest.mark.parametrize("entry, words", [
    ("registry:ghost", "no bot 'ghost'"),
    ("registry:pinned@7", "has versions 1, not 7"),
    ("registry:pinned@x", "expected a version number"),
    ("registry:Bad", "expected registry:*, registry:NAME or registry:NAME@VERSION"),
])
def test_registry_entries_that_name_nothing_are_config_errors(tmp_path, pinned_registry, entry, words):
    registry = pinned_registry
    with pytest.raises(ConfigError, match=r"bots\[0\]: .*" + words.replace("*", r"\*").replace("(", r"\(")):
        load_config(write_config(tmp_path, [entry, str(GREEDY)], registry=str(registry)))


@pytest.mark.parametrize("registry, words", [
    ({"versions": "some"}, "registry.versions: expected one of latest, all"),
    ({"latest": True}, "registry.latest: expected one of dir, versions"),
    (5, "registry: expected a directory"),
])
def test_bad_registry_keys_are_config_errors(tmp_path, registry, words):
    with pytest.raises(ConfigError, match=words):
        load_config(write_config(tmp_path, [str(GREEDY), str(ROOT / "sample_bots" / "random")], registry=registry))


def test_an_empty_registry_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="holds no bots"):
        load_config(write_config(tmp_path, ["registry:*"], registry="empty"))


# -- rejections: each stores nothing ----------------------------------------------------------------------------

def hostile_tree(tmp_path: Path, kind: str) -> Path:
    bot = scaffold("sneaky", "python", tmp_path / "sneaky")
    if kind == "symlink":
        os.symlink("bot.py", bot / "alias.py")
    elif kind == "escape":
        (tmp_path / "secret.txt").write_text("the organiser's password")
        os.symlink("../secret.txt", bot / "data.txt")
    elif kind == "dir_escape":
        (bot / "lib").mkdir()
        os.symlink("/etc", bot / "lib" / "etc")
    elif kind == "fifo":
        os.mkfifo(bot / "pipe")
    elif kind == "socket":
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(bot / "sock"))
        server.close()
    elif kind == "device":
        os.mknod(bot / "null", 0o644 | stat.S_IFCHR, os.makedev(1, 3))
    elif kind == "setuid":
        os.chmod(bot / "bot.py", 0o4755)
    elif kind == "hardlink":
        (tmp_path / "outside.txt").write_text("not the bot's")
        os.link(tmp_path / "outside.txt", bot / "inside.txt")
    elif kind == "too_many":
        (bot / "many").mkdir()
        for index in range(MAX_FILES):
            (bot / "many" / f"{index}.txt").write_text("x")
    elif kind == "too_large":
        with open(bot / "weights.bin", "wb") as handle:
            handle.truncate(21 << 20)  # sparse: a 21 MiB file that costs no disk
    return bot


@pytest.mark.parametrize("kind, words", [
    ("symlink", "alias.py: a symlink to 'bot.py' (pointing inside the bot directory)"),
    ("escape", "data.txt: a symlink to '../secret.txt' (pointing outside the bot directory)"),
    ("dir_escape", "lib/etc: a symlink to '/etc' (pointing outside"),
    ("fifo", "pipe: a FIFO, not a regular file"),
    ("socket", "sock: a socket, not a regular file"),
    ("device", "null: a character device, not a regular file"),
    ("setuid", "bot.py: has the setuid or setgid bit"),
    ("hardlink", "inside.txt: has 2 hard links"),
    ("too_many", f"too many files: more than {MAX_FILES}"),
    ("too_large", "too large: more than 20 MiB"),
])
def test_hostile_trees_are_rejected_and_nothing_is_stored(tmp_path, kind, words):
    if kind == "device" and os.geteuid() != 0:
        pytest.skip("only root can make a device file")
    bot = hostile_tree(tmp_path, kind)
    registry = tmp_path / "reg"
    result = CliRunner().invoke(main, ["submit", str(bot), "--registry", str(registry)])
    assert result.exit_code == 2, result.output
    assert "rejected, nothing stored" in result.stderr and words in result.stderr
    assert stored_nothing(registry)
    check = CliRunner().invoke(main, ["check", str(bot)])  # the check says the same, before any bot runs
    assert check.exit_code == 1 and "✗ files" in check.output and words in check.output


def test_a_tree_cannot_grow_past_the_cap_between_scan_and_copy(tmp_path):
    bot = scaffold("grower", "python", tmp_path / "grower")
    files = scan(bot)
    (bot / "bot.py").write_text("x" * 2048)
    from arena.bots.files import safe_copy
    with pytest.raises(SubmissionRejected, match="too large"):
        safe_copy(bot, tmp_path / "copy", files, max_bytes=1024)


@pytest.mark.parametrize("attack", ["not_json", "crash_traceback"])
def test_a_bot_that_fails_the_check_is_rejected(tmp_path, attack):
    registry = tmp_path / "reg"
    result = CliRunner().invoke(main, ["submit", str(make_bot(tmp_path, attack)), "--registry", str(registry)])
    assert result.exit_code == 1, result.output
    assert "✗ self-play" in result.output
    assert "rejected, nothing stored: the bot failed the check" in result.output
    assert stored_nothing(registry)


def test_a_bad_manifest_is_rejected_with_exit_2(tmp_path):
    bot = tmp_path / "broken"
    bot.mkdir()
    (bot / "bot.yaml").write_text("name: broken\n")
    registry = tmp_path / "reg"
    result = CliRunner().invoke(main, ["submit", str(bot), "--registry", str(registry)])
    assert result.exit_code == 2
    assert "field command" in result.stderr
    assert stored_nothing(registry)


@pytest.mark.slow
def test_concurrent_submits_get_distinct_versions(tmp_path):
    registry = tmp_path / "reg"
    bots = []
    for index in range(3):
        bot = scaffold("racer", "python", tmp_path / f"racer{index}")
        (bot / "bot.py").write_text((bot / "bot.py").read_text() + f"# variant {index}\n")
        bots.append(bot)
    processes = [subprocess.Popen([sys.executable, "-m", "arena", "submit", str(bot), "--registry", str(registry),
                                   "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
                 for bot in bots]
    outputs = [process.communicate(timeout=120) for process in processes]
    assert [process.returncode for process in processes] == [0, 0, 0], outputs
    versions = Registry(registry).versions("racer")
    assert sorted(v.version for v in versions) == [1, 2, 3]
    assert len({v.files_hash for v in versions}) == 3
    assert all(v.directory.is_dir() for v in versions)


def test_bots_lists_an_empty_registry_politely(tmp_path):
    result = CliRunner().invoke(main, ["bots", "--registry", str(tmp_path / "none")])
    assert result.exit_code == 0 and "no bots yet" in result.stderr


@pytest.mark.parametrize("args, words", [
    (["Not A Slug"], "bad bot name"),
    (["ok", "--dir", "{existing}"], "already exists and is not an empty directory"),
])
def test_new_bot_refuses_bad_names_and_used_directories(tmp_path, args, words):
    existing = tmp_path / "existing"
    existing.mkdir()
    (existing / "file").write_text("mine")
    args = [arg.replace("{existing}", str(existing)) for arg in args]
    result = CliRunner().invoke(main, ["new-bot", *args])
    assert result.exit_code == 2
    assert words in result.stderr
    assert (existing / "file").read_text() == "mine" and len(list(existing.iterdir())) == 1


def test_a_registry_inside_the_bot_directory_is_refused(tmp_path):
    # `arena submit .` from inside the bot would put results/bots in the bot, and every version into the next.
    bot = scaffold("nested", "python", tmp_path / "nested")
    result = CliRunner().invoke(main, ["submit", str(bot), "--db", str(bot / "results" / "arena.db")])
    assert result.exit_code == 2
    assert "is inside the bot directory" in result.stderr
    assert not (bot / "results").exists()
