"""``sample:NAME`` wherever a bot is named (issue 40, the newcomer's finding 4): ``arena match``, ``arena test`` (NEW,
BASE and ``--opponents``), ``arena check``, tournament configs and league configs; an unknown one is named with the
samples there are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from arena.cli.main import main
from arena.resources import data_dir
from arena.run.config import ConfigError
from arena.server.config import load_serve_config

SAMPLES = data_dir("sample_bots")


def test_arena_test_takes_samples_for_every_bot(tmp_path: Path) -> None:
    # --players 2 leaves no seat for the opponent: the refusal comes only after every name was read as a bot
    result = CliRunner().invoke(main, ["test", "sample:greedy", "sample:random", "--opponents", "sample:planner",
                                       "--players", "2", "--db", str(tmp_path / "a.db"), "--json"])
    assert result.exit_code == 2 and "--opponents: a heads-up table has no seat" in json.loads(result.stdout)["error"]
    unknown = CliRunner().invoke(main, ["test", "sample:greedy", "sample:random", "--opponents", "sample:nosuch"])
    assert unknown.exit_code == 2 and unknown.stderr.startswith("arena: --opponents: sample:nosuch: no such sample")
    assert "sample:planner" in unknown.stderr  # the samples there are
    missing = CliRunner().invoke(main, ["test", "sample:greedy", str(tmp_path / "none")])
    assert missing.exit_code == 2 and "no such directory (a bot directory, or sample:NAME" in missing.stderr


def test_a_league_config_takes_samples(tmp_path: Path) -> None:
    config = tmp_path / "league.yaml"
    config.write_text("league:\n  name: l\n  bots: ['registry:*', sample:greedy]\n  players: 2\n")
    league = load_serve_config(config, tmp_path / "bots").league
    assert league.entries == ("registry:*", str(SAMPLES / "greedy"))
    config.write_text("league:\n  name: l\n  bots: ['registry:*', sample:nosuch, nowhere]\n  players: 2\n")
    with pytest.raises(ConfigError) as refused:
        load_serve_config(config, tmp_path / "bots")
    assert f"{config}: league.bots[1]: sample:nosuch: no such sample bot" in str(refused.value)
    assert "league.bots[2]: expected registry:..., sample:NAME or a bot directory" in str(refused.value)
