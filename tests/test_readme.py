"""README.md stays true: its bot.yaml is a valid manifest and its minimal bot plays whole matches legally.

The README's bot is the first code a newcomer copies; the two commands for a fresh machine are run by CI itself.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from arena.bots.manifest import load_bot
from arena.cli.results import print_standings
from arena.game.rules import Rules
from arena.match.local import play_local
from arena.stats.confidence import confidence
from tests.samplebots import ROOT, bot_env, load_sample_bot

README = (ROOT / "README.md").read_text(encoding="utf-8")


def block(language: str) -> str:
    [code] = re.findall(rf"^```{language}\n(.*?)^```$", README, flags=re.DOTALL | re.MULTILINE)
    return code


def write_bot(directory: Path) -> Path:
    directory.mkdir()
    (directory / "bot.yaml").write_text(block("yaml"), encoding="utf-8")
    (directory / "bot.py").write_text(block("python"), encoding="utf-8")
    return directory


def test_the_readme_bot_is_a_valid_bot_directory(tmp_path: Path) -> None:
    spec = load_bot(write_bot(tmp_path / "my-bot"))
    assert spec.name == "my-bot"


def test_the_readme_bot_plays_legal_moves(tmp_path: Path) -> None:
    path = write_bot(tmp_path / "my-bot") / "bot.py"
    load_sample_bot("greedy")  # puts protocol/ on sys.path, as the runner's PYTHONPATH does
    loader = importlib.util.spec_from_file_location("readme_minimal_bot", path)
    assert loader is not None and loader.loader is not None
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    for seed in range(10):
        bots = [module.MinimalBot(), load_sample_bot("greedy").GreedyBot(), load_sample_bot("random").RandomBot()]
        match = play_local(bots, seed, Rules(threshold=50))
        assert match.forfeits == []


def test_the_readme_bot_speaks_on_stdout(tmp_path: Path) -> None:
    directory = write_bot(tmp_path / "my-bot")
    hand = ["KH", "KS", "2C", "9D", "TD"]
    conversation = [
        {"type": "hello", "protocol": 1, "seat": 0, "players": ["a", "b"], "rules": Rules().to_dict(), "limits": {}},
        {"type": "turn", "round": 1, "hand": hand, "floor": ["AC"], "may_declare": False},
    ]
    done = subprocess.run([sys.executable, "bot.py"], cwd=directory, env=bot_env(),
                          input="".join(json.dumps(m) + "\n" for m in conversation),
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    ready, move = map(json.loads, done.stdout.splitlines())
    assert ready == {"type": "ready"}
    assert move == {"type": "play", "discard": ["KH", "KS"], "take": "deck"}


def test_the_readme_demo_table_is_in_the_format_arena_prints(capsys: pytest.CaptureFixture[str]) -> None:
    # The demo's output in the README is pasted from a real run: when the table's format changes, the paste must be
    # made again (cd to a scratch directory; arena run tournaments/demo.yaml --fresh).
    print_standings([], confidence([], []))
    header = capsys.readouterr().out.rstrip("\n")
    shown = block("text").splitlines()
    assert header in shown, "README's demo table has an old header: run the demo again and paste its output"
    rows = shown[shown.index(header) + 1:]
    rows = rows[:next(i for i, row in enumerate(rows) if row.startswith("demo: "))]
    assert len(rows) == 4
    for row in rows:
        rank, name, *_, p_next, faults = row.split()
        assert re.fullmatch(r"\d+(-\d+)?", rank) and name in {"planner", "greedy", "js-greedy", "random"}
        assert re.fullmatch(r"-|0\.\d\d|> 0\.\d\d", p_next) and faults == "-"
