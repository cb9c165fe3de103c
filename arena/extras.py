"""The optional stacks of pyproject.toml's extras: which modules each one brings, and the message that names the
pip line when a command needs one that is not installed (a bare ModuleNotFoundError would say neither)."""

from __future__ import annotations

import importlib

from arena import DISTRIBUTION

EXTRAS = {"server": ("starlette", "uvicorn", "prometheus_client"), "cluster": ("distributed",), "docker": ("docker",)}
"""The modules each extra brings, as the code that needs them imports them."""


def pip_line(extra: str) -> str:
    """The command that installs ``extra``.

    >>> pip_line("docker")
    "pip install 'least-score-arena[docker]'"
    """
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def missing_extra(extra: str, needed_by: str) -> str | None:
    """None when ``extra``'s modules import here; else what ``needed_by`` lacks and the pip line that brings it."""
    for module in EXTRAS[extra]:
        try:
            importlib.import_module(module)
        except ImportError as error:
            return f"{needed_by} needs the {extra} extra, which is not installed here ({error}): {pip_line(extra)}"
    return None
