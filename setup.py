"""Build hook: copy the top-level ``protocol/``, ``site/``, ``sample_bots/`` and ``tournaments/`` into the wheel.

Everything else about the package is in pyproject.toml. The directories stay at the top of the repository (the
design puts them there); a built wheel carries them as ``arena/_data/NAME``, where :mod:`arena.resources` looks
first. An editable install needs no copy: it finds them in the checkout.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
DATA_DIRS = ("protocol", "site", "sample_bots", "tournaments")  # as arena/resources.py DATA_DIRS
JUNK = shutil.ignore_patterns("__pycache__", "*.pyc", ".*", "node_modules")


class BuildWithData(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        for name in DATA_DIRS:
            target = Path(self.build_lib) / "arena" / "_data" / name
            shutil.rmtree(target, ignore_errors=True)  # a stale build/ from an earlier run
            shutil.copytree(ROOT / name, target, ignore=JUNK)


setup(cmdclass={"build_py": BuildWithData})
