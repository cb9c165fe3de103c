"""protocol/PROTOCOL.md stays true: its examples validate, it names every field, and its sample code runs.

Bot authors copy from this page, so a stale example costs them a forfeit. Every ```json line is a message checked
against its schema; every schema property must appear in the page; the complete bot, the helper-free loop and the
shell example are run.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from arena.game.rules import Rules, discard_kind
from arena.match.local import play_local
from tests.samplebots import PROTOCOL_DIR, ROOT, bot_env, load_sample_bot

DOC = PROTOCOL_DIR / "PROTOCOL.md"
SCHEMA_DIR = PROTOCOL_DIR / "schema"
SCHEMA_OF = {"play": "move", "declare": "move"}  # reply types share the move schema; others are named by type


@cache
def doc() -> str:
    return DOC.read_text(encoding="utf-8")


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", doc(), flags=re.DOTALL | re.MULTILINE)


def schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text(encoding="utf-8"))
    return loaded


def examples() -> list[dict[str, Any]]:
    return [json.loads(line) for block in blocks("json") for line in block.splitlines() if line.strip()]


def test_every_example_is_one_line_that_matches_its_schema() -> None:
    for message in examples():
        name = SCHEMA_OF.get(message["type"], message["type"])
        problems = [error.message for error in Draft202012Validator(schema(name)).iter_errors(message)]
        assert problems == [], (message, problems)


def test_every_message_type_has_an_example() -> None:
    shown = {message["type"] for message in examples()}
    names = {path.name.removesuffix(".schema.json") for path in SCHEMA_DIR.glob("*.schema.json")}
    assert shown == (names - {"move"}) | {"play", "declare"}


def test_every_schema_field_is_documented() -> None:
    for path in SCHEMA_DIR.glob("*.schema.json"):
        loaded = json.loads(path.read_text(encoding="utf-8"))
        properties = dict(loaded["properties"])
        for definition in loaded.get("$defs", {}).values():
            properties |= definition.get("properties", {})
        properties |= properties.get("rules", {}).get("properties", {})
        properties |= properties.get("limits", {}).get("properties", {})
        missing = [name for name in properties if f"`{name}`" not in doc()]
        assert missing == [], f"{path.name}: fields not described in PROTOCOL.md: {missing}"


def _python_block(marker: str) -> str:
    [code] = [block for block in blocks("python") if marker in block]
    return code


def test_the_complete_bot_plays_legal_moves(tmp_path: Path) -> None:
    load_sample_bot("greedy")  # puts protocol/ on sys.path, as the runner's PYTHONPATH does
    path = tmp_path / "minimal_bot.py"
    path.write_text(_python_block("class MinimalBot"), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("doc_minimal_bot", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for seed in range(10):
        bots = [module.MinimalBot(), load_sample_bot("greedy").GreedyBot(), load_sample_bot("random").RandomBot()]
        match = play_local(bots, seed, Rules(threshold=50))
        assert match.forfeits == []


def test_the_helper_free_loop_works(tmp_path: Path) -> None:
    path = tmp_path / "bot.py"
    path.write_text(_python_block("for line in sys.stdin"), encoding="utf-8")
    hand = ["KH", "KS", "2C", "9D", "TD"]
    conversation = [
        {"type": "hello", "protocol": 1, "seat": 0, "players": ["a", "b"], "rules": Rules().to_dict(), "limits": {}},
        {"type": "round_start", "round": 1, "hand": hand, "floor": ["AC"], "scores": [0, 0], "live": [True, True],
         "starter": 0},
        {"type": "turn", "round": 1, "hand": hand, "floor": ["AC"], "may_declare": False},
    ]
    done = subprocess.run([sys.executable, str(path)], input="".join(json.dumps(m) + "\n" for m in conversation),
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    ready, move = map(json.loads, done.stdout.splitlines())
    assert ready == {"type": "ready"}
    assert move["take"] == "deck" and move["discard"][0] in hand and discard_kind(move["discard"]) == "single"


def test_the_shell_example_runs() -> None:
    [script] = blocks("sh")
    done = subprocess.run(["sh", "-c", script], cwd=ROOT, env=bot_env(), capture_output=True, text=True, timeout=30,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["type"] for line in done.stdout.splitlines()] == ["ready", "play"]


def test_the_manifest_example_has_the_manifest_fields() -> None:
    [manifest] = blocks("yaml")
    assert set(yaml.safe_load(manifest)) == {"name", "command", "language", "author", "description"}


@pytest.mark.parametrize("target", ["RULES.md", "schema/"])
def test_links_point_into_protocol(target: str) -> None:
    # RULES.md is written separately; the link must at least be relative to protocol/, where it will live.
    assert f"]({target})" in doc()
