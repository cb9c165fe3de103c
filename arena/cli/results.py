"""`arena standings`, `arena matches` and `arena show`: reading a results store.

They need the store and nothing that plays: `arena standings` must start fast (bench/cli.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from arena.cli.common import (
    db_option,
    emit_json,
    fail,
    json_option,
    open_store,
)
from arena.match.stderr import error_view
from arena.match.thinktime import Tally, by_seat, thoughts
from arena.stats.confidence import Confidence
from arena.stats.standings import Standing, shown_standings, standings_and_confidence, standings_with_confidence
from arena.stats.standings import standings as read_standings
from arena.store import Store, StoredMatch


def find_tournament(store: Store, name: str | None) -> Any:
    row = store.tournament(name) if name else store.latest_tournament()
    if row is None:
        known = ", ".join(t["name"] for t in store.tournaments()) or "none"
        fail(f"{store.path}: no tournament {name!r} (known: {known})" if name else f"{store.path}: no tournaments")
    return row


def print_standings(standings: list[Standing] | tuple[Standing, ...], sure: Confidence | None = None) -> None:
    """The standings table, ordered by the fitted strength (``fit``); with ``sure``, as arena/stats/display.py
    shows them: each rank as the 95% interval of ranks the bot could truly hold (``2-3``; ``2`` when settled;
    ``-`` not yet ranked) and P(above the next bot), after a note saying why bots are not ranked, if some are not."""
    whole = shown_standings(standings, sure) if sure else None
    view = whole.by_bot() if whole else {}
    if whole and whole.note:
        click.echo(f"not enough data: {whole.note}")
    extra = f" {'P>next':>6}" if sure else ""
    click.echo(f"{'rank':>7}  {'bot':<20} {'fit':>6} {'rating':>7} {'mu':>6} {'sigma':>6} {'matches':>7} {'wins':>5} "
               f"{'place':>5} {'pts/rd':>6} {'declares':>9}{extra}  faults")
    for rank, line in enumerate(standings, 1):
        faults = ", ".join(f"{kind} {count}" for kind, count in sorted(line.faults.items())) or "-"
        place = "-" if line.mean_place is None else f"{line.mean_place:.2f}"
        per_round = "-" if line.points_per_round is None else f"{line.points_per_round:.2f}"
        fitted = "-" if line.strength is None else f"{line.strength:.2f}"
        label = str(rank)
        if sure:
            seen = view[line.bot_id]
            label = seen.rank
            extra = f" {seen.p_text:>6}"
        name = line.name if line.active else f"{line.name} (left)"  # a league's version out of the field
        rating = (f"{line.rating.conservative:>7.2f} {line.rating.mu:>6.2f} {line.rating.sigma:>6.2f}" if line.rated
                  else f"{'-':>7} {'-':>6} {'-':>6}")  # not yet rated: no prior shown as if it were a rating
        click.echo(f"{label:>7}  {name:<20} {fitted:>6} {rating} "
                   f"{line.matches:>7} {line.wins:>5} {place:>5} "
                   f"{per_round:>6} {line.declares_ok:>4}/{line.declares_failed:<4}{extra}  {faults}")


@click.command()
@click.argument("name", required=False)
@db_option()
@json_option()
def standings(name: str | None, db_path: Path, as_json: bool) -> None:
    """The standings of tournament NAME (default: the latest), strongest first by a Plackett-Luce fit of every
    match's places, each bot's rank shown as the 95% interval of the ranks it could truly hold (docs/RATINGS.md)."""
    store = open_store(db_path)
    row = find_tournament(store, name)
    table, sure = standings_and_confidence(store, row["id"])
    if as_json:
        view = shown_standings(table, sure)
        emit_json({"tournament": row["name"], "note": view.note,
                   "standings": standings_with_confidence(table, sure, view)})
    else:
        click.echo(f"{row['name']}" + ("" if row["finished_at"] else " (not finished)"))
        print_standings(table, sure)


@click.command()
@click.argument("name", required=False)
@click.option("--bot", help="Only the matches this bot played.")
@db_option()
@json_option()
def matches(name: str | None, bot: str | None, db_path: Path, as_json: bool) -> None:
    """The matches of tournament NAME (default: the latest)."""
    store = open_store(db_path)
    row = find_tournament(store, name)
    found = store.match_list(row["id"], bot)
    if bot is not None and not found and not any(s.name == bot for s in read_standings(store, row["id"])):
        fail(f"tournament {row['name']} has no bot called {bot!r} (arena standings {row['name']} lists them)")
    if as_json:
        emit_json({"tournament": row["name"], "matches": found})
        return
    click.echo(f"{'id':>6} {'sched':>5} {'status':<7} {'rounds':>6}  places")
    for match_ in found:
        seated = "  ".join(f"{p['place'] or '-'}.{p['bot']}" + (f"({p['fault']})" if p["fault"] else "")
                           for p in sorted(match_["players"], key=lambda p: (p["place"] or 99, p["seat"])))
        click.echo(f"{match_['id']:>6} {match_['index']:>5} {match_['status']:<7} {match_['rounds'] or '-':>6}  "
                   f"{seated}")


@click.command()
@click.argument("match_id", type=int)
@db_option()
@json_option()
def show(match_id: int, db_path: Path, as_json: bool) -> None:
    """One match: places, scores, faults with details, the bots' stderr, and the replay command.

    Of what a bot wrote on stderr, the text shows its first error and its last lines; --json has all that was
    kept. MATCH_ID is the number of the match's page
    on the site (matches/MATCH_ID.html) and of arena matches' id column."""
    store = open_store(db_path)
    match_ = store.match(match_id)
    if match_ is None:
        fail(f"{db_path}: no match with id {match_id} (see arena matches)")
    think = match_think(store, match_)
    if as_json:
        emit_json(match_.to_dict(stderr=True) | {"think": None if think is None else [t.to_dict() for t in think]})
        return
    result = match_.result
    # "#N" is the match's number everywhere (the site's Match #N, arena matches' id): the schedule's place is
    # spelt out, so that no second number reads like it.
    # The seed only once its group is over (docs/SECURITY.md): until then it would give the hands still to play.
    seed = "seed withheld until its group is over" if match_.sealed else f"seed {match_.seed}"
    click.echo(f"match {match_.id} of {match_.tournament} (schedule #{match_.idx}, {seed}): {match_.status}"
               + ("" if result is None else f", {result.summary()}"))
    if match_.error:
        click.echo(f"infrastructure error: {match_.error}")
    if result is None:
        for seat, name in enumerate(match_.names):
            click.echo(f"  -. seat {seat} {name}")
        return
    for player in sorted(result.players, key=lambda p: (p.place, p.seat)):
        fault = player.fault
        click.echo(f"  {player.place}. seat {player.seat} {player.name:<20} score {player.score}"
                   + ("" if fault is None else f"  FAULT {fault.reason.value} in round {fault.round}: {fault.detail}"))
        if fault is not None and fault.line is not None:
            click.echo(f"     the line it sent: {fault.line!r}")
        print_stderr(player.stderr_tail, "     ")
        if think is not None and player.seat < len(think):
            print_think(think[player.seat], "     ")
    if result.log_path is not None:
        click.echo(f"replay: arena replay {result.log_path}")


