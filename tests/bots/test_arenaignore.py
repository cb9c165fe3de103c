"""``.arenaignore`` (issue 40, the newcomer's finding 5): what a bot directory's ignore rules leave out is no part of
the bot for ``arena check``, ``arena submit`` (the registry's copy and the uploaded archive), its hash, and the
sandbox's view when it plays from its directory."""

from __future__ import annotations

import io
import os
import shutil
import tarfile
from pathlib import Path

import pytest

from arena.bots.files import Ignore, has_ignored, scan
from arena.bots.manifest import load_bot
from arena.registry.build import playable
from arena.registry.check import check_bot
from arena.registry.client import pack
from arena.registry.versions import Registry
from arena.resources import data_dir

PROBE = """import os, runpy, sys
left = [p for p in ("target", ".git", "notes/draft.txt", "data/big.bin") if os.path.exists(p)]
if left:
    sys.exit(f"the sandbox shows what .arenaignore leaves out: {left}")
assert os.path.exists("node_modules/kept.js") and os.path.exists("data/keep.bin")
runpy.run_path("bot.py", run_name="__main__")
"""


@pytest.fixture
def cargo_like(tmp_path: Path) -> Path:
    """greedy, run through a probe that fails if it can see an ignored path, in a directory that holds what a
    cargo project and an editor leave: target/ with hard links, .git/, and files its .arenaignore names."""
    bot = tmp_path / "bot"
    shutil.copytree(data_dir("sample_bots") / "greedy", bot, ignore=shutil.ignore_patterns("__pycache__"))
    (bot / "bot.yaml").write_text("name: probed\ncommand: python3 probe.py\n")
    (bot / "probe.py").write_text(PROBE)
    release = bot / "target" / "release"
    release.mkdir(parents=True)
    (release / "rusty").write_bytes(b"\x7fELF")
    os.link(release / "rusty", release / "rusty-hardlink")  # what cargo leaves: refused if it were scanned
    for n in range(600):  # more files than a bot may hold
        (release / f"dep-{n}.d").write_text("x")
    (bot / ".git").mkdir()
    (bot / ".git" / "config").write_text("[credential]\n")
    (bot / "node_modules").mkdir()
    (bot / "node_modules" / "kept.js").write_text("// a Node bot's package: kept by default\n")
    (bot / "notes").mkdir()
    (bot / "notes" / "draft.txt").write_text("not for the server")
    (bot / "data").mkdir()
    (bot / "data" / "big.bin").write_bytes(b"0" * 100)
    (bot / "data" / "keep.bin").write_bytes(b"1")
    (bot / ".arenaignore").write_text("# mine\nnotes/\n/data/*.bin\n!data/keep.bin\n")
    return bot


def test_the_rules_read_like_gitignore() -> None:
    rules = Ignore.of(Path("/nonexistent"))  # the defaults alone
    assert rules.ignored("target", True) and rules.ignored("sub/target", True) and not rules.ignored("target", False)
    assert rules.ignored(".git", True) and rules.ignored(".github", True) and rules.ignored("a/b.pyc", False)
    assert not rules.ignored("node_modules", True) and not rules.ignored("bot.yaml", False)
    own = Ignore((
        ("logs/**/*.txt", False, False), ("**/secret", False, False), ("*.log", False, False),
        ("keep.log", True, False), ("bot.yaml", False, False)))
    assert own.ignored("logs/a/b/c.txt", False) and own.ignored("logs/c.txt", False)
    assert not own.ignored("other/logs/c.txt", False)
    assert own.ignored("deep/er/secret", False) and own.ignored("x.log", False) and not own.ignored("keep.log", False)
    assert not own.ignored("bot.yaml", False)  # never: the bot would have no manifest


def test_check_submit_archive_and_hash_leave_the_ignored_files_out(cargo_like: Path, tmp_path: Path) -> None:
    listed = {entry.relative for entry in scan(cargo_like)}
    assert listed == {"bot.yaml", "bot.py", "probe.py", ".arenaignore", "node_modules/kept.js", "data/keep.bin"}
    assert has_ignored(cargo_like) is not None
    with tarfile.open(fileobj=io.BytesIO(pack(cargo_like))) as archive:
        assert set(archive.getnames()) == listed
    stored = Registry(tmp_path / "registry").submit(cargo_like, lambda copy, built: check_bot(copy, built=built))
    assert stored.status == "stored", stored.to_dict()
    assert {p.relative_to(stored.directory).as_posix() for p in stored.directory.rglob("*") if p.is_file()} == listed
    assert stored.files_hash == load_bot(cargo_like).files_hash  # the directory's hash is its stored copy's


def test_a_directory_plays_without_what_it_ignores(cargo_like: Path, tmp_path: Path) -> None:
    """arena check and arena match see the bot as it would be stored: the probe fails the check otherwise."""
    report = check_bot(cargo_like)
    assert report.fit, [step.to_dict() for step in report.steps]
    files = next(step for step in report.steps if step.name == "files")
    assert ".arenaignore and its defaults leave out" in files.got
    spec = playable(load_bot(cargo_like), tmp_path / "cache")
    assert spec.directory.parent == (tmp_path / "cache").resolve() and not (spec.directory / "target").exists()
    plain = tmp_path / "plain"
    shutil.copytree(data_dir("sample_bots") / "random", plain)
    (plain / "__pycache__").mkdir(exist_ok=True)
    (plain / "__pycache__" / "x.pyc").write_bytes(b"")
    assert playable(load_bot(plain), tmp_path / "cache") == load_bot(plain)  # Python's caches alone: no copy
