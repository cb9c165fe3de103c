"""Per-seat statistics of one match, computed from its engine events (pure; the store keeps the results)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable


@dataclass(frozen=True)
class SeatStats:
    rounds: int = 0
    """Rounds the seat was dealt into."""
    turns: int = 0
    points: int = 0
    """Points scored over the match (lower is better)."""
    declares_ok: int = 0
    declares_failed: int = 0


def seat_stats(events: Iterable[dict[str, Any]], players: int) -> list[SeatStats]:
    rounds = [0] * players
    turns = [0] * players
    points = [0] * players
    ok = [0] * players
    failed = [0] * players
    for event in events:
        kind = event["type"]
        if kind == "round_start":
            for seat, hand in enumerate(event["hands"]):
                rounds[seat] += bool(hand)
        elif kind in ("play", "declare"):
            turns[event["seat"]] += 1
        elif kind == "round_end":
            for seat, gained in enumerate(event["points"]):
                points[seat] += gained
            declarer = event["declarer"]
            if declarer is not None:
                if event["reason"] == "declared":
                    ok[declarer] += 1
                else:
                    failed[declarer] += 1
    return [SeatStats(rounds[s], turns[s], points[s], ok[s], failed[s]) for s in range(players)]
