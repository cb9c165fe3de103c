"""arena: a tournament runner for submitted bot programs that play the card game Least Score."""

__version__ = "0.1.0"
