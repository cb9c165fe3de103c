"""A short soak of a real ``arena serve`` (bench/soak.py, issue 44): uploads good, failing and hostile, page reads and
logins, a match worker killed -9 and a restart, and nothing grows with the matches but the store, logs and site.

Issue 44 asks for 5 minutes; this runs 100 seconds, because the whole suite must stay under 10 minutes (it is
about 8 already). The long run's figures are in docs/SERVER.md. On a short run the slopes are noisy, so the test
asserts what a leak of one per match or per upload would break by far, with the bench's own tolerances, and no
absolute value of RSS, latency or throughput (a loaded machine moves them).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from arena.sandbox.bwrap import bwrap_status

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.long
@pytest.mark.skipif(not bwrap_status()[0], reason="needs bubblewrap")
def test_a_short_soak_holds_flat(tmp_path: Path) -> None:
    ran = subprocess.run([sys.executable, str(ROOT / "bench" / "soak.py"), "--minutes", "1.6", "--sample-every",
                          "2", "--upload-every", "4", "--warmup", "0.2", "--svg", str(tmp_path / "soak.svg")],
                         capture_output=True, text=True, timeout=600, cwd=ROOT, check=False)
    assert ran.returncode == 0, ran.stderr[-3000:]
    result = json.loads(ran.stdout)
    # Every path was driven: each kind of upload got its answer, the worker was killed, the server restarted.
    answers = result["uploads"]["answers"]  # kind -> {status: count}; how many are sent depends on the load
    assert {"good", "crash_at_hello"} <= set(answers), answers
    for kind, codes in answers.items():
        wanted = {"201"} if kind in ("good", "stderr_flood", "new_version") else {"422"}
        assert set(codes) == wanted, answers
    assert [event["event"] for event in result["events"]] == ["worker killed -9", "restart"]
    restart = result["events"][1]
    assert restart["lost_matches"] == 0 and restart["lost_versions"] == []
    assert result["logins"] > 0 and result["reads"] > 0
    # No zombie outlives a window of matches, and what is held beyond the running bots does not grow.
    samples = result["samples"]
    assert max(sample["zombies"] for sample in samples) == 0
    assert result["fit"]["lives"], f"too few samples to fit a slope: {len(samples)}"
    for life, fitted in result["fit"]["lives"].items():
        series = fitted["series"]
        for key in ("threads", "host_processes", "zombies", "leases_extra", "cgroups_extra"):
            assert series[key]["flat"], (life, key, series[key], [s[key] for s in samples])
        # Descriptors move by a few with what is open at the moment (the reader's connections, a site publish), and
        # a short life fits a change of 4-5 from that alone (measured: 4.4 in a 100 s run at load 25); a leak of
        # one per match exceeds 8 once a life plays 9 matches after its warm-up.
        assert abs(series["fds"]["change"]) <= 8, (life, series["fds"], [s["fds"] for s in samples])
        # The store grows by a bounded amount per match: tens of KB (docs/SERVER.md), not megabytes.
        assert series["store_bytes"]["bytes_per_match"] < 200_000, series["store_bytes"]
    assert (tmp_path / "soak.svg").read_text().startswith("<svg")
