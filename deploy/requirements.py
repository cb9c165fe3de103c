"""Install what arena and its ``server`` extra need and this Python lacks (the Dockerfile's one pip step).

It reads the requirements from pyproject.toml, so the image never lists them a second time. A base image that has
them all already (one made by deploy/base_image.py, with no network) installs nothing; python:3.11-slim installs
them from the package index. Prints what it installs.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def missing() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["server"]]
    absent = []
    for text in wanted:
        name = text.split(";")[0].split("[")[0]
        for mark in "<>=!~ ":
            name = name.split(mark)[0]
        try:
            metadata.version(name)
        except metadata.PackageNotFoundError:
            absent.append(text)
    return absent


if __name__ == "__main__":
    needed = missing()
    print(f"installing: {', '.join(needed) or 'nothing (the base has every requirement)'}", flush=True)
    if needed:
        subprocess.run([sys.executable, "-m", "pip", "install", "--no-cache-dir", *needed], check=True)
