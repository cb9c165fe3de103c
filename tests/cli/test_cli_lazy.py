"""The ``arena`` command loads a command's modules only when that command runs: ``arena --help`` and ``arena
standings`` start without the referee, the site, the server, Dask, docker, jinja2 or mpmath (bench/cli.py times
them), ``arena run --no-site`` without the site or the A/B test (bench/limit.py weighs its start), and the lazily
listed commands are the real ones with their real short help."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import click

from arena.cli import abtest as cli_abtest
from arena.cli import bots as cli_bots
from arena.cli import server as cli_server
from arena.cli.main import COMMANDS, main
from tests.samplebots import SAMPLE_BOTS
from tests.sitestore import make_store

SITE_AND_TESTS = ("arena.site.build", "arena.site.html", "arena.cli.site", "arena.cli.abtest", "arena.run.abtest",
                  "jinja2", "http.server")
"""What ``arena run --no-site`` has no use for: the site's builder and templates, ``arena site serve``'s server and
``arena match --games``' A/B runner (the site's alone about 65 ms of CPU)."""
HEAVY = ("arena.match.referee", "arena.run", "arena.site", "arena.server", "arena.sandbox", "arena.match.matchlog", "dask",
         "distributed", "docker", "jinja2", "mpmath", "starlette", "yaml")
"""Modules neither command needs; each costs tens of milliseconds or more to import."""

RUN_AND_LIST = """
import json, sys
from arena.cli.main import main
try:
    main(sys.argv[1:], prog_name="arena")
except SystemExit as exit:
    print(json.dumps({"code": exit.code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def loaded_by(arguments: list[str], cwd: Path) -> tuple[str, list[str]]:
    done = subprocess.run([sys.executable, "-c", RUN_AND_LIST, *arguments], cwd=cwd, capture_output=True, text=True,
                          timeout=120, check=False)
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["code"] in (0, None), done.stderr
    return done.stdout, report["modules"]


def heavy_in(modules: list[str], heavy: tuple[str, ...] = HEAVY) -> list[str]:
    return [name for name in modules if any(name == one or name.startswith(one + ".") for one in heavy)]


def test_help_and_standings_load_none_of_the_heavy_modules(tmp_path: Path) -> None:
    make_store(tmp_path)
    shown, modules = loaded_by(["--help"], tmp_path)
    assert all(name in shown for name in COMMANDS)
    assert heavy_in(modules) == []
    table, modules = loaded_by(["standings", "t", "--db", "arena.db"], tmp_path)
    assert "gamma" in table and "P>next" in table
    assert heavy_in(modules) == []
    assert "arena.store" in modules  # the check sees what the command loaded: it is not vacuous


def test_the_listed_commands_are_the_real_ones_with_their_own_short_help() -> None:
    registered = {name: getattr(importlib.import_module(module), attribute)
                  for name, (module, attribute, _) in COMMANDS.items()}
    for name, command in registered.items():
        assert isinstance(command, click.Command) and command.name == name
        listed = click.Command(name, help=COMMANDS[name][2]).get_short_help_str(10**6)
        assert listed == command.get_short_help_str(10**6), f"{name}: COMMANDS holds a stale short help"
    every = {*cli_bots.COMMANDS, *cli_server.COMMANDS, *cli_abtest.COMMANDS}
    assert every <= set(registered.values())
    assert main.get_command(click.Context(main), "no-such-command") is None


def test_a_run_without_a_site_loads_neither_the_site_nor_the_ab_test(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)  # the sandbox runs the bots as users of their own
    bots = ", ".join(str(SAMPLE_BOTS / name) for name in ("random", "greedy"))
    config = tmp_path / "t.yaml"
    config.write_text(f"name: t\nbots: [{bots}]\nplayers: 2\nrepeats: 1\nsandbox: process\nworkers: 1\n")
    shown, modules = loaded_by(["run", str(config), "--db", "arena.db", "--no-site", "--json"], tmp_path)
    assert json.loads(shown)["played"] == 2  # a real run: the pool, the store, the rating and the standings
    assert heavy_in(modules, SITE_AND_TESTS) == []
    assert "arena.run.loop" in modules and "arena.site.live" in modules  # what it needs is there: not vacuous
