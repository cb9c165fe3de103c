"""``python -m arena`` and the ``arena`` command: the command-line interface, quiet about a Ctrl-C even while it
is still importing (a second or so on a busy host), and taking SIGTERM as it takes Ctrl-C."""

import os
import signal
import sys
from types import FrameType


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def entry() -> None:
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        from arena.cli.main import main
    except KeyboardInterrupt:
        sys.stderr.write("arena: interrupted\n")
        sys.stderr.flush()
        # Nothing to clean up yet, and a normal exit would be turned into death by SIGINT when the interrupt
        # landed in certain import paths (the interpreter flags it as unhandled).
        os._exit(1)
    main()


if __name__ == "__main__":
    entry()
