"""TrueSkill ratings over match places, applied in schedule order.

The only module that touches the ``trueskill`` package (an old release with module-level state and a float
backend that overflows): one explicit environment, never the package's globals; seats passed in a fixed order (by
bot id) so that tied seats get the same update whatever seat they sat in; the fast default backend, with the exact
``mpmath`` backend taken for a match whose upset overflows it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import trueskill


@dataclass(frozen=True)
class RatingConfig:
    """TrueSkill's parameters, as a tournament config's ``rating:`` sets them. ``draw_probability`` must stay above 0:
    with 0, a tie in places corrupts the update."""

    mu: float = 25.0
    sigma: float = 25.0 / 3
    beta: float = 25.0 / 6
    tau: float = 25.0 / 300
    draw_probability: float = 0.02


@dataclass(frozen=True)
class Rating:
    mu: float
    sigma: float

    @property
    def conservative(self) -> float:
        """mu - 3 sigma: what the standings sort by; a bot must be good *and* well measured to rank high."""
        return self.mu - 3 * self.sigma


@dataclass(frozen=True)
class RatedMatch:
    """One match's outcome for rating: the bot ids in seat order and their places (1 is best; ties allowed)."""

    index: int
    bots: tuple[int, ...]
    places: tuple[int, ...]


class Rater:
    def __init__(self, config: RatingConfig) -> None:
        # Imported here, not with the module: reading a store's ratings (arena standings) needs no TrueSkill.
        import trueskill

        self._options: dict[str, Any] = {"mu": config.mu, "sigma": config.sigma, "beta": config.beta,
                                         "tau": config.tau, "draw_probability": config.draw_probability}
        self.fast = trueskill.TrueSkill(**self._options)
        self._exact: trueskill.TrueSkill | None = None
        self.initial = Rating(config.mu, config.sigma)

    @property
    def exact(self) -> trueskill.TrueSkill:
        """The mpmath backend's environment, made (and mpmath imported) only for a match that needs it."""
        if self._exact is None:
            import trueskill

            self._exact = trueskill.TrueSkill(backend="mpmath", **self._options)
        return self._exact

    def update(self, ratings: dict[int, Rating], match: RatedMatch) -> dict[int, Rating]:
        """New ratings of the match's bots (others unchanged)."""
        order = sorted(range(len(match.bots)), key=lambda seat: match.bots[seat])
        bots = [match.bots[seat] for seat in order]
        ranks = [match.places[seat] for seat in order]
        try:
            rated = self._rate(self.fast, ratings, bots, ranks)
        except FloatingPointError:  # the default backend's erfc overflows on big upsets
            rated = self._rate(self.exact, ratings, bots, ranks)
        return {**ratings, **dict(zip(bots, rated))}

    def _rate(self, env: trueskill.TrueSkill, ratings: dict[int, Rating], bots: list[int],
              ranks: list[int]) -> list[Rating]:
        groups = [(env.create_rating(ratings[bot].mu, ratings[bot].sigma),) for bot in bots]
        return [Rating(float(group[0].mu), float(group[0].sigma)) for group in env.rate(groups, ranks=ranks)]


def rate_all(bot_ids: Sequence[int], matches: Iterable[RatedMatch], config: RatingConfig,
             start: Mapping[int, Rating] | None = None) -> tuple[dict[int, Rating], list[tuple[int, dict[int, Rating]]]]:
    """Final ratings, and the history: after each match (by index), the ratings of that match's bots.

    ``matches`` must come in schedule order; that is what makes ratings independent of the number of workers.
    ``start``: the bots' ratings before the first of ``matches`` (the stored ones, when only later matches are
    new); a bot not in it starts from the prior.
    """
    rater = Rater(config)
    ratings = {bot: rater.initial for bot in bot_ids} | dict(start or {})
    history: list[tuple[int, dict[int, Rating]]] = []
    for match in matches:
        ratings = rater.update(ratings, match)
        history.append((match.index, {bot: ratings[bot] for bot in match.bots}))
    return ratings, history
