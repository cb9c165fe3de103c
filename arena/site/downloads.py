"""A tournament's results to download from its page: ``results.json``, ``standings.csv`` and ``matches.csv``."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from typing import Any

from arena.site.snapshot import Snapshot

DOWNLOADS = ("results.json", "standings.csv", "matches.csv")


def results_json(snap: Snapshot, standings: list[dict[str, Any]]) -> dict[str, Any]:
    """The tournament's results as ``arena standings --json`` and ``arena matches --json`` give them, in one
    object (``standings``: what the first gives, made by the same function)."""
    return {"tournament": snap.name, "finished_at": snap.finished_at, "standings": standings,
            "matches": snap.match_list}


STANDINGS_CSV = ("rank", "shared_rank", "bot", "strength", "conservative", "mu", "sigma", "matches", "wins",
                 "mean_place", "points_per_round", "declares_ok", "declares_failed", "rank_interval_95",
                 "p_above_next", "faults", "active")
MATCHES_CSV = ("id", "index", "seed", "status", "rounds", "turns", "termination", "duration_s", "error", "seat",
               "bot", "place", "score", "fault")


def standings_csv(standings: Sequence[dict[str, Any]]) -> str:
    """The standings (each line as ``arena standings --json`` gives it) as CSV, a bot a row; a pair (the rank
    interval) as ``low-high``, the faults as ``kind count`` joined by ``;``."""
    def cell(value: Any) -> Any:
        if isinstance(value, list):
            return "-".join(map(str, value))
        if isinstance(value, dict):
            return "; ".join(f"{key} {count}" for key, count in value.items())
        return "" if value is None else value
    return _csv(STANDINGS_CSV, ([cell(line.get(name)) for name in STANDINGS_CSV] for line in standings))


def matches_csv(matches: Sequence[dict[str, Any]]) -> str:
    """The matches (as ``arena matches --json`` gives them) as CSV, a seat a row: the match's fields repeated on
    each of its seats' rows."""
    rows = ([*("" if match[name] is None else match[name] for name in MATCHES_CSV[:9]),
             *("" if player[name] is None else player[name] for name in MATCHES_CSV[9:])]
            for match in matches for player in match["players"])
    return _csv(MATCHES_CSV, rows)


def _csv(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()
