"""A match's page: its players, its narration and move list (:mod:`arena.site.replay`, from the match's view)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from arena.game.narrate import narrate
from arena.game.results import Fault, SeatResult, Termination
from arena.game.rules import Rules
from arena.match.matchlog import LoadedLog
from arena.match.matchview import MatchView
from arena.match.stderr import debug_by_step
from arena.match.thinktime import Tally
from arena.site.common import tournament_crumbs, view_for
from arena.site.pages.listings import listing_page
from arena.site.replay import FOLD_LINES, MoveBlock, card_text, fold_line, move_blocks
from arena.site.snapshot import Snapshot, out_round, seated
from arena.site.urls import Crumb, match_data_href, match_href, match_log_href, matches_href, tournament_href


@dataclass(frozen=True)
class MatchPlayer:
    """A seat on a match page: its bot, the link to the bot's page, and its result once the match is done."""

    seat: int
    bot: str
    href: str
    result: SeatResult | None
    out_round: int | None = None
    """The round it went out over the threshold, when its place was decided by elimination."""


@dataclass(frozen=True)
class MatchPage:
    tournament: str
    idx: int
    id: int
    seed: int | None
    """None while the match's group is sealed."""
    status: str
    rounds: int | None
    turns: int | None
    termination: Termination | None
    duration_s: float | None
    error: str | None
    threshold: int
    """The score above which a player is out."""
    players: list[MatchPlayer]
    """In seat order."""
    standings: list[MatchPlayer]
    """Best place first."""
    moves: list[MoveBlock]
    """The move list, a block per round (and one each for the match's start and end)."""
    replay_data: str | None
    """What replay.js steps through, as the JSON of the match's data file: the names and the engine events in
    the compact form of :func:`arena.site.replay.compact_events`. None without a log."""
    log_path: str | None
    log_found: bool
    prev_href: str | None
    next_href: str | None
    rules_href: str
    """The tournament page's rules and limits."""
    how_href: str
    """The tournament page's "how Least Score works" (kept there, not repeated on thousands of match pages)."""
    crumbs: tuple[Crumb, ...]
    log_corrupt: bool = False
    """The log is there but cannot be read (cut off, garbled): the page says so rather than "missing"."""
    data_href: str | None = None
    """The match's data file (:func:`match_data_href`), when it has a replay."""
    vs: str = ""
    """The players in seat order, ``a v b v c``: in the page's title and heading."""
    fault_steps: dict[int, int] = field(default_factory=dict)
    """By seat, the replay step (1-based) of each forfeit the log holds."""
    think: tuple[Tally, ...] = ()
    """Each seat's think times (from the log; empty without one)."""
    log_href: str | None = None
    """The match's event log in the site (:func:`match_log_href`), when it has one."""
    sealed: bool = False
    """Its group can still be played: no seed, replay or log until it is over (docs/SECURITY.md)."""

    @property
    def summary(self) -> str:
        """The places in a line, best first (``1. a, 2. b, –. c``), for the page's description. Here rather than as
        a template loop: that loop's ``loop.last`` was a sixth of a match page's rendering."""
        return ", ".join(f"{'–' if p.result is None else p.result.place}. {p.bot}" for p in self.standings)

    @property
    def forfeits(self) -> bool:
        """Whether a seat forfeited (the result's caption then gives rule 8.6)."""
        return any(p.result is not None and p.result.fault is not None for p in self.players)

    @property
    def faulty(self) -> list[MatchPlayer]:
        """The seats that faulted, in seat order (a section each). Here rather than as a chain of the template's
        filters: that chain was a tenth of a match page's rendering, on every one of a league's 100,000."""
        return [p for p in self.players if p.result is not None and p.result.fault is not None]

    @property
    def talkers(self) -> list[MatchPlayer]:
        """The seats without a fault that wrote on stderr, in seat order."""
        return [p for p in self.players if p.result is not None and p.result.fault is None and p.result.stderr_tail]


