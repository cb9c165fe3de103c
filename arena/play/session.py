"""A match with a person in one seat, and its record in the store.

The match is refereed as any other (:func:`arena.match.referee.play_match`): the bots run in the sandbox with
their own limits; the person's seat has a clock of its own, longer than a bot's and told to them in ``hello``. The
finished match is stored as the next match of a ``play`` run of the store (one per table size and rules, e.g.
``play-3p``), so that ``arena show``, ``arena replay``, ``arena standings`` and the site find it as they find a
tournament's; the person's seat is the bot whose ``language`` is ``person``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

from arena.bots.manifest import BotSpec
from arena.game.results import MatchResult
from arena.game.rules import Rules
from arena.match.protocol import Limits
from arena.match.referee import play_match
from arena.play.seat import Player, SeatedSandbox, person_spec
from arena.sandbox import Sandbox, SandboxLimits
from arena.schedule import ScheduledMatch
from arena.stats.ratings import RatingConfig
from arena.store import Store

PLAY_RUN = "play"
"""How the runs that hold the matches people played (``arena play``) are named: one group per match."""
PERSON_LIMITS = Limits(hello_ms=10_000, move_ms=60_000, bank_ms=300_000)
"""A person's clock by default: a minute a move, and five more in the bank for the hard ones."""


def seat_person(bots: Sequence[BotSpec], person: str, seat: int) -> list[BotSpec]:
    """The match's seats: ``bots`` in order, with the person at ``seat`` (0 to len(bots))."""
    if not 0 <= seat <= len(bots):
        raise ValueError(f"--seat: expected 0 to {len(bots)} with {len(bots)} bots, got {seat}")
    seats = list(bots)
    seats.insert(seat, person_spec(person))
    return seats


def play_with_person(seats: Sequence[BotSpec], seat: int, player: Player, seed: int, sandbox: Sandbox,
                     rules: Rules = Rules(), limits: Limits = Limits(), person_limits: Limits = PERSON_LIMITS,
                     log_path: Path | None = None, sandbox_limits: SandboxLimits = SandboxLimits()) -> MatchResult:
    """Play one match of ``seats`` (:func:`seat_person`) with ``player`` at ``seat``: the bots under ``limits``
    in ``sandbox``, the person under ``person_limits``."""
    return play_match(seats, seed, SeatedSandbox(sandbox, {seat: player}), rules, limits, sandbox_limits, log_path,
                      seat_limits={seat: person_limits})


def run_name(players: int, rules: Rules) -> str:
    """The play run for a table of ``players`` under ``rules``: ``play-3p`` under the default rules, else with a
    short hash of the rules (``play-3p-1a2b3c4d``), so that each run's matches share their rules as a tournament's do.

    >>> run_name(3, Rules()), run_name(2, Rules(threshold=30)).startswith("play-2p-")
    ('play-3p', True)
    """
    if rules == Rules():
        return f"{PLAY_RUN}-{players}p"
    return f"{PLAY_RUN}-{players}p-{hashlib.sha256(json.dumps(rules.to_dict(), sort_keys=True).encode()).hexdigest()[:8]}"


def record(store: Store, seats: Sequence[BotSpec], result: MatchResult, rules: Rules, limits: Limits,
           sandbox: str) -> tuple[str, int]:
    """Store ``result`` as the next match of its play run (:func:`run_name`, made on first use): the run's name and
    the match's id."""
    name = run_name(len(seats), rules)
    run = store.tournament(name)
    if run is None:
        config = {"name": name, "kind": PLAY_RUN, "players": len(seats), "rules": rules.to_dict(),
                  "limits": limits.to_dict(), "sandbox": sandbox, "rating": dataclasses.asdict(RatingConfig())}
        tid = store.create_tournament(name, config, hashlib.sha256(json.dumps(config, sort_keys=True).encode())
                                      .hexdigest(), [], [])
    else:
        tid = run["id"]
    slots = {(row["name"], row["files_hash"]): row["slot"] for row in store.bots(tid)}
    for spec in seats:
        if (spec.name, spec.files_hash) not in slots:
            store.add_bot(tid, spec.to_dict())
            slots = {(row["name"], row["files_hash"]): row["slot"] for row in store.bots(tid)}
    index, group = store.schedule_end(tid)
    store.append_matches(tid, [ScheduledMatch(index, group, 0, result.seed,
                                              tuple(slots[spec.name, spec.files_hash] for spec in seats))])
    store.record_match(tid, index, result, attempts=1)
    return name, store.match_ids(tid, [index])[0]
