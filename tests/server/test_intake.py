"""The intake's crash safety: a server killed (a real SIGKILL of a real process) between storing a version and
claiming its name, or while checking an upload, leaves after its restart both the version and the claim, or
neither."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from pathlib import Path

from arena.registry.check import check_bot
from arena.registry.client import pack
from arena.registry.versions import Registry
from arena.server.authors import Author, accepted_since, add_author, authenticate, owner_of, submissions_of
from arena.server.intake import Intake, IntakeSettings
from arena.store import Store

ROOT = Path(__file__).resolve().parents[2]
GREEDY = ROOT / "sample_bots" / "greedy"
CRASHING_SERVER = """\
import os, signal, sys
from pathlib import Path
from arena.server.authors import authenticate
from arena.server.intake import Intake, IntakeSettings
from arena.store import Store

db, registry, scratch, archive, token, point = sys.argv[1:]
def fault(at):
    if at == point:
        os.kill(os.getpid(), signal.SIGKILL)
intake = Intake(IntakeSettings(db=Path(db), registry=Path(registry), scratch=Path(scratch)), fault=fault)
store = Store(Path(db))
author = authenticate(store, token)
store.close()
print(intake.submit(author, Path(archive)))
"""


class League:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.db = root / "results" / "arena.db"
        self.registry = root / "results" / "bots"
        self.settings = IntakeSettings(db=self.db, registry=self.registry, scratch=root / "scratch")
        self.db.parent.mkdir(parents=True)
        store = Store(self.db)
        try:
            self.token = add_author(store, "fay")
        finally:
            store.close()

    def archive(self, name: str, edit: str = "") -> Path:
        """An upload of greedy renamed ``name``, with ``edit`` appended to its bot.py (a new version)."""
        directory = self.root / f"src{edit!r}" / name
        shutil.copytree(GREEDY, directory, ignore=shutil.ignore_patterns("__pycache__"))
        (directory / "bot.yaml").write_text((directory / "bot.yaml").read_text().replace("name: greedy",
                                                                                           f"name: {name}"))
        (directory / "bot.py").write_text((directory / "bot.py").read_text() + edit)
        path = self.root / f"{name}{len(edit)}.tar.gz"
        path.write_bytes(pack(directory))
        return path

    def crash_while_submitting(self, archive: Path, point: str) -> None:
        done = subprocess.run([sys.executable, "-c", CRASHING_SERVER, str(self.db), str(self.registry),
                               str(self.settings.scratch), str(archive), self.token, point],
                              capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
        assert done.returncode == -signal.SIGKILL, done.stdout + done.stderr

    def author(self, store: Store) -> Author:
        found = authenticate(store, self.token)
        assert found is not None
        return found


def test_a_crash_after_storing_a_version_is_claimed_when_the_intake_starts(tmp_path: Path) -> None:
    league = League(tmp_path)
    league.crash_while_submitting(league.archive("crashy"), "stored")
    [version] = Registry(league.registry).versions("crashy")
    assert version.author == "fay"  # the index names the author in the same write that stored the version
    store = Store(league.db)
    try:
        assert owner_of(store, "crashy") is None  # the hole: a version no author owns

        restarted = Intake(league.settings)
        assert restarted.recovered == ["crashy@1"]
        assert owner_of(store, "crashy") == "fay" and submissions_of(store, "crashy") == {1: "fay"}
        assert len(accepted_since(store, league.author(store), 0)) == 1  # it counts toward the rate limit
        assert Intake(league.settings).recovered == []  # once only
        # The name is fay's: her next version is accepted as version 2.
        reply = restarted.submit(league.author(store), league.archive("crashy", "# a new version\n"))
        assert (reply.status, reply.body["version"]) == (201, 2), reply.body
    finally:
        store.close()


def test_a_crash_while_checking_stores_and_claims_nothing(tmp_path: Path) -> None:
    league = League(tmp_path)
    archive = league.archive("early")
    league.crash_while_submitting(archive, "checking")
    store = Store(league.db)
    try:
        restarted = Intake(league.settings)
        assert restarted.recovered == [] and Registry(league.registry).names() == []
        assert owner_of(store, "early") is None and accepted_since(store, league.author(store), 0) == []
        reply = restarted.submit(league.author(store), archive)
        assert (reply.status, reply.body["version"]) == (201, 1)
    finally:
        store.close()


def test_a_version_directory_left_without_its_index_entry_is_replaced(tmp_path: Path) -> None:
    # What a submit killed between its rename and its index write leaves: NAME/1/ that versions.json does not list.
    registry = Registry(tmp_path / "bots")
    left = registry.root / "greedy" / "1"
    left.mkdir(parents=True)
    (left / "half.txt").write_text("from a killed submit")
    result = registry.submit(GREEDY, lambda copy, built: check_bot(copy, built=built))
    assert (result.status, result.version) == ("stored", 1)
    assert not (left / "half.txt").exists() and (left / "bot.yaml").is_file()
