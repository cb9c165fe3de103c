"""``arena doctor`` and the automatic choice of the process sandbox's variant."""

from __future__ import annotations

import json

from click.testing import CliRunner

from arena.cli.main import main
from arena.sandbox import bwrap, get_sandbox, process, views


def test_doctor_reports_every_check_with_yes_or_no_and_a_reason() -> None:
    result = CliRunner().invoke(main, ["doctor", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    names = [check["name"] for check in report["checks"]]
    for expected in ("bwrap installed", "bwrap sandbox works", "user namespace", "network namespace",
                     "pid namespace", "running as root (per-bot uids)", "docker", "python3", "node"):
        assert expected in names
    assert all(isinstance(c["ok"], bool) and c["reason"] for c in report["checks"])
    assert report["process_sandbox"]["environment"]["ok"] is True
    # The channels between sandboxes are closed exactly where bwrap (and its seccomp filter) runs the bots.
    assert report["process_sandbox"]["no_shared_locks"]["ok"] is bwrap.bwrap_status()[0]
    # Each sandbox's own page and dentry caches: where bwrap runs and the host can mount images (root, erofs).
    views_check = next(check for check in report["checks"] if check["name"].startswith("private views"))
    assert views_check["ok"] is views.status()[0]
    # Used without asking only once an organiser has built the runtime image (arena sandbox build-views; .ci/run does).
    assert report["process_sandbox"]["private_caches"]["ok"] is (bwrap.bwrap_status()[0] and views.ready()[0])
    text = CliRunner().invoke(main, ["doctor"])
    assert text.exit_code == 0 and "bwrap sandbox works" in text.output


def test_without_bwrap_the_process_backend_falls_back_and_says_why(monkeypatch, caplog) -> None:
    monkeypatch.setattr(bwrap, "BWRAP", "/nonexistent/bwrap")
    assert bwrap.bwrap_status.__wrapped__() == (False, "/nonexistent/bwrap is not installed")
    monkeypatch.setattr(process, "bwrap_status", lambda: (False, "/nonexistent/bwrap is not installed"))
    monkeypatch.setattr(process, "_WARNED", False)
    with caplog.at_level("WARNING"):
        sandbox = get_sandbox("process")
    assert not sandbox.isolated  # type: ignore[attr-defined]
    assert not sandbox.guarantees()["network"][0]  # type: ignore[attr-defined]
    assert any("/nonexistent/bwrap is not installed" in r.getMessage() for r in caplog.records)


def test_doctor_shows_the_docker_backends_guarantees_when_an_engine_answers() -> None:
    from arena.sandbox.docker import engine_status

    report = json.loads(CliRunner().invoke(main, ["doctor", "--json"]).output)
    docker_check = next(check for check in report["checks"] if check["name"] == "docker")
    answers, reason = engine_status()
    assert docker_check["ok"] is answers
    if answers:
        assert set(report["docker_sandbox"]) == set(report["process_sandbox"])
        assert report["docker_sandbox"]["network"]["ok"] is True
        assert report["docker_sandbox"]["no_shared_locks"]["ok"] is True
    else:
        assert "docker_sandbox" not in report and docker_check["reason"] == reason
