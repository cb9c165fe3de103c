"""The JSON Schemas arena ships (arena/schemas/) say what the hand-written validators say (issue 40): every shipped
and test config passes both, and on a fuzzed set the schema accepts exactly what the validator accepts, except
where a rule needs more than the document. Those exceptions, each a predicate below:

- a bot entry must name a bot that is there (a directory relative to the config, or a sample that ships), and two
  entries must not name one bot (the filesystem);
- a tournament's ``players`` is at most its number of bots, and ``stop.max_matches`` holds one round of its schedule
  (cross-field);
- a ``limits:`` value must be one this host can grant (the host);
- ``server.attempts_per_hour`` is at least ``server.uploads_per_hour`` (cross-field);
- a bot.yaml ``command``/``build`` string must split like a shell would (shlex).

Two differences of number models are left out of the fuzzing, not hidden: JSON Schema counts 2.0 as an integer and
arena does not (the schemas are read here with Python's integers, as arena reads YAML), and YAML's ``.nan`` and
``.inf`` are no JSON numbers (arena refuses them everywhere, tests below)."""

from __future__ import annotations

import json
import shlex
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena.bots.manifest import ManifestError, load_bot
from arena.resources import NoSuchSample, data_dir, sample_bot
from arena.run.config import ConfigError, load_config, parse_config
from arena.run.starter import KINDS, schema_path, write_config
from arena.sandbox import SandboxLimits
from arena.sandbox.rlimits import ungrantable
from arena.schedule import make_schedule
from arena.server.config import load_serve_config

