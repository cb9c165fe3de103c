"""``python -m arena`` runs the command-line interface."""

from arena.cli import main

main()
