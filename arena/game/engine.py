"""The Least Score match: deal, turns, declarations, round scoring, elimination and final places.

:class:`Match` is the one mutable object of the engine (as python-chess's ``Board`` is): moves are validated, then
applied in place, and every change appends a plain-dict event to :attr:`Match.events`, which is enough to replay the
match. Randomness comes only from ``random.Random`` instances seeded from the match seed, so the same seed and the
same moves give the same event list on every machine. Nothing here knows about processes, files or bots.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal, TypeAlias

from arena.game.cards import DECK, RANK, Card, hand_total, parse_card
from arena.game.results import Reason, SeatStats, Termination
from arena.game.rules import Rules, discard_kind, legal_discards

Seat: TypeAlias = int
DECK_TAKE: Literal["deck"] = "deck"

DEAL_VERSION = 2
"""How deck cards are drawn; written into the ``match_start`` event so that a log replays with the draw it used.

1: the round's shuffled deck is drawn from the top, and the dead cards are shuffled into a new deck when it runs out.
2 (current): each deck draw reads a fixed block of random numbers from a stream of its own, keyed by (deal, round,
seat, that seat's draws so far), as a sequence of candidate cards, and takes the first candidate still in the deck.
A deck nobody has seen is, for every player, the same as a uniform draw from the unseen cards, and the first of
independent uniform candidates that lies in a set is uniform over that set, so the game is unchanged. But in the
rotations of a duplicate deal a seat now draws the same card whenever that card is still in the deck, however the
deck differs otherwise (a seat taking from the floor in one rotation and from the deck in another), instead of
every later deck card going to another seat. Drawing floor(u x cards left) from a sorted deck would be uniform
too, but one card more or less shifts the index: the next seat then got the same card only 69% of the time in that
case, against 96% this way (tests/game/test_deals.py).
"""
DEAL_VERSIONS = (1, 2)
_CANDIDATE_BITS = 6  # 0..63: values 52 and above are no card and are skipped
_CANDIDATES = 64
_CANDIDATE_MASK = (1 << _CANDIDATE_BITS) - 1
_CANDIDATE_CARD: tuple[Card | None, ...] = DECK + (None,) * (_CANDIDATES - len(DECK))
"""Each candidate's card, or None for the values that are no card (one lookup instead of a test and an index)."""


_BOUND_BITS = tuple((i + 1).bit_length() for i in range(len(DECK)))


def shuffle(rng: random.Random, cards: list[Card]) -> None:
    """``rng.shuffle(cards)``, the same permutation from the same numbers (tests/game/test_deals.py checks it), without
    a method call per card: a round's deal is one shuffle of 52 cards, a good part of a short round's cost.

    >>> deck, same = list(DECK), list(DECK)
    >>> shuffle(random.Random(5), deck); random.Random(5).shuffle(same); deck == same
    True
    """
    getrandbits = rng.getrandbits
    bound_bits = _BOUND_BITS if len(cards) <= len(_BOUND_BITS) else [(i + 1).bit_length() for i in range(len(cards))]
    for i in range(len(cards) - 1, 0, -1):
        # random.Random._randbelow(i + 1): the bits of the bound, drawn again until below it.
        bits = bound_bits[i]
        j = getrandbits(bits)
        while j > i:
            j = getrandbits(bits)
        cards[i], cards[j] = cards[j], cards[i]


class InvalidMoveError(ValueError):
    """A move that is not well formed (wrong shape, unknown card); :attr:`reason` says which."""

    def __init__(self, message: str, reason: Reason = Reason.INVALID_MOVE) -> None:
        super().__init__(message)
        self.reason = reason


class IllegalMoveError(ValueError):
    """A well-formed move that the rules forbid in the current position; :attr:`reason` says which rule."""

    def __init__(self, message: str, reason: Reason) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Declare:
    """End the round by revealing hands (clause 5); replaces the whole turn."""

    def to_json(self) -> dict[str, Any]:
        return {"type": "declare"}


@dataclass(frozen=True)
class Play:
    """Throw ``discard`` (one legal set, clause 3), then take ``take``: ``"deck"`` or one card of the floor."""

    discard: tuple[Card, ...]
    take: Card | Literal["deck"]

    def to_json(self) -> dict[str, Any]:
        return {"type": "play", "discard": list(self.discard), "take": self.take}


Move: TypeAlias = Declare | Play


@dataclass(frozen=True)
class Forfeit:
    """A seat leaves the match (its bot faulted); recorded so that a replay removes it at the same point."""

    reason: str = ""


Action: TypeAlias = Move | Forfeit


def move_from_json(message: object) -> Move:
    """Parse a move in its wire form, raising :class:`InvalidMoveError` with what was expected."""
    if not isinstance(message, dict):
        raise InvalidMoveError(f"expected a JSON object, got {type(message).__name__}")
    kind = message.get("type")
    if kind == "declare":
        return Declare()
    if kind != "play":
        raise InvalidMoveError(f'expected "type": "play" or "declare", got {kind!r}')
    discard = message.get("discard")
    if not isinstance(discard, list) or not discard:
        raise InvalidMoveError(f'expected "discard": a non-empty list of cards, got {discard!r}')
    take = message.get("take")
    try:
        cards = tuple(parse_card(token) for token in discard)
        if take != DECK_TAKE:
            take = parse_card(take)
    except ValueError as error:
        raise InvalidMoveError(str(error), Reason.INVALID_CARD) from None
    return Play(cards, take)


class RoundEnd(str, Enum):
    """Why a round ended."""

    DECLARED = "declared"
    """The declarer had strictly the lowest total (clause 6)."""
    FAILED_DECLARATION = "failed_declaration"
    """The declarer was not the lowest (clause 7)."""
    TURN_CAP = "turn_cap"
    """Every live seat used ``max_turns_per_player`` turns; each scores its own total."""


@dataclass(frozen=True)
class Outcome:
    """A finished match: ``places[seat]`` is 1 for first; equal places share a number."""

    termination: Termination
    places: tuple[int, ...]
    scores: tuple[int, ...]


@dataclass(frozen=True)
class SeatView:
    """What one seat may know at its turn: nothing of other seats' hidden cards or of the deck's order."""

    seat: Seat
    round: int
    hand: tuple[Card, ...]
    floor: tuple[Card, ...]
    may_declare: bool
    deck_size: int
    hand_sizes: tuple[int, ...]
    scores: tuple[int, ...]
    live: tuple[bool, ...]


def score_round(totals: Sequence[int], declarer: int | None, rules: Rules = Rules()) -> list[int]:
    """Points each seat scores for one round, from the hand totals and the declaring seat (clauses 6 and 7).

    ``declarer=None`` is a round that hit the turn cap: every seat scores its own total.

    >>> score_round([10, 16, 17], 0)
    [0, 6, 7]
    >>> score_round([10, 8, 15], 0)
    [22, 0, 0]
    """
    if declarer is None:
        return list(totals)
    own = totals[declarer]
    lowest_other = min(total for seat, total in enumerate(totals) if seat != declarer)
    if _declaration_succeeds(own, lowest_other, rules):
        return [0 if seat == declarer else total - own for seat, total in enumerate(totals)]
    return [rules.penalty + own - lowest_other if seat == declarer else 0 for seat in range(len(totals))]


def _declaration_succeeds(own: int, lowest_other: int, rules: Rules) -> bool:
    return own < lowest_other or (own == lowest_other and not rules.tie_fails)


def competition_places(keys: Sequence[tuple[int, ...]]) -> list[int]:
    """Places 1, 2, 2, 4 ... for sort keys where lower is better and equal keys share a place."""
    places = [0] * len(keys)
    ordered = sorted(range(len(keys)), key=keys.__getitem__)
    for position, seat in enumerate(ordered):
        same_as_previous = position > 0 and keys[ordered[position - 1]] == keys[seat]
        places[seat] = places[ordered[position - 1]] if same_as_previous else position + 1
    return places


_SETS: dict[Rules, dict[tuple[Card, ...], bool]] = {}
"""Whether a discard of three or more cards is a set that may be thrown, by rules and cards as sent (a pure function
of both, asked on every such move): one :func:`~arena.game.rules.discard_kind` a distinct set instead of one a move."""
_SETS_CACHED = 1 << 16


class Match:
    """One match of Least Score among ``players`` seats, dealt from ``seed``.

    Seats are 0..players-1 and play goes up the seat numbers. Read :attr:`turn` for whose move it is,
    :meth:`view` for what a seat may see, :meth:`legal_moves` for its choices, then :meth:`apply`. A seat that
    must leave (a bot's fault) is removed with :meth:`forfeit`. :attr:`outcome` is None until the match is over.
    """

    def __init__(self, players: int, seed: int, rules: Rules = Rules(), deal_version: int = DEAL_VERSION) -> None:
        if type(players) is not int or not 2 <= players <= 8:
            raise ValueError(f"players: expected an integer from 2 to 8, got {players!r}")
        if deal_version not in DEAL_VERSIONS:
            raise ValueError(f"deal_version: expected one of {DEAL_VERSIONS}, got {deal_version!r}")
        self.deal_version = deal_version
        self.players = players
        self.seed = seed
        self.rules = rules
        self._sets = _SETS.setdefault(rules, {})
        self.scores = [0] * players
        self.eliminated: list[list[Seat]] = []
        """Seats eliminated by score, one list per round in which any were, in order."""
        self.forfeits: list[Seat] = []
        self._out: set[Seat] = set()
        self._live: tuple[Seat, ...] = tuple(range(players))
        """The seats in play, kept as seats leave: read on every move."""
        self.round = 0
        self.outcome: Outcome | None = None
        self.events: list[dict[str, Any]] = []
        self.hands: list[list[Card]] = [[] for _ in range(players)]
        self.deck: list[Card] = []
        """The cards left to draw, in deal version 1's draw order. Replace it, never change it in place, from outside:
        the draw keeps a set of it."""
        self._in_deck: set[Card] = set()
        self._in_deck_of: list[Card] | None = None
        """The list :attr:`_in_deck` holds the cards of (the draw builds it again when :attr:`deck` is another)."""
        self.floor: tuple[Card, ...] = ()
        self.dead: list[Card] = []
        self.turn: Seat = random.Random(seed).randrange(players)
        self.starter: Seat = self.turn
        self.turns_taken = [0] * players
        # Per-seat statistics, counted as the match is played (see seat_stats()).
        self._rounds_dealt = [0] * players
        self._turns_total = [0] * players
        self._declares_ok = [0] * players
        self._declares_failed = [0] * players
        self._round_rng: random.Random  # each round's, made by _start_round (an unseeded one reads the OS's entropy)
        self._draw_rngs: dict[Seat, random.Random] = {}
        start: dict[str, Any] = {"type": "match_start", "players": players, "seed": seed, "rules": rules.to_dict()}
        if deal_version != 1:  # version 1 logs have no such field; their replays must produce the same events
            start["deal_version"] = deal_version
        self.events.append(start)
        self._start_round(self.turn)

    # -- what the seats see -------------------------------------------------------------------------------------

    def in_play(self, seat: Seat) -> bool:
        """Whether ``seat`` is still playing: not eliminated and not forfeited."""
        return self.outcome is None and seat not in self._out

    @property
    def live(self) -> list[Seat]:
        return list(self._live)

    @property
    def seats_in_play(self) -> tuple[Seat, ...]:
        """:attr:`live` without the copy, for the referee's hot path."""
        return self._live

    def _seats_left(self) -> None:
        self._live = () if self.outcome is not None else tuple(s for s in range(self.players) if s not in self._out)

    def may_declare(self) -> bool:
        """Whether the seat to move may declare now (clause 5 and ``declare_max``)."""
        if self.outcome is not None or self.turns_taken[self.turn] == 0:
            return False
        cap = self.rules.declare_max
        return cap is None or hand_total(self.hands[self.turn]) <= cap

    def view(self, seat: Seat) -> SeatView:
        live = self.live
        return SeatView(
            seat=seat,
            round=self.round,
            hand=tuple(self.hands[seat]),
            floor=self.floor,
            may_declare=seat == self.turn and self.may_declare(),
            deck_size=len(self.deck),
            hand_sizes=tuple(len(hand) for hand in self.hands),
            scores=tuple(self.scores),
            live=tuple(s in live for s in range(self.players)),
        )

    def seat_stats(self) -> tuple[SeatStats, ...]:
        """What each seat has done so far: rounds dealt into, moves, points, declarations that held or failed."""
        return tuple(
            SeatStats(self._rounds_dealt[s], self._turns_total[s], self.scores[s], self._declares_ok[s],
                      self._declares_failed[s])
            for s in range(self.players)
        )

    def legal_moves(self) -> Iterator[Move]:
        """Every legal move of the seat to move: Declare first when allowed, then each set with each take."""
        if self.outcome is not None:
            return
        if self.may_declare():
            yield Declare()
        takes: tuple[Card | Literal["deck"], ...] = (DECK_TAKE, *self.floor)
        for discard in legal_discards(self.hands[self.turn], self.rules):
            for take in takes:
                yield Play(discard, take)

    def check(self, move: Move) -> None:
        """Raise :class:`IllegalMoveError` (with the reason) unless ``move`` is legal for the seat to move."""
        if self.outcome is not None:
            raise IllegalMoveError("the match is over", Reason.ILLEGAL_MATCH_OVER)
        if isinstance(move, Declare):
            if self.turns_taken[self.turn] == 0:
                raise IllegalMoveError("may not declare on your first turn of a round", Reason.ILLEGAL_FIRST_TURN_DECLARE)
            if not self.may_declare():
                raise IllegalMoveError(
                    f"may not declare with a total of {hand_total(self.hands[self.turn])}"
                    f" (declare_max is {self.rules.declare_max})",
                    Reason.ILLEGAL_DECLARE_OVER_MAX,
                )
            return
        hand = self.hands[self.turn]
        discard = move.discard
        for card in discard:
            if card not in hand:
                missing = [card for card in discard if card not in hand]
                raise IllegalMoveError(f"discard {' '.join(missing)} not in hand {' '.join(hand)}",
                                       Reason.ILLEGAL_NOT_IN_HAND)
        # One card of the hand is always a set (clause 3), two are one when they are a pair (discard_kind's rule,
        # without its parsing: these are cards of the hand); most moves are one or two cards.
        count = len(discard)
        if count != 1 and not (count == 2 and RANK[discard[0]] == RANK[discard[1]] and discard[0] != discard[1]
                               or count > 2 and self._is_set(discard)):
            raise IllegalMoveError(f"{' '.join(discard)} is not a set that may be thrown (clause 3)",
                                   Reason.ILLEGAL_NOT_A_SET)
        take = move.take
        if take != DECK_TAKE and take not in self.floor:
            raise IllegalMoveError(
                f"take {take} is not on the floor {' '.join(self.floor)} (take 'deck' or a floor card)",
                Reason.ILLEGAL_TAKE_NOT_ON_FLOOR,
            )

    def _is_set(self, discard: tuple[Card, ...]) -> bool:
        """Whether three or more cards of the hand are a set that may be thrown (clause 3)."""
        known = self._sets.get(discard)
        if known is None:
            if len(self._sets) >= _SETS_CACHED:
                self._sets.clear()
            known = self._sets[discard] = discard_kind(discard, self.rules) is not None
        return known

    # -- changing the position ----------------------------------------------------------------------------------

    def apply(self, move: Move) -> None:
        """Check and play ``move`` for the seat to move (raises :class:`IllegalMoveError`)."""
        seat = self.turn
        if type(move) is not Play or self.outcome is not None:
            self.check(move)
            if isinstance(move, Declare):
                self._turns_total[seat] += 1
                self.events.append({"type": "declare", "seat": seat})
                self._end_round(seat)
                return
        hand = self.hands[seat]
        discard, take = move.discard, move.take
        # check()'s rules for the usual play, one card or a pair of the hand, without the call; anything else (a
        # longer set, or a move to refuse) is check()'s.
        count = len(discard)
        if not (count == 1 and discard[0] in hand
                or count == 2 and discard[0] in hand and discard[1] in hand and discard[0] != discard[1]
                and RANK[discard[0]] == RANK[discard[1]]) or take != DECK_TAKE and take not in self.floor:
            self.check(move)
        self._turns_total[seat] += 1
        for card in discard:
            hand.remove(card)
        event: dict[str, Any]
        if take == DECK_TAKE:
            drawn = self._draw(seat)
            event = {"type": "play", "seat": seat, "discard": list(discard), "take": take, "drew": drawn}
        else:
            drawn = take
            event = {"type": "play", "seat": seat, "discard": list(discard), "take": take}
        hand.append(drawn)
        dead = self.dead
        for card in self.floor:
            if card != drawn:
                dead.append(card)
        self.floor = discard
        taken = self.turns_taken
        taken[seat] += 1
        self.events.append(event)
        cap = self.rules.max_turns_per_player
        # Only the seat that just moved can have reached the cap now: look at the others only then.
        if taken[seat] >= cap and all(taken[s] >= cap for s in self._live):
            self._end_round(None)
            return
        following = seat + 1 if seat + 1 < self.players else 0
        self.turn = following if following not in self._out else self._next_seat(seat)

    def forfeit(self, seat: Seat, reason: str = "") -> None:
        """Remove ``seat`` from play (a bot's fault). It ranks below every seat that did not forfeit."""
        if not self.in_play(seat):
            return
        self.forfeits.append(seat)
        self._out.add(seat)
        self._seats_left()
        self.dead.extend(self.hands[seat])  # its cards leave play but stay accounted for
        self.hands[seat] = []
        self.events.append({"type": "forfeit", "seat": seat, "reason": reason})
        live = self.live
        if len(live) <= 1:
            self._finish(Termination.FORFEITS)
        elif all(self.turns_taken[s] >= self.rules.max_turns_per_player for s in live):
            # The seat that left may have been the only one with turns to go: the turn cap is reached now.
            self._end_round(None)
        elif seat == self.turn:
            self.turn = self._next_seat(seat)

    # -- internals ----------------------------------------------------------------------------------------------

    def _next_seat(self, seat: Seat) -> Seat:
        out = self._out
        if self.outcome is None:
            for step in range(1, self.players + 1):
                candidate = (seat + step) % self.players
                if candidate not in out:
                    return candidate
        raise AssertionError("no seat in play")  # callers end the match before this can happen

    def _start_round(self, starter: Seat) -> None:
        self.round += 1
        # Each round's deal depends only on the seed and the round number, not on how play went before, so
        # that duplicate matches (same seed, seats rotated) deal the same cards to the same seats for longer.
        # random.Random(str) is the seeding that Python promises to keep (the random module's "Notes on
        # Reproducibility"); hashing the key here with random._sha512 was no quicker (bench/engine.py), and that
        # private name is None on 3.13.
        self._round_rng = random.Random(f"{self.seed}/round/{self.round}")
        deck = list(DECK)
        shuffle(self._round_rng, deck)
        self.hands = [[] for _ in range(self.players)]
        for seat in self.live:
            self.hands[seat] = [deck.pop() for _ in range(5)]
            self._rounds_dealt[seat] += 1
        self.floor = (deck.pop(),)
        self.deck = deck
        self._draw_rngs = {}
        self.dead = []
        self.turn = self.starter = starter
        self.turns_taken = [0] * self.players
        self.events.append(
            {
                "type": "round_start",
                "round": self.round,
                "starter": starter,
                "hands": [list(hand) for hand in self.hands],
                "floor": list(self.floor),
                "scores": list(self.scores),
                "live": self.live,
            }
        )

    def _draw(self, seat: Seat) -> Card:
        """Take one card from the deck for ``seat`` (see :data:`DEAL_VERSION`)."""
        deck = self.deck
        if not deck:
            self._reshuffle()
            deck = self.deck
        if self.deal_version == 1:
            return deck.pop()
        rng = self._draw_rngs.get(seat)
        if rng is None:
            rng = self._draw_rngs[seat] = random.Random(f"{self.seed}/round/{self.round}/seat/{seat}")
        # Candidates are looked up in a set of the deck: most miss, and a miss in the list compares every card.
        in_deck = self._in_deck
        if self._in_deck_of is not deck:
            in_deck = self._in_deck = set(deck)
            self._in_deck_of = deck
        # Exactly one block per draw, so that a seat's n-th draw reads the same numbers in every rotation.
        block = candidates = rng.getrandbits(_CANDIDATE_BITS * _CANDIDATES)
        while candidates:  # once the bits left are all zero, every candidate left is card 0: tried once below
            card = _CANDIDATE_CARD[candidates & _CANDIDATE_MASK]
            if card is not None and card in in_deck:
                deck.remove(card)
                in_deck.remove(card)
                return card
            candidates >>= _CANDIDATE_BITS
        if DECK[0] in in_deck:
            deck.remove(DECK[0])
            in_deck.remove(DECK[0])
            return DECK[0]
        # Rare (a deck of a few cards): a uniform choice keyed by the block, so rotations still share it.
        drawn = random.Random(f"{self.seed}/round/{self.round}/seat/{seat}/{block}").choice(sorted(deck))
        deck.remove(drawn)
        in_deck.remove(drawn)
        return drawn

    def _reshuffle(self) -> None:
        # Clause-free decision: the dead floor cards (never the previous player's discard) become the new deck.
        self.deck = self.dead
        self.dead = []
        shuffle(self._round_rng, self.deck)  # version 2 draws do not depend on the order; kept for version 1
        self.events.append({"type": "reshuffle", "deck_size": len(self.deck)})

    def _end_round(self, declarer: Seat | None) -> None:
        live = self.live
        every_total = [hand_total(hand) for hand in self.hands]
        totals = [every_total[seat] for seat in live]
        index = None if declarer is None else live.index(declarer)
        points = score_round(totals, index, self.rules)
        if declarer is None:
            reason = RoundEnd.TURN_CAP
        elif _declaration_succeeds(
            every_total[declarer], min(t for s, t in zip(live, totals) if s != declarer), self.rules
        ):
            # Judged by the rule, not by the declarer's points: with penalty 0 a failed tie also scores 0.
            reason = RoundEnd.DECLARED
            self._declares_ok[declarer] += 1
        else:
            reason = RoundEnd.FAILED_DECLARATION
            self._declares_failed[declarer] += 1
        round_points = [0] * self.players
        for seat, gained in zip(live, points):
            round_points[seat] = gained
            self.scores[seat] += gained
        out = [seat for seat in live if self.scores[seat] > self.rules.threshold]
        if out:
            self.eliminated.append(out)
            self._out.update(out)
            self._seats_left()
        self.events.append(
            {
                "type": "round_end",
                "round": self.round,
                "reason": reason.value,
                "declarer": declarer,
                "hands": [list(hand) for hand in self.hands],
                "totals": every_total,
                "points": round_points,
                "scores": list(self.scores),
                "eliminated": out,
            }
        )
        still = self.live
        if len(still) <= 1:
            self._finish(Termination.LAST_STANDING)
        elif out and self.rules.until == "first_out":
            self._finish(Termination.FIRST_OUT)
        elif self.round >= self.rules.max_rounds:
            self._finish(Termination.MAX_ROUNDS)
        else:
            # The next round starts with the next live seat after the last round's starter.
            self._start_round(self._next_seat(self.starter))

    def _finish(self, termination: Termination) -> None:
        # Best first: seats still in play by score; then those eliminated by score, the latest round first;
        # then forfeits, the latest first. Within a group equal scores share a place.
        survivors = [s for s in range(self.players) if self.in_play(s)]
        keys: list[tuple[int, ...]] = [()] * self.players
        for seat in survivors:
            keys[seat] = (0, 0, self.scores[seat])
        for age, group in enumerate(reversed(self.eliminated)):
            for seat in group:
                keys[seat] = (1, age, self.scores[seat])
        for age, seat in enumerate(reversed(self.forfeits)):
            keys[seat] = (2, age, 0)
        self.outcome = Outcome(termination, tuple(competition_places(keys)), tuple(self.scores))
        self._seats_left()
        self.events.append(
            {
                "type": "match_end",
                "termination": termination.value,
                "places": list(self.outcome.places),
                "scores": list(self.scores),
            }
        )


def replay(players: int, seed: int, rules: Rules, actions: Iterable[tuple[Seat, Action]],
           deal_version: int = DEAL_VERSION) -> Match:
    """Rebuild a match from its seed and its recorded ``(seat, action)`` pairs, drawing as ``deal_version`` did.

    Raises :class:`IllegalMoveError` when an action does not fit (a move by the wrong seat, or an illegal one).
    """
    match = Match(players, seed, rules, deal_version)
    for seat, action in actions:
        if isinstance(action, Forfeit):
            match.forfeit(seat, action.reason)
            continue
        if seat != match.turn:
            raise IllegalMoveError(f"recorded move by seat {seat}, but it is seat {match.turn}'s turn",
                                   Reason.ILLEGAL_OUT_OF_TURN)
        match.apply(action)
    return match


def deal_version_of(events: Sequence[dict[str, Any]]) -> int:
    """The deal version a recorded event list was played with (logs from before versions were recorded: 1)."""
    start = events[0] if events else {}
    version = start.get("deal_version", 1) if start.get("type") == "match_start" else DEAL_VERSION
    if version not in DEAL_VERSIONS:
        raise ValueError(f"match_start: deal_version {version!r} is not one this engine can replay "
                         f"(known: {', '.join(map(str, DEAL_VERSIONS))}); a newer arena wrote this log")
    return int(version)


def actions_from_events(events: Iterable[dict[str, Any]]) -> list[tuple[Seat, Action]]:
    """The moves and forfeits of an event list, in order, for :func:`replay`."""
    actions: list[tuple[Seat, Action]] = []
    for event in events:
        if event["type"] == "declare":
            actions.append((event["seat"], Declare()))
        elif event["type"] == "play":
            actions.append((event["seat"], Play(tuple(event["discard"]), event["take"])))
        elif event["type"] == "forfeit":
            actions.append((event["seat"], Forfeit(event["reason"])))
    return actions