def match_page(snap: Snapshot, position: int, log: LoadedLog | MatchView | None, corrupt: bool = False) -> MatchPage:
    """The page of ``snap.matches[position]``; ``log`` is its view as :func:`match_view` returns it (or its log
    as :func:`match_log` does), if found (``corrupt``: found, but unreadable)."""
    match = snap.matches[position]
    players = [MatchPlayer(seat, *snap.bot_link(bot_id), result, out_round(match, result))
               for seat, bot_id, result in seated(match)]
    names = [p.bot for p in players]
    view = view_for(log, names)
    replay_data = None
    faults: dict[int, Fault] = {}
    if match.result is not None:
        faults = {p.seat: p.fault for p in match.result.players if p.fault is not None}
    elif view is not None:
        faults = view.faults
    # Only the events that are not turns are narrated: the page shows a grid for the turns, and their sentences
    # (which replay.js writes itself) were most of the narrator's work. The other sentences do not depend on the
    # hands the narrator follows through the turns it is not shown.
    # A deal and a round's end get a short line of the page's own (fold_line): replay.js composes the narrator's
    # longer sentence for their steps from the data file, which has their numbers anyway.
    # Narrated one at a time (a few a match): nothing the narrator says of these depends on the events before.
    def line(event: dict[str, Any]) -> str:
        if event.get("type") in FOLD_LINES:
            return fold_line(event, names)
        return narrate([event], names, faults, card_text, show_hands=False)[0].text

    moves: list[MoveBlock] = []
    if view is not None:
        moves = move_blocks(view.blocks, names, line)
        shown: dict[str, Any] = {"names": names, "events": view.events, "think": view.think,
                                 "bank": view.bank_ms, "move": view.move_ms}
        if view.debug and snap.matches.stderr:
            # What the bots wrote on stderr, beside the step it arrived during: on the organiser's own site only
            # (a league's public snapshot has no stderr; its authors read theirs under /me).
            # The match's last event (its end) is never a turn: the last step is the blocks' last index.
            last = max((index for block in view.blocks for index, _ in block.events), default=0)
            shown["debug"] = [[line.seat, step, line.text]
                              for step, lines in sorted(debug_by_step(view.debug, range(len(names)), last).items())
                              for line in lines]
        if faults:  # the replay's last step says why each forfeited seat left: the reason code and its round
            shown["faults"] = {str(seat): [fault.reason.value, fault.round] for seat, fault in faults.items()}
        replay_data = json.dumps(shown, ensure_ascii=False, separators=(",", ":"))
    result = match.result
    prev_m = snap.stamps[position - 1] if position > 0 else None
    next_m = snap.stamps[position + 1] if position + 1 < len(snap.stamps) else None
    return MatchPage(
        tournament=snap.name, idx=match.idx, id=match.id, seed=match.public_seed, sealed=match.sealed,
        status=match.status,
        rounds=None if result is None else result.rounds, turns=None if result is None else result.turns,
        termination=None if result is None else result.termination,
        duration_s=None if result is None else result.duration_s, error=match.error,
        threshold=result.rules.threshold if result is not None else
        int(snap.config.get("rules", {}).get("threshold", Rules().threshold)), players=players,
        standings=sorted(players, key=lambda p: (p.result is None, 0 if p.result is None else p.result.place, p.seat)),
        moves=moves,
        replay_data=replay_data,
        vs=" v ".join(names), data_href=None if view is None else match_data_href(snap.slug, match.id),
        log_path=None if match.log_path is None else str(match.log_path),
        log_found=view is not None, log_corrupt=corrupt or (log is not None and view is None),
        fault_steps={} if view is None else view.forfeits,
        think=tuple(view.tallies_of(match.id)) if view is not None else (),
        log_href=None if view is None else match_log_href(snap.slug, match.id),
        prev_href=None if prev_m is None else match_href(snap.slug, prev_m.id),
        next_href=None if next_m is None else match_href(snap.slug, next_m.id),
        rules_href=tournament_href(snap.slug) + "#rules",
        how_href=tournament_href(snap.slug) + "#how",
        crumbs=tournament_crumbs(snap, Crumb("Matches", matches_href(snap.slug, listing_page(snap, position))),
                                 Crumb(f"Match #{match.id}", None)))