def match_think(store: Store, match_: StoredMatch) -> list[Tally] | None:
    """Each seat's think times, from the match's log; None without a readable log."""
    from arena.match.matchlog import LogError, find_log, load  # the log reader only for the match shown

    stored = None if match_.result is None else match_.result.log_path
    path = find_log(stored, store.path.parent, match_.tournament, match_.idx)
    if path is None:
        return None
    try:
        log = load(path)
    except LogError:
        return None
    return by_seat(thoughts(log.text, log.events), len(match_.names), match_.id)


def print_think(tally: Tally, indent: str) -> None:
    """A seat's think times in a line: mean, p95 and max, the move closest to the limit and the least bank left,
    each move by its step in the replay (the match page's ``#step=N``)."""
    if not tally.moves and not tally.unanswered:
        return
    mean, closest, low = tally.mean_ms(), tally.closest, tally.least_bank
    line = (f"{indent}think: {tally.moves} moves, mean {mean or 0:.1f} ms, p95 {tally.percentile_ms(0.95)} ms, "
            f"max {tally.max_ms()} ms")
    if closest is not None:
        line += f"; closest to the limit: step {closest.step}, {closest.think_ms} of {closest.budget_ms} ms"
    if low is not None:
        line += f"; least bank left: {low.bank_left_ms} ms (step {low.step})"
    if tally.unanswered:
        line += f"; turns not answered: {tally.unanswered}"
    click.echo(line)


def print_stderr(text: str, indent: str) -> None:
    """What a bot wrote on stderr, as a terminal shows it: its first error and its last lines."""
    if text.strip():
        click.echo(f"{indent}stderr:")
        for line in error_view(text).splitlines():
            click.echo(f"{indent}  {line}")
