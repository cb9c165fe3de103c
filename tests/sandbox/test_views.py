"""Private views (arena/sandbox/views.py): each bwrap sandbox reads the runtime and its bot through mounts of its
own, and nothing of them outlives the bot, nor a runner killed with -9.

The channel they close is checked end to end by tests/run/test_cheaters.py (the page-cache cheater and its control)
and measured by bench/pagecache_channel.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arena.bots.manifest import load_bot
from arena.sandbox import SandboxLimits, views
from arena.sandbox.process import ProcessSandbox, bwrap_status
from tests.channels import write_probe_bot
from tests.support.probe import ask

LIMITS = SandboxLimits(memory_mb=160, processes=16, file_mb=4, scratch_mb=8, open_files=64, cpu_seconds=20)
ROOT = Path(__file__).resolve().parents[2]
SWEEP_WAIT_S = 60.0
"""Only a broken sweep waits this long: the kernel frees a loop device once the last mount of it is gone."""


@pytest.fixture(scope="module")
def sandbox() -> ProcessSandbox:
    works, reason = views.status()
    if not works or not bwrap_status()[0]:
        pytest.skip(f"no private views here: {reason if works is False else bwrap_status()[1]}")
    return ProcessSandbox(isolate=True, private_views=True)


def loops_of(directory: Path) -> list[str]:
    """The loop devices mounted under ``directory``, from this namespace's mount table."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        if fields[4].startswith(str(directory)):
            found.append(fields[fields.index("-") + 2])
    return found


def attached(device: str) -> bool:
    """Whether the loop device still has a backing file (autoclear detaches it when its last mount goes)."""
    return Path(f"/sys/block/{Path(device).name}/loop/backing_file").exists()


def test_each_sandbox_reads_its_own_mounts_and_the_kill_leaves_none(sandbox: ProcessSandbox, tmp_path: Path) -> None:
    assert sandbox.guarantees()["private_caches"][0]
    bot = load_bot(write_probe_bot(tmp_path / "probe"))
    first, second = sandbox.launch(bot, LIMITS), sandbox.launch(bot, LIMITS)
    records = sandbox.launched[-2:]
    paths = ["/usr/bin/python3", "/bot/channels.py", "/protocol/arena_bot.py"]
    try:
        seen = [ask(process, {"do": "stat", "paths": paths})["devices"] for process in (first, second)]
        devices = [loops_of(record.view) for record in records if record.view is not None]
    finally:
        first.kill()
        second.kill()
    host = [os.stat(path).st_dev for path in ("/usr/bin/python3", tmp_path)]
    # Four filesystems (two per sandbox: runtime, bot), none the host's and none shared.
    assert len({dev for pair in seen for dev in pair}) == 4 and not set(host) & {d for pair in seen for d in pair}, seen
    assert seen[0][1] == seen[0][2] and seen[1][1] == seen[1][2]  # /bot and /protocol: one image
    assert len(devices) == 2 and all(len(pair) == 2 for pair in devices), devices
    for record in records:
        assert record.view is not None and not record.view.exists() and not loops_of(record.view)
    deadline = time.monotonic() + SWEEP_WAIT_S
    while any(attached(device) for pair in devices for device in pair):
        assert time.monotonic() < deadline, devices
        time.sleep(0.05)


RUNNER = """
import sys
from arena.bots.manifest import load_bot
from arena.sandbox import SandboxLimits
from arena.sandbox.process import ProcessSandbox
sandbox = ProcessSandbox(isolate=True, private_views=True)
process = sandbox.launch(load_bot(sys.argv[1]), SandboxLimits(memory_mb=160))
print(sandbox.launched[-1].view, flush=True)
sys.stdin.read()
"""


def test_the_views_of_a_runner_killed_with_minus_9_are_swept(sandbox: ProcessSandbox, tmp_path: Path) -> None:
    bot = write_probe_bot(tmp_path / "probe")
    runner = subprocess.Popen([sys.executable, "-c", RUNNER, str(bot)], cwd=ROOT, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert runner.stdout is not None
    view = Path(runner.stdout.readline().decode().strip())
    devices = loops_of(view)
    assert len(devices) == 2, (view, devices)
    runner.send_signal(signal.SIGKILL)
    runner.wait()
    assert loops_of(view)  # nothing of the dead runner removed them
    # What the next runner on the host does at its start (and every 2 s of launches): its sandbox's sweep of
    # dead runners' cgroups kills the orphaned namespace, and the views' sweep unmounts.
    ProcessSandbox(isolate=True, private_views=True)
    assert not loops_of(view) and not view.parent.exists()
    deadline = time.monotonic() + SWEEP_WAIT_S
    while any(attached(device) for device in devices):
        assert time.monotonic() < deadline, devices
        time.sleep(0.05)


def test_a_planted_views_directory_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``/dev/shm`` is writable by everyone: a directory someone else made there must not hold our mounts."""
    planted = tmp_path / "views"
    planted.mkdir(mode=0o777)
    os.chmod(planted, 0o777)
    monkeypatch.setattr(views, "VIEWS", planted)
    with pytest.raises(views.SandboxError, match="mode 0700"):
        views._private_directory(planted / "mounts")


def test_bot_images_go_when_unmounted_for_a_day_or_past_the_cap_least_recently_mounted_first(tmp_path: Path) -> None:
    # They live in RAM (/dev/shm): a day of uploads or a test suite's bots would stay there without a cap. The last
    # mounted ones are kept up to the cap, and one mounted in the last keep_s minutes is kept past it however large
    # (a bot in play is not built again at every launch).
    now = time.time()
    kib = 1 << 10
    images = {  # name: (seconds since its last mount, size)
        "bot-huge-in-play": (5, 3_000 * kib),
        "bot-recent": (100, 300 * kib),
        "bot-hour-old": (3_600, 300 * kib),
        "bot-two-hours-old": (7_200, 300 * kib),
        "bot-two-days-old": (2 * 86_400, 1 * kib),
        "runtime-0123.erofs": (3 * 86_400, 5_000 * kib),  # the runtime image: never a bot image's sweep's
        ".stage-x": (3 * 86_400, 1 * kib),
    }
    for name, (age, size) in images.items():
        path = tmp_path / name
        path.write_bytes(b"")
        os.truncate(path, size)
        os.utime(path, (now - age, now - age))
    removed = views.sweep_bot_images(tmp_path, max_age_s=86_400, max_bytes=3_700 * kib, keep_s=600)
    # 3,000 + 300 + 300 KiB fit under 3,700; the two-hour-old one would pass it; the two-day-old one is past its age.
    assert sorted(removed) == ["bot-two-days-old", "bot-two-hours-old"]
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(set(images) - set(removed))
    # Under a cap smaller than the image in play, that one still stays: only what was not mounted lately goes.
    assert sorted(views.sweep_bot_images(tmp_path, max_age_s=86_400, max_bytes=1 * kib, keep_s=600)) == [
        "bot-hour-old"]
    assert "bot-huge-in-play" in {path.name for path in tmp_path.iterdir()}
