"""arena: a tournament runner for submitted bot programs that play the card game Least Score."""

__version__ = "0.1.0"
"""The one place the version is written: pyproject.toml reads it from here (a setuptools dynamic version), and
reading it costs an import nothing (importlib.metadata would cost every command's start-up its import)."""
DISTRIBUTION = "least-score-arena"
"""The name pip knows arena by ("arena" on PyPI is another project); the import name and the command are arena."""
