"""arena/procfs.py's one check of whether the process that left something behind (a lease, a container) still runs."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from arena import procfs


def test_this_process_is_its_own_live_owner() -> None:
    me = procfs.owner()
    info = procfs.stat(os.getpid())
    assert info is not None and me == procfs.Owner(socket.gethostname(), os.getpid(), info.start_time)
    assert procfs.owner_alive(me)
    assert procfs.Owner.parse(str(me)) == me


def test_a_reused_pid_does_not_pass_for_its_old_owner() -> None:
    me = procfs.owner()
    assert me.start_time is not None
    # The same pid started at another time: another process, the owner is gone.
    assert not procfs.owner_alive(procfs.Owner(me.host, me.pid, me.start_time - 1))
    # A record without a start time is checked by its pid alone.
    assert procfs.owner_alive(procfs.Owner(me.host, me.pid, None))


def test_a_finished_owner_is_gone_and_another_hosts_cannot_be_judged() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    owner = procfs.owner(child.pid)
    child.wait()
    assert not procfs.owner_alive(owner)
    assert procfs.owner_alive(procfs.Owner("elsewhere.invalid", 1, 1))  # not ours to judge: its expiry decides
    # What a malformed record names: on this host, no process; a record without a host, another host's.
    assert not procfs.owner_alive(procfs.Owner.parse(f"{socket.gethostname()}:x:1"))
    assert procfs.owner_alive(procfs.Owner.parse(""))


def test_a_files_tag_names_its_owner_on_this_host() -> None:
    me = procfs.owner()
    assert procfs.Owner.from_tag(me.tag) == me and procfs.owner_alive(me)
    assert me.start_time is not None
    reused = procfs.Owner.from_tag(f"{me.pid}-{me.start_time + 1}")
    assert reused is not None and not procfs.owner_alive(reused)
    assert procfs.Owner.from_tag(str(me.pid)) == procfs.Owner(me.host, me.pid, None)  # a name from before
    assert procfs.Owner.from_tag("notes") is None
