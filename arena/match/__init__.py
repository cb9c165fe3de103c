"""One match between programs: the protocol, the channel to a bot, the referee, the event log and its views."""
