"""``arena init``: a commented config that runs as it is (issue 40). The schemas' side of the written files is in
tests/test_schemas.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from arena.cli.main import main
from arena.run.starter import InitError, write_config
from tests.support.runs import arena
from tests.support.server import Server, free_port


def test_init_writes_both_kinds_named_after_the_directory_and_never_overwrites(tmp_path: Path) -> None:
    cup = tmp_path / "Spring Cup"
    result = CliRunner().invoke(main, ["init", "tournament", str(cup), "--json"])
    assert result.exit_code == 0, result.output
    written = Path(json.loads(result.stdout)["config"])
    assert written == cup / "tournament.yaml" and "\nname: spring-cup " in written.read_text()
    again = CliRunner().invoke(main, ["init", "tournament", str(cup)])
    assert again.exit_code == 2 and f"arena: {written}: already exists" in again.stderr
    league = CliRunner().invoke(main, ["init", "league", str(cup), "--name", "ladder"])
    assert league.exit_code == 0 and "\n  name: ladder " in (cup / "league.yaml").read_text()
    assert "next: arena serve" in league.stderr
    with pytest.raises(InitError, match="--name: expected a slug"):
        write_config("league", tmp_path / "x", "Bad Name")
    assert "name: my-tournament " in write_config("tournament", tmp_path / "___").read_text()


@pytest.mark.slow
def test_init_then_run_in_an_empty_directory(tmp_path: Path) -> None:
    """The organiser's first two commands, as typed, in a directory holding nothing."""
    made = arena("init", cwd=tmp_path)
    assert made.returncode == 0 and made.stdout.strip() == "tournament.yaml", made.stderr
    done = arena("run", "tournament.yaml", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    found = json.loads(done.stdout)
    assert found["matches"] == found["played"] == 6 and not found["failed"]
    assert [row["bot"] for row in found["standings"]] and (tmp_path / "results" / "site" / "index.html").is_file()


@pytest.mark.slow
def test_init_league_then_serve_plays_its_house_bots(tmp_path: Path) -> None:
    made = arena("init", "league", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    server = Server(tmp_path, tmp_path / "league.yaml", tmp_path / "results" / "arena.db", free_port())
    with server.running():
        server.wait_for("the house bots' first matches",
                        lambda: all(line["matches"] > 0 for line in server.standings().values())
                        and set(server.standings()) == {"greedy", "random"})
