"""Where arena finds the files it ships beside its code: ``protocol/``, ``site/``, ``sample_bots/`` and ``tournaments/``.

In a source checkout (an editable install) they are the repository's top-level directories. A built wheel carries
copies of them inside the package, in ``arena/_data/`` (``setup.py`` puts them there), because a wheel installs
only packages and a top-level ``site/`` or ``protocol/`` in site-packages would shadow other modules. Every module
asks :func:`data_dir` instead of working out paths from its own ``__file__``, so both installs behave the same.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
DATA_DIRS = ("protocol", "site", "sample_bots", "tournaments")
"""The top-level directories that ship in the wheel (see ``setup.py``)."""


def data_dir(name: str) -> Path:
    """The shipped directory ``name`` (one of :data:`DATA_DIRS`): the wheel's copy if this is a wheel install, else
    the checkout's. The path may not exist in a broken install; callers that need it say so when it is missing."""
    if name not in DATA_DIRS:
        raise ValueError(f"{name!r}: not a shipped directory (expected one of {', '.join(DATA_DIRS)})")
    installed = PACKAGE / "_data" / name
    return installed if installed.is_dir() else PACKAGE.parent / name


SAMPLE_PREFIX = "sample:"
"""How ``arena match`` and a config's ``bots:`` name a sample bot that ships with arena (``sample:greedy``), so
that an installed arena, or a bot directory anywhere, can play them without a source checkout."""


class NoSuchSample(ValueError):
    """A ``sample:NAME`` that names no shipped sample bot."""


def sample_bot(entry: str) -> Path | None:
    """The directory of the shipped sample bot that ``entry`` names (``sample:greedy``), None when ``entry`` is no
    ``sample:`` name, or :class:`NoSuchSample` listing the samples there are."""
    if not entry.startswith(SAMPLE_PREFIX):
        return None
    name = entry[len(SAMPLE_PREFIX):]
    root = data_dir("sample_bots")
    known = sorted(path.name for path in root.iterdir() if (path / "bot.yaml").is_file()) if root.is_dir() else []
    if name not in known:
        raise NoSuchSample(f"{entry}: no such sample bot (the samples that ship with arena: "
                           f"{', '.join(SAMPLE_PREFIX + sample for sample in known) or 'none in this install'})")
    return root / name
