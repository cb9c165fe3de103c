"""One error contract for every command (issue 40): an error is one ``arena: ...`` line on stderr, or under ``--json``
one JSON object on stdout (the message, the exit code, the file and the field it names) and nothing on stderr; the
exit code is the same either way. Also ``NO_COLOR``, ``arena -q`` and shell completion.

In process, through click's runner with the streams apart, on the real root group: each case costs milliseconds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from arena.cli.common import EMITTED_KEY, JSON_KEY, CommandError, ExitCode
from arena.cli.main import error_object, main, report

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Case:
    """An error path: the arguments (``{tmp}`` is the test's directory), the files it needs, the exit code, a piece
    of the message, and the file and field the JSON object names."""

    args: tuple[str, ...]
    code: int
    needle: str
    file: str | None = None
    field: str | None = None
    files: tuple[tuple[str, str], ...] = ()
    blocked: tuple[str, ...] = ()
    """Modules that cannot be imported, as on a host without the extra that brings them."""
    usage: bool = False
    """A usage error: click's usage line and hint above the error, without --json."""


BAD_CONFIG = "name: Bad Name\nbots: [sample:greedy, sample:random]\nplayers: 2\n"
CASES = {
    "missing store": Case(("standings", "--db", "{tmp}/none.db"), 2, "no results store here yet", "{tmp}/none.db"),
    "missing store of a league": Case(("league", "status", "--db", "{tmp}/none.db"), 2, "no results store",
                                      "{tmp}/none.db"),
    "damaged store": Case(("matches", "--db", "{tmp}/junk.db"), 2, "not a usable arena store", "{tmp}/junk.db",
                          files=(("junk.db", "this is not SQLite" * 100),)),
    "missing config": Case(("run", "{tmp}/none.yaml"), 2, "no such config file", "{tmp}/none.yaml"),
    "bad config": Case(("run", "{tmp}/bad.yaml", "--dry-run"), 2, "expected a slug", "{tmp}/bad.yaml", "name",
                       files=(("bad.yaml", BAD_CONFIG),)),
    "a key twice": Case(("run", "{tmp}/twice.yaml", "--dry-run"), 2, "'players' is given twice", "{tmp}/twice.yaml",
                        files=(("twice.yaml", "name: t\nplayers: 2\nplayers: 3\n"),)),
    "unknown sample": Case(("match", "sample:nosuch", "sample:greedy"), 2, "no such sample bot"),
    "a person's missing opponent": Case(("play", "{tmp}/nobot", "--db", "{tmp}/p.db"), 2, "not a directory",
                                        "{tmp}/nobot"),
    "a seat past the table": Case(("play", "sample:greedy", "--seat", "3", "--db", "{tmp}/p.db"), 2,
                                  "--seat: expected 0 to 1", usage=True),
    "missing log": Case(("replay", "{tmp}/none.jsonl.gz"), 2, "none.jsonl.gz", "{tmp}/none.jsonl.gz"),
    "a bad A/B option": Case(("test", str(ROOT / "sample_bots" / "greedy"), str(ROOT / "sample_bots" / "random"), "--db", "{tmp}/a.db", "--players", "3",
                              "--no-site"), 2, "--players: 3 seats"),
    "missing server extra": Case(("serve", "{tmp}/league.yaml"), 2, "pip install 'least-score-arena[server]'",
                                 files=(("league.yaml", "league: {name: l}\n"),), blocked=("uvicorn",)),
    "missing cluster extra": Case(("run", "{tmp}/t.yaml", "--cluster", "local:2"), 2,
                                  "pip install 'least-score-arena[cluster]'", files=(("t.yaml", BAD_CONFIG),),
                                  blocked=("distributed",)),
    "server URL without a scheme": Case(("submit", str(ROOT / "sample_bots" / "greedy"), "--server", "example.org",
                                         "--token", "t"), 2, "starting with http://"),
    "unknown option": Case(("standings", "--bogus"), 2, "No such option", usage=True),
    "unknown command": Case(("nosuch",), 2, "No such command", usage=True),
}


@pytest.fixture
def blocked(monkeypatch: pytest.MonkeyPatch) -> Callable[[tuple[str, ...]], None]:
    def block(modules: tuple[str, ...]) -> None:
        for module in modules:
            for loaded in [name for name in sys.modules if name == module or name.startswith(module + ".")]:
                monkeypatch.delitem(sys.modules, loaded)
            monkeypatch.setitem(sys.modules, module, None)  # import raises ModuleNotFoundError, as when not installed
    return block


def run_case(case: Case, tmp_path: Path, as_json: bool, block: Callable[[tuple[str, ...]], None],
             env: dict[str, str] | None = None) -> Result:
    for name, text in case.files:
        (tmp_path / name).write_text(text)
    block(case.blocked)
    args = [arg.replace("{tmp}", str(tmp_path)) for arg in case.args]
    old = Path.cwd()
    os.chdir(tmp_path)  # nothing a failed command leaves (a results/ directory) lands in the checkout
    try:
        return CliRunner().invoke(main, [*args, *(["--json"] if as_json else [])], env=env, catch_exceptions=False)
    finally:
        os.chdir(old)


@pytest.mark.parametrize("name", CASES)
def test_an_error_is_one_line_or_one_json_object_with_its_exit_code(
        name: str, tmp_path: Path, blocked: Callable[[tuple[str, ...]], None]) -> None:
    case = CASES[name]
    text = run_case(case, tmp_path, False, blocked)
    assert text.exit_code == case.code, (text.stdout, text.stderr)
    assert text.stdout == "" and case.needle in text.stderr and "Traceback" not in text.stderr, text.stderr
    if not case.usage:
        assert len(text.stderr.strip().splitlines()) == 1 and text.stderr.startswith("arena: "), text.stderr

    found = run_case(case, tmp_path, True, blocked)
    assert found.exit_code == case.code and found.stderr == "", (found.stdout, found.stderr)
    error = json.loads(found.stdout)
    file = None if case.file is None else case.file.replace("{tmp}", str(tmp_path))
    assert error == {"error": error["error"], "exit_code": case.code, "file": file, "field": case.field}, error
    assert case.needle in error["error"]


def test_an_error_after_the_json_product_goes_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    """``arena run --json`` prints its standings, then fails for an interrupted run: stdout stays one document."""
    ctx = click.Context(main)
    ctx.meta.update({JSON_KEY: True, EMITTED_KEY: True})
    with ctx, pytest.raises(click.exceptions.Exit) as exited:
        report(ctx, CommandError("interrupted: finished matches are stored", ExitCode.FAILED))
    assert exited.value.exit_code == 1
    assert capsys.readouterr() == ("", "arena: interrupted: finished matches are stored\n")
    del ctx.meta[EMITTED_KEY]
    with ctx, pytest.raises(click.exceptions.Exit):
        report(ctx, CommandError("interrupted", ExitCode.FAILED))
    assert json.loads(capsys.readouterr().out)["exit_code"] == 1


def test_the_file_and_field_are_read_only_from_a_leading_path() -> None:
    assert error_object("t.yaml: limits.move_ms: expected a positive integer", 2)["field"] == "limits.move_ms"
    assert error_object("bot/bot.yaml: field name: expected a slug", 2) | {"error": ""} == \
        {"error": "", "exit_code": 2, "file": "bot/bot.yaml", "field": "name"}
    assert error_object("--players: 3 seats need 1 --opponents", 2)["file"] is None
    assert error_object("interrupted", 1)["file"] is None


@pytest.fixture
def colour_case(tmp_path: Path) -> Iterator[list[str]]:
    yield ["standings", "--db", str(tmp_path / "none.db")]


def test_colour_on_a_terminal_unless_no_color(colour_case: list[str]) -> None:
    coloured = CliRunner().invoke(main, colour_case, color=True)
    assert coloured.exit_code == 2 and "\x1b[31m" in coloured.stderr
    plain = CliRunner().invoke(main, colour_case, color=True, env={"NO_COLOR": "1"})
    assert plain.exit_code == 2 and "\x1b[" not in plain.stderr and plain.stderr.startswith("arena: ")


def test_quiet_drops_info_lines_not_errors(tmp_path: Path) -> None:
    registry = ["bots", "--registry", str(tmp_path / "empty")]
    assert "no bots yet" in CliRunner().invoke(main, registry).stderr
    quiet = CliRunner().invoke(main, ["-q", *registry])
    assert quiet.exit_code == 0 and quiet.stderr == ""
    error = CliRunner().invoke(main, ["-q", "standings", "--db", str(tmp_path / "none.db")])
    assert error.exit_code == 2 and "no results store" in error.stderr
    both = CliRunner().invoke(main, ["-q", "-v", *registry])
    assert both.exit_code == 2 and "-q and -v cannot go together" in both.stderr


def test_shell_completion_completes_commands() -> None:
    """What docs/CLI.md says to put in ~/.bashrc, and a completion it then gives."""
    env = {**os.environ, "_ARENA_COMPLETE": "bash_complete", "COMP_WORDS": "arena stan", "COMP_CWORD": "1"}
    done = subprocess.run([sys.executable, "-c", "from arena.cli.main import main; main(prog_name='arena')"],
                          env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0 and "plain,standings" in done.stdout.split(), done.stdout + done.stderr
