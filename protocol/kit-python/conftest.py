"""The kit's arena_bot.py is protocol/arena_bot.py (a link): its doctests run there, once."""

collect_ignore = ["arena_bot.py"]