ROOT = Path(__file__).resolve().parent.parent
LIMIT_TIMES = ("hello_ms", "move_ms", "bank_ms")
FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def validator(kind: str) -> jsonschema.protocols.Validator:
    """The schema of ``kind``, with "integer" meaning a Python int (not 2.0, not true), as arena reads YAML."""
    checker = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _, value: isinstance(value, int) and not isinstance(value, bool))
    strict = jsonschema.validators.extend(jsonschema.Draft202012Validator, type_checker=checker)
    schema = json.loads(schema_path(kind).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return strict(schema)


SCHEMAS = {kind: validator(kind) for kind in ("tournament", "league", "bot")}


def schema_accepts(kind: str, data: Any) -> bool:
    return SCHEMAS[kind].is_valid(data)


# -- every shipped and test config -----------------------------------------------------------------------------

def shipped_bots() -> list[Path]:
    return sorted([*data_dir("sample_bots").glob("*/bot.yaml"), *(ROOT / "arena/templates/newbot").glob("*/bot.yaml")])


@pytest.mark.parametrize("path", shipped_bots(), ids=lambda path: f"{path.parent.parent.name}/{path.parent.name}")
def test_every_shipped_bot_yaml_passes_its_schema(path: Path) -> None:
    text = path.read_text().replace("__NAME__", "template")  # the new-bot templates' placeholder
    assert schema_accepts("bot", yaml.safe_load(text)), list(SCHEMAS["bot"].iter_errors(yaml.safe_load(text)))


def test_every_shipped_and_test_config_passes_the_validator_and_the_schema(tmp_path: Path) -> None:
    from tests.support.runs import write_config as test_config
    from tests.support.runs import write_stop_config

    tournaments = [*data_dir("tournaments").glob("*.yaml"), test_config(tmp_path), write_stop_config(tmp_path)]
    for kind in KINDS:
        written = write_config(kind, tmp_path / "init" / kind)
        assert written.read_text().startswith(f"# yaml-language-server: $schema={schema_path(kind).as_uri()}\n")
        assert Path(schema_path(kind)).is_file()
        if kind == "tournament":
            tournaments.append(written)
    assert len(tournaments) >= 6
    for path in tournaments:
        load_config(path, registry=tmp_path / "bots")
        assert schema_accepts("tournament", yaml.safe_load(path.read_text())), path
    league = tmp_path / "init" / "league" / "league.yaml"
    load_serve_config(league, tmp_path / "bots")
    assert schema_accepts("league", yaml.safe_load(league.read_text()))


# -- fuzzed documents -------------------------------------------------------------------------------------------

JUNK = st.sampled_from([None, True, False, 0, -1, 1, 2, 3, 0.5, 2.5, "", "x", [], [1], {}, {"x": 1}])


def ints(*bounds: int) -> st.SearchStrategy[Any]:
    """Integers at and either side of ``bounds``, and junk."""
    return st.one_of(st.sampled_from(sorted({b + d for b in bounds for d in (-1, 0, 1)})), JUNK)


def numbers(*bounds: float) -> st.SearchStrategy[Any]:
    return st.one_of(st.sampled_from(sorted({b + d for b in bounds for d in (-0.25, 0, 0.25)})), ints(*map(int, bounds)))


def of(*values: Any) -> st.SearchStrategy[Any]:
    return st.sampled_from(values)


Fields = dict[str, tuple[st.SearchStrategy[Any], st.SearchStrategy[Any]]]
"""Each key: a strategy of values the validator takes, and one of any values, most of them bad."""


@st.composite
def document(draw: st.DrawFn, fields: Fields, required: tuple[str, ...] = ()) -> Any:
    """A valid mapping (its required keys and some others) with up to two keys then deleted or given any value;
    sometimes a key no validator knows; now and then no mapping at all. About a third come out valid."""
    data = {key: draw(valid) for key, (valid, _) in fields.items() if key in required or draw(st.booleans())}
    for key in draw(st.lists(st.sampled_from(sorted(fields)), max_size=2, unique=True)):
        if draw(st.integers(0, 3)) == 0:
            data.pop(key, None)
        else:
            data[key] = draw(fields[key][1])
    if draw(st.integers(0, 11)) == 0:
        data["colour"] = "blue"
    return draw(JUNK) if draw(st.integers(0, 29)) == 0 else data


def section(fields: Fields, required: tuple[str, ...] = ()) -> tuple[st.SearchStrategy[Any], st.SearchStrategy[Any]]:
    """A nested mapping: valid ones, and any (a mutated one, or junk)."""
    valid = st.fixed_dictionaries({}, optional={key: value for key, (value, _) in fields.items()})
    if required:
        valid = st.builds(lambda rest, needed: rest | needed, valid,
                          st.fixed_dictionaries({key: fields[key][0] for key in required}))
    return valid, document(fields, required)


SAMPLES = ["sample:greedy", "sample:random", "sample:planner", "sample:js-greedy"]
VALID_BOTS = st.lists(st.sampled_from(SAMPLES), min_size=2, max_size=4, unique=True)
ANY_BOTS = st.one_of(st.lists(st.sampled_from([*SAMPLES, "sample:nosuch", "nowhere", ""]), max_size=5), JUNK)
NAME = (of("t", "my-cup_2", "a" * 40), st.one_of(of("Bad Name", "a" * 41, "-x", "t\n", ""), JUNK))
SHARED: Fields = {
    "name": NAME,
    "players": (of(2, 3, 4), ints(2, 8)),
    "seed": (of(0, 7, "s", "x" * 1000), st.one_of(ints(0), of("", "x" * 1001))),
    "rules": section({"threshold": (of(1, 50, 100000), ints(1, 100000)),
                      "sequence_lengths": (of([3], [3, 5]), of([3, 3], [6], [], 3)),
                      "until": (of("first_out", "last_standing"), of("never", None)),
                      "declare_max": (of(None, 0, 50), ints(0, 50)), "tie_fails": (of(True, False), JUNK)}),
    "limits": section({"move_ms": (of(1, 1000), ints(1)), "bank_ms": (of(0, 10000), ints(0)),
                       "memory_mb": (of(64, 512), ints(1, 10**9)), "processes": (of(1, 64), ints(1))}),
    "rating": section({"mu": (of(0.001, 25, 25.5), numbers(0)), "draw_probability": (of(0.01, 0.99), numbers(0, 1))}),
    "sandbox": (of("process", "docker"), of("bwrap", None, 1)),
    "workers": (of(1, 256), ints(1, 256)),
    "retries": (of(0, 10), ints(0, 10)),
    "cluster": (of(None, "local:2", "local:010", "local:256", "tcp://head:8786", "tls://[::1]:1"),
                of("local:257", "local:0", "local:0001", "http://head:1", "local:2\n", "tcp://head", 2)),
}
REUSE = (of(True, False, {}, {"matches": 2}, {"matches": 1000, "memory_fraction": 0.1}, {"memory_fraction": 1}),
         st.one_of(of({"matches": 1}, {"matches": 1001}, {"matches": 2.0}, {"memory_fraction": 0.05},
                      {"memory_fraction": 1.5}, {"memory_fraction": True}, {"lanes": 2}, "yes"), JUNK))
TOURNAMENT = document(SHARED | {
    "bots": (VALID_BOTS, ANY_BOTS),
    "repeats": (of(1, 10000), ints(1, 10000)),
    "format": (of("round-robin"), of("swiss", None)),
    "deals": (of("duplicate", "independent"), of("random", None)),
    "registry": (of(None, "reg", {"dir": "reg", "versions": "all"}, {}),
                 of("", {"versions": "some"}, {"dir": ""}, {"place": "x"}, 3)),
    "stop": section({"max_matches": (of(6, 10**7), ints(1, 6, 10**7)), "confidence": (of(0.51, 0.95), numbers(0.5, 1)),
                     "margin": (of(0.01, 0.49), numbers(0, 0.5))}, ("max_matches",)),
    "reuse": REUSE,
}, ("name", "bots", "players"))
LEAGUE = document({
    "league": section(SHARED | {
        "bots": (st.one_of(VALID_BOTS, of(["registry:*"], ["registry:*", "sample:greedy"])),
                 st.one_of(ANY_BOTS, of(["registry:*", "registry:*"], ["sample:greedy", "sample:greedy"]))),
        "versions": (of("latest", "all"), of("some", None)), "registry": (of(None, "reg"), of("", 3)),
        "groups_per_batch": (of(1, 1000), ints(1, 1000)), "keep_stderr": (of(1, 1000000), ints(1, 1000000)),
        "throttle": (of(True, False), JUNK), "reuse": REUSE}, ("name", "bots", "players")),
    "server": section({
        "uploads_per_hour": (of(1, 10, 100000), ints(1, 100, 100000)),
        "attempts_per_hour": (of(60, 100000), ints(1, 60, 100000)),
        "max_upload_kb": (of(1, 1 << 20), ints(1, 1 << 20)), "build_seconds": (of(1, 60.5, 3600), numbers(1, 3600)),
        "check_sandbox": (of("process", "docker"), of("none", None)),
        "header_timeout_s": (of(1, 600), numbers(1, 600)), "max_connections": (of(8, 100000), ints(8, 100000))}),
}, ("league",))
COMMAND = (of("python3 bot.py", "./bot", ["./bot"], ["./bot", ""]),
           st.one_of(of("  ", "''", "python3 'bot.py", [""], [], ["./bot", 3]), JUNK))
BOT = document({"name": NAME, "command": COMMAND, "build": (st.one_of(st.none(), COMMAND[0]), COMMAND[1]),
                "language": (of("rust", None), of(3, ["rust"])), "author": (of("me", None), of(["me"], 1))},
               ("name", "command"))


def unresolvable(entries: list[str], base: Path) -> bool:
    """A bot entry that names no bot (not registry:), or two entries naming one bot."""
    found: list[Path] = []
    for entry in entries:
        if entry.startswith("registry:"):
            continue
        try:
            path = sample_bot(entry) or (base / entry).resolve()
        except NoSuchSample:
            return True
        if not path.is_dir() or path in found:
            return True
        found.append(path)
    return False


def ungrantable_limits(section: dict[str, Any]) -> bool:
    limits = section.get("limits") or {}
    return bool(ungrantable(SandboxLimits(**{k: v for k, v in limits.items() if k not in LIMIT_TIMES}),
                            section.get("sandbox", "process")))


def tournament_exceptions(data: dict[str, Any], base: Path) -> list[str]:
    found = []
    if unresolvable(data["bots"], base):
        found.append("a bot entry names no bot, or one bot twice")
    elif data["players"] > len(data["bots"]):
        found.append("players is more than the bots")
    elif "stop" in data and data["stop"]["max_matches"] < len(
            make_schedule(len(data["bots"]), data["players"], 1, 0, data.get("deals", "duplicate"))):
        found.append("stop.max_matches holds less than a round")
    if ungrantable_limits(data):
        found.append("a limit this host cannot grant")
    return found


def league_exceptions(data: dict[str, Any], base: Path) -> list[str]:
    found = []
    if unresolvable(data["league"]["bots"], base):
        found.append("a house bot names no bot, or two entries one bot")
    if ungrantable_limits(data["league"]):
        found.append("a limit this host cannot grant")
    server = data.get("server") or {}
    if server.get("attempts_per_hour", 100000) < server.get("uploads_per_hour", 10):
        found.append("attempts_per_hour is below uploads_per_hour")
    return found


def bot_exceptions(data: dict[str, Any], base: Path) -> list[str]:
    def splits(value: Any) -> bool:
        if not isinstance(value, str):
            return True
        try:
            parts = shlex.split(value)
        except ValueError:
            return False
        return bool(parts and parts[0])
    return [] if splits(data["command"]) and splits(data.get("build")) else ["a command that does not split"]


def agree(kind: str, data: Any, accepted: Callable[[Path], bool],
          exceptions: Callable[[dict[str, Any], Path], list[str]]) -> None:
    """The validator accepts ``data`` exactly when the schema does and no named exception applies."""
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        by_schema = schema_accepts(kind, data)
        expected = by_schema and not exceptions(data, base)
        assert accepted(base) == expected, (data, by_schema, list(SCHEMAS[kind].iter_errors(data))[:3])


def tournament_accepted(data: Any) -> Callable[[Path], bool]:
    def accepted(base: Path) -> bool:
        try:
            parse_config(data, base / "t.yaml", base / "bots")
        except ConfigError:
            return False
        return True
    return accepted


@FUZZ
@given(TOURNAMENT)
def test_the_tournament_schema_accepts_what_the_validator_accepts(data: Any) -> None:
    agree("tournament", data, tournament_accepted(data), tournament_exceptions)


@FUZZ
@given(LEAGUE)
def test_the_league_schema_accepts_what_the_validator_accepts(data: Any) -> None:
    def accepted(base: Path) -> bool:
        (base / "league.yaml").write_text(json.dumps(data))  # JSON is YAML
        try:
            load_serve_config(base / "league.yaml", base / "bots")
        except ConfigError:
            return False
        return True
    agree("league", data, accepted, league_exceptions)


@FUZZ
@given(BOT)
def test_the_bot_schema_accepts_what_the_manifest_reader_accepts(data: Any) -> None:
    def accepted(base: Path) -> bool:
        (base / "bot.yaml").write_text(json.dumps(data))
        try:
            load_bot(base)
        except ManifestError:
            return False
        return True
    agree("bot", data, accepted, bot_exceptions)


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf"])
def test_nan_and_infinity_are_refused_where_json_has_none(tmp_path: Path, value: str) -> None:
    config = tmp_path / "t.yaml"
    config.write_text(f"name: t\nbots: [sample:greedy, sample:random]\nplayers: 2\nrating: {{mu: {value}}}\n"
                      f"stop: {{max_matches: 10, margin: {value}}}\n")
    with pytest.raises(ConfigError) as refused:
        load_config(config)
    assert "rating.mu: expected a positive number" in str(refused.value)
    assert "stop.margin" in str(refused.value)


def test_a_falsy_section_is_an_error_not_the_defaults(tmp_path: Path) -> None:
    for section in ("rules: 0", "limits: false", "rating: ''"):
        with pytest.raises(ConfigError, match=section.split(":")[0] + ": expected"):
            parse_config(yaml.safe_load(f"name: t\nbots: [sample:greedy, sample:random]\nplayers: 2\n{section}\n"),
                         tmp_path / "t.yaml")

