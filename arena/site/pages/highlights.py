"""A tournament's highlights: its closest finishes, its biggest comebacks and its costliest failed declarations (a
declaration that was not the lowest hand: protocol/RULES.md, clause 7), each linked to its match's replay at the step
it happened.

They come from the matches' events (the round ends and the match's end, which a match's view keeps:
arena/match/matchview.py), read once: a build's workers find each match's :class:`Moment` s as they make its page
(arena/site/build.py), and the build keeps the best :data:`KEPT` of each kind in the site (:data:`MOMENTS_FILE`) with
the matches they were looked for in, so that a rebuild reads the logs of new matches only."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from arena.match.matchview import MatchView
from arena.site.common import tournament_crumbs
from arena.site.snapshot import Snapshot
from arena.site.urls import Crumb, highlights_href, match_href, step_href

CLOSEST, COMEBACK, FAILED = "closest", "comeback", "failed"
KINDS = (CLOSEST, COMEBACK, FAILED)
SHOWN = {CLOSEST: 5, COMEBACK: 5, FAILED: 10}
"""How many of each kind the page lists."""
KEPT = 20
"""How many of each kind a build keeps for the next (more than it shows: a match dropped from the store takes its
moments with it)."""
MOMENTS_FILE = "moments.json"
"""In a tournament's directory of the site: the moments kept and the matches already looked at."""


@dataclass(frozen=True)
class Moment:
    """A moment of one match worth a look: its kind, how much (the winning margin in points of a close finish,
    lowest first; the points a comeback's winner was behind, most first; the penalty of a failed declaration, most
    first), where (the match, its replay step, the round) and whose (the seat: the winner, or the declarer)."""

    kind: str
    value: int
    match_id: int
    step: int
    seat: int
    round: int | None = None
    total: int | None = None
    """A failed declaration: the declarer's hand total."""
    beaten_by: int | None = None
    """A failed declaration: the lowest other total of the seats dealt in."""

    def order(self) -> tuple[int, int, int]:
        """Best first: the smallest margin, the biggest comeback, the costliest failure; then the earliest match."""
        return (self.value if self.kind == CLOSEST else -self.value, self.match_id, self.step)


def moments(view: MatchView, match_id: int) -> list[Moment]:
    """The moments of one match, from its view's round ends and match end (steps count events from 1, as the
    replay's ``#step=N`` does)."""
    rounds: list[tuple[int, dict[str, Any]]] = []
    end: tuple[int, dict[str, Any]] | None = None
    found: list[Moment] = []
    for block in view.blocks:
        for index, event in block.events:
            kind = event.get("type")
            if kind == "round_end":
                rounds.append((index + 1, event))
                declarer = event.get("declarer")
                if event.get("reason") == "failed_declaration" and isinstance(declarer, int):
                    totals, hands, points = event["totals"], event["hands"], event["points"]
                    others = [totals[seat] for seat in range(len(totals)) if seat != declarer and hands[seat]]
                    found.append(Moment(FAILED, points[declarer], match_id, index + 1, declarer, event.get("round"),
                                        totals[declarer], min(others, default=None)))
            elif kind == "match_end":
                end = (index + 1, event)
    if end is None:
        return found
    places, scores = end[1]["places"], end[1]["scores"]
    winners = [seat for seat, place in enumerate(places) if place == 1]
    if len(winners) != 1:
        return found  # a shared first place: no one finished ahead
    winner = winners[0]
    runners = [scores[seat] for seat, place in enumerate(places) if place == 2]
    if runners and min(runners) > scores[winner]:
        found.append(Moment(CLOSEST, min(runners) - scores[winner], match_id, end[0], winner))
    behind = [(event["scores"][winner] - min(s for seat, s in enumerate(event["scores"]) if seat != winner),
               step, event.get("round")) for step, event in rounds[:-1]]
    worst = max(behind, default=None, key=lambda b: (b[0], -b[1]))
    if worst is not None and worst[0] > 0:
        found.append(Moment(COMEBACK, worst[0], match_id, worst[1], winner, worst[2]))
    return found


def best(found: Iterable[Moment], count: int = KEPT) -> list[Moment]:
    """The best ``count`` of each kind, best first, the kinds in :data:`KINDS` order."""
    ranked = sorted(found, key=lambda m: (KINDS.index(m.kind), *m.order()))
    kept: list[Moment] = []
    for kind in KINDS:
        kept += [m for m in ranked if m.kind == kind][:count]
    return kept


def runs(ids: Iterable[int]) -> list[list[int]]:
    """Match ids as runs of consecutive ids, [first, last] each: the matches looked at are most of a tournament's,
    100,000 in a big league, kept in a few runs rather than 100,000 numbers.

    >>> runs([5, 1, 2, 3, 7, 8]), sorted(unrun(runs([5, 1, 2, 3, 7, 8])))
    ([[1, 3], [5, 5], [7, 8]], [1, 2, 3, 5, 7, 8])
    """
    found: list[list[int]] = []
    for match_id in sorted(ids):
        if found and found[-1][1] == match_id - 1:
            found[-1][1] = match_id
        else:
            found.append([match_id, match_id])
    return found


def unrun(found: Iterable[Sequence[int]]) -> set[int]:
    return {match_id for first, last in found for match_id in range(int(first), int(last) + 1)}


def to_state(found: Sequence[Moment]) -> list[dict[str, Any]]:
    return [asdict(m) for m in found]


def from_state(state: Sequence[dict[str, Any]]) -> list[Moment]:
    return [Moment(**item) for item in state]


@dataclass(frozen=True)
class HighlightRow:
    match_id: int
    href: str
    """The match's page at the moment's replay step."""
    bot: tuple[str, str]
    """Whose moment: (name, href)."""
    others: tuple[tuple[str, str], ...]
    """The match's other bots."""
    value: int
    round: int | None
    total: int | None
    beaten_by: int | None


@dataclass(frozen=True)
class HighlightsPage:
    name: str
    slug: str
    path: str
    crumbs: tuple[Crumb, ...]
    closest: tuple[HighlightRow, ...]
    comebacks: tuple[HighlightRow, ...]
    failed: tuple[HighlightRow, ...]
    failed_total: int
    """Failed declarations in all (the standings' counts)."""
    looked: int
    """The finished matches whose events were read (a sealed one is read once its group is over)."""


def highlights_page(snap: Snapshot, found: Sequence[Moment], looked: int) -> HighlightsPage:
    """The tournament's highlights page from its best moments (:func:`best`)."""
    stamps = {stamp.id: stamp for stamp in snap.stamps}

    def rows(kind: str) -> tuple[HighlightRow, ...]:
        made = []
        for m in [m for m in found if m.kind == kind][:SHOWN[kind]]:
            stamp = stamps[m.match_id]
            made.append(HighlightRow(m.match_id, step_href(match_href(snap.slug, m.match_id), m.step),
                                     snap.bot_link(stamp.bot_ids[m.seat]),
                                     tuple(snap.bot_link(bot) for seat, bot in enumerate(stamp.bot_ids)
                                           if seat != m.seat), m.value, m.round, m.total, m.beaten_by))
        return tuple(made)

    return HighlightsPage(snap.name, snap.slug, highlights_href(snap.slug),
                          tournament_crumbs(snap, Crumb("Highlights", None)), rows(CLOSEST), rows(COMEBACK),
                          rows(FAILED), sum(line.declares_failed for line in snap.standings), looked)
