"""`arena play`: take a seat yourself against bots, in the terminal.

Imported only when it runs (arena/cli/main.py loads commands lazily).
"""

from __future__ import annotations

import contextlib
import secrets
import sys
import time
from pathlib import Path

import click

from arena.bots.manifest import BotSpec
from arena.cli.common import ExitCode, db_option, emit_json, fail, json_option, open_store, sandbox_choice
from arena.cli.play import BUILD_CACHE, load_rules, print_result
from arena.match.protocol import Limits
from arena.match.referee import InfrastructureError
from arena.play.coach import Coach
from arena.play.console import Console, Keys
from arena.play.seat import Player
from arena.play.session import PERSON_LIMITS, PLAY_RUN, play_with_person, record, seat_person
from arena.play.web import TableServer, WebTable
from arena.registry.build import BuildFailed
from arena.resources import NoSuchSample, sample_bot
from arena.run.plan import TournamentError, load_entrants
from arena.sandbox import SandboxError, get_sandbox

DEFAULT_OPPONENTS = ("sample:planner", "sample:greedy")
SHOW_END_S = 30
"""With --web, how long the table waits for the page to fetch the match's end before it closes."""


@click.command()
@click.argument("bots", nargs=-1, type=click.Path(file_okay=False, path_type=Path))
@click.option("--seat", type=click.IntRange(0, 7), default=0, show_default=True,
              help="Your seat: 0 moves first in round 1's draw order as any seat 0 would; bots fill the others in order.")
@click.option("--name", default="you", show_default=True, help="Your name at the table and in the store.")
@click.option("--seed", type=click.IntRange(0), help="Deal seed (default: a new secret one each match).")
@click.option("--threshold", type=int, help="Elimination threshold (shortcut for the rule option).")
@click.option("--rules", "rules_file", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="YAML file of rule options (see protocol/RULES.md).")
@click.option("--move-s", type=click.IntRange(1, 3600), default=PERSON_LIMITS.move_ms // 1000, show_default=True,
              help="Your time for each move, in seconds.")
@click.option("--bank-s", type=click.IntRange(0, 36_000), default=PERSON_LIMITS.bank_ms // 1000,
              show_default=True, help="Your time bank for the whole match, in seconds.")
@click.option("--sandbox", "sandbox_name", type=sandbox_choice(), default="process", show_default=True,
              help="Where the bots run: process (bubblewrap) or docker.")
@click.option("--web", is_flag=True, help="Play in the browser: a table served on http://127.0.0.1 (its address "
              "is printed), cards you click, the bots' moves appearing as they play.")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="With --web: the port on 127.0.0.1 (0: a free one).")
@click.option("--coach", "coach_bot", metavar="BOT", help="The bot the coach key asks what it would play in your "
              "place (c in the terminal, a button in the browser): an opponent's name, a directory or sample:NAME "
              "(default: the first opponent).")
@db_option("The results store the match is kept in (as a match of its 'play' run); its log goes beside it.")
@json_option("After the match, print its result as one JSON object instead of the table.")
def play(bots: tuple[Path, ...], seat: int, name: str, seed: int | None, threshold: int | None,
         rules_file: Path | None, move_s: int, bank_s: int, sandbox_name: str, web: bool, port: int,
         coach_bot: str | None, db_path: Path, as_json: bool) -> None:
    """Play a match yourself against BOTS (default: sample:planner sample:greedy; 1 to 7 bots: a directory or
    sample:NAME), with the same referee, rules and sandbox as any match. Each choice is one key: the legal throws
    are listed with theirs, d takes from the deck, ! declares, c asks the coach (--coach) what it would play, ?
    explains, q leaves. The bots keep their own time limits; yours is --move-s a move plus --bank-s in the bank. The match is stored: arena show, arena replay and
    the site find it."""
    given = bots or tuple(Path(opponent) for opponent in DEFAULT_OPPONENTS)
    if not 1 <= len(given) <= 7:
        raise click.UsageError(f"a match needs 1 to 7 bots beside you, got {len(given)}")
    if seat > len(given):
        raise click.UsageError(f"--seat: expected 0 to {len(given)} with {len(given)} bots, got {seat}")
    rules = load_rules(rules_file, threshold)
    try:
        specs = load_entrants([sample_bot(str(path)) or path for path in given], BUILD_CACHE)
        coach_spec = coach_choice(coach_bot, specs)
    except (NoSuchSample, TournamentError) as error:
        fail(str(error))
    except (BuildFailed, SandboxError) as error:
        fail(str(error), ExitCode.FAILED)
    store = open_store(db_path, must_exist=False)
    seats = seat_person(specs, name, seat)
    deal = secrets.randbits(63) if seed is None else seed  # a bot cannot learn a seed that was never shown
    log_path = db_path.parent / "logs" / PLAY_RUN / f"match-{time.strftime('%Y%m%d-%H%M%S')}-{deal:x}.jsonl.gz"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    player: Player
    server: TableServer | None = None
    keys: Keys | None = None
    try:
        sandbox = get_sandbox(sandbox_name)
    except SandboxError as error:
        fail(f"infrastructure error, match not played: {error}", ExitCode.FAILED)
    coach = Coach(coach_spec, sandbox)  # the match's bots' sandbox and limits (play_with_person's defaults)
    if web:
        player = WebTable(coach=coach)
        try:
            server = TableServer(player, port)
        except OSError as error:
            sandbox.close()
            fail(f"--port {port}: cannot listen on 127.0.0.1 ({error.strerror})")
        server.serve_in_background()
        click.echo(f"your table: {server.url}   (open it in a browser on this machine; Ctrl-C ends the match)",
                   err=as_json)
        sys.stdout.flush()
    else:
        keys = Keys(sys.stdin)
        player = Console(keys, sys.stderr if as_json else sys.stdout, coach=coach)
    try:
        with keys or contextlib.nullcontext():  # the terminal in cbreak mode for the match, given back after
            result = play_with_person(seats, seat, player, deal, sandbox, rules,
                                      person_limits=Limits(PERSON_LIMITS.hello_ms, move_s * 1000, bank_s * 1000),
                                      log_path=log_path)
    except (InfrastructureError, SandboxError) as error:
        fail(f"infrastructure error, match not played: {error}", ExitCode.FAILED)
    finally:
        sandbox.close()
    if server is not None:
        assert isinstance(player, WebTable)
        player.finish(result)
        server.seen_over.wait(SHOW_END_S)  # the page shows the match's end before the table closes
        server.shutdown()
    run, match_id = record(store, seats, result, rules, Limits(), sandbox_name)
    if as_json:
        emit_json(result.to_dict() | {"run": run, "match_id": match_id})
        return
    click.echo("")
    print_result(result)
    click.echo(f"stored as match {match_id} of {run} in {db_path}   (arena show {match_id}; arena standings {run}; "
               f"arena site build {run})")


def coach_choice(coach: str | None, opponents: list[BotSpec]) -> BotSpec:
    """The coach's bot: ``coach`` as an opponent's name, else loaded as a bot is (a directory or sample:NAME);
    the first opponent by default."""
    if coach is None:
        return opponents[0]
    for spec in opponents:
        if spec.name == coach:
            return spec
    (spec,) = load_entrants([sample_bot(coach) or Path(coach)], BUILD_CACHE)
    return spec
