"""The league server's C heap over weeks: few malloc arenas, and their free pages given back after each publish.

What the server works out from the whole league is transient but grows with it: the standings from every seat (in
whichever web thread asks first after a batch), the site's changed pages and its manifest (in the league's thread).
glibc's malloc keeps what a thread frees in that thread's arena, up to eight arenas a core, and returns to the
system only what lies at the top of one: so each arena that once held such a peak kept its size, and the server's
RSS followed the league's size times the threads that had served it (docs/SERVER.md, "Memory"). Fewer arenas
(:func:`limit_arenas`, before the server starts its threads) and a trim after each publish (:func:`give_back`, which
releases the free pages inside every arena) keep it near what is in use. Both are glibc's; elsewhere they do
nothing and say so by returning False.
"""

from __future__ import annotations

import ctypes
import functools

ARENAS = 2
"""malloc arenas for the whole server: the league's thread and the web threads contend little (a request spends its
time in SQLite and in Python, which holds the GIL)."""
M_ARENA_MAX = -8
"""mallopt's parameter number for the arena cap (glibc's malloc.h)."""


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return None
    return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None


def limit_arenas(count: int = ARENAS) -> bool:
    """Let the threads started from now on share ``count`` malloc arenas; False where malloc is not glibc's."""
    libc = _glibc()
    return libc is not None and bool(libc.mallopt(M_ARENA_MAX, count))


def give_back() -> bool:
    """Return the free pages of every malloc arena to the system; False where malloc is not glibc's."""
    libc = _glibc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True
