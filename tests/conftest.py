"""Suite-wide set-up: compile arena's bytecode once, before any worker starts.

The package is installed editable, and a machine that sets PYTHONDONTWRITEBYTECODE never caches its bytecode: then
each of the hundreds of `python -m arena` subprocesses and sample bots the suite starts compiles every module it
imports again from source (measured: the fast profile 63 s with that, 57 s without, on a quiet 2-core machine).
A wheel install compiles at install time; this does the same for the tree under test, once per run, and is a no-op
when the bytecode is current.

The same holds for the test modules: pytest rewrites each one's asserts at import and caches the result beside it,
unless bytecode is not to be written; then every worker of every run parses and rewrites all 15,000 lines of tests
again (measured: collection 10.6 CPU s a worker without the cache, 3.9 with it). So collection writes that cache
whatever the machine says; the processes the tests start still inherit the machine's setting.
"""

from __future__ import annotations

import compileall
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena import procfs
from tests.support import zombies

ROOT = Path(__file__).resolve().parent.parent


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return  # an xdist worker: the controller compiled before starting it
    for tree in ("arena", "protocol", "sample_bots"):
        compileall.compile_dir(ROOT / tree, quiet=2, workers=1)


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Iterator[None]:
    previous, sys.dont_write_bytecode = sys.dont_write_bytecode, False
    try:
        return (yield)
    finally:
        sys.dont_write_bytecode = previous


# -- zombies: none left by any test -------------------------------------------------------------------------------

@pytest.fixture(autouse=True)
def _orphans_reaped() -> Iterator[None]:
    """After each test, reap what its killed runners left to this process, a subreaper (tests/support/zombies.py)."""
    yield
    zombies.reap_unowned()


@pytest.fixture(autouse=True, scope="session")
def _no_zombie_at_the_end() -> Iterator[None]:
    """The session ends with no zombie child: one left now is a child that its owner never waited for (a test's
    Popen, or a sandbox arena failed to reap), since the orphans of killed runners are reaped after each test."""
    yield
    left = zombies.left_at_the_end()
    assert not left, f"zombie children left at the end of the session: {[procfs.stat(pid) for pid in left]}"


# -- fixtures several test modules use ---------------------------------------------------------------------------

@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)], capture_output=True,
                          check=False)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    """A read-only view (a read-only bind mount: root ignores file modes) of a directory to put a store in."""
    source, view = tmp_path / "rw", tmp_path / "ro"
    source.mkdir()
    view.mkdir()
    made = subprocess.run(["mount", "--bind", str(source), str(view)], capture_output=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {made.stderr.decode().strip()}")
    try:
        remount = ["mount", "-o", "remount,ro,bind", str(view)]
        if subprocess.run(remount, capture_output=True, check=False).returncode != 0:
            pytest.skip("cannot remount read-only here")
        yield source
    finally:
        subprocess.run(["umount", "-l", str(view)], check=False)
