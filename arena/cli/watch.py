"""`arena watch`: follow a match while it is played, move by move, as a spectator sees it (issue 43).

It reads the match's live feed beside its log (arena/match/livefeed.py), which ``arena run --live`` and a league
write: what every player at the table was told, no hand and no card drawn from the deck.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from arena.cli.common import ExitCode, db_option, fail, json_option, open_store
from arena.cli.results import find_tournament
from arena.match.livefeed import feed_path, follow, in_play, read_feed
from arena.match.matchlog import log_dir_for, log_path_for
from arena.match.spectator import public_line


@click.command()
@click.argument("name", required=False)
@db_option()
@click.option("--match", "index", type=click.IntRange(0), metavar="N",
              help="The match to follow, by its place in the schedule (default: the first in play).")
@click.option("--wait", type=click.FloatRange(0, 3600), default=30.0, show_default=True, metavar="SECONDS",
              help="How long to wait for the match to be in play.")
@json_option("Print each move as a line of JSON (its public event) instead of words.")
def watch(name: str | None, db_path: Path, index: int | None, wait: float, as_json: bool) -> None:
    """Follow a match of tournament NAME (default: the latest) while it is played, by arena run --live or a league:
    each move as the players were told it, until the match ends."""
    store = open_store(db_path)
    try:
        tournament = str(find_tournament(store, name)["name"])
    finally:
        store.close()
    log_dir = log_dir_for(db_path.parent, tournament)
    deadline = time.monotonic() + wait
    while (path := found_feed(log_dir, index)) is None:
        if time.monotonic() >= deadline:
            which = "no match" if index is None else f"match {index}"
            fail(f"{log_dir}: {which} of {tournament} in play after {wait:g} s (is it run with --live?)",
                 ExitCode.FAILED)
        time.sleep(0.2)
    if not as_json:
        click.echo(f"{tournament}, match {int(path.name.split('.', 1)[0])} (its place in the schedule):")
    over = False
    for found in follow(path):
        for event in found.events:
            click.echo(json.dumps(event) if as_json else public_line(event, found.names))
        over = found.over
    if not over:
        fail(f"{path}: the match stopped before its end (the run was stopped; it will be played again)",
             ExitCode.FAILED)


def found_feed(log_dir: Path, index: int | None) -> Path | None:
    """The feed of match ``index`` (default: the first in play) if it can be read (in play, or just ended)."""
    if index is None:
        playing = in_play(log_dir)
        if not playing:
            return None
        index = playing[0]
    path = feed_path(log_path_for(log_dir, index))
    return path if read_feed(path) is not None else None
