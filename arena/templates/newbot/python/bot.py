"""__NAME__: a Least Score bot. Start here: change on_turn, then run `arena check __NAME__` (see README.md)."""

import arena_bot


class Bot(arena_bot.Bot):
    # This process may play several matches, each from its own hello (on_hello): reset per-match state there.
    persistent = True

    def on_turn(self, message):
        hand = message["hand"]
        # may_declare is false on your first turn of a round: declaring then is an illegal move.
        if message["may_declare"] and arena_bot.total(hand) <= 4:
            return arena_bot.declare()
        # Every card you throw must come from message["hand"], as one set the rules allow: legal_sets lists them.
        sets = arena_bot.legal_sets(hand, self.rules)
        best = max(sets, key=arena_bot.total)
        arena_bot.log("hand", hand, "throwing", best)  # stderr is your log; stdout is only for protocol replies
        return arena_bot.play(best, "deck")


if __name__ == "__main__":
    arena_bot.run(Bot())
