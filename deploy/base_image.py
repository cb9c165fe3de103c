"""Make the server image's base from this machine's own Python, with no registry and no network.

Where no image registry can be reached, ``FROM python:3.11-slim`` cannot be pulled. This script imports a base
image instead, the way ``arena sandbox build-image`` imports the bots' runtime image: from a tarball made here. It
holds this interpreter (under /usr/local, as the official python images have it), its standard library (without its
tests and Tk), the installed distributions that arena and its ``server`` extra need (and theirs), ``/bin/sh``,
bubblewrap, and every shared library those load (``ldd``). arena itself is not in it: the Dockerfile copies the
repository. Then::

    python3 deploy/base_image.py                     # prints {"image": "arena-server-base:local", ...}
    docker build -f deploy/Dockerfile --build-arg BASE=arena-server-base:local -t arena-server .

Run it with the Python that has arena's dependencies installed (the project's venv). It prints one JSON object.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import sysconfig
import tarfile
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
TAG = "arena-server-base:local"
LOCAL = "/usr/local"
LAYER_LABEL = "arena.server-base.layer"
STDLIB_SKIP = {"test", "idlelib", "tkinter", "turtledemo", "site-packages", "lib2to3", "ensurepip"}
TOOLS = ("/usr/bin/sh", "/usr/bin/dash", "/usr/bin/bash", "/usr/bin/true", "/usr/bin/env", "/usr/bin/setpriv",
         "/usr/bin/bwrap")
"""A shell for the Dockerfile's steps; bash, true and setpriv, which the process sandbox runs with bwrap."""
TOP_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
LDD_LINE = re.compile(r"(?:=>\s*)?(/\S+)\s+\(0x")


def requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [Requirement(text) for text in (*project["dependencies"], *project["optional-dependencies"]["server"])]


def distributions() -> dict[str, metadata.Distribution]:
    """The installed distributions that arena's requirements need, transitively (markers evaluated here)."""
    found: dict[str, metadata.Distribution] = {}
    todo = [(requirement, "") for requirement in requirements()]
    while todo:
        requirement, extra = todo.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": extra}):
            continue
        key = requirement.name.lower().replace("_", "-")
        try:
            dist = metadata.distribution(requirement.name)
        except metadata.PackageNotFoundError:
            raise SystemExit(f"{requirement.name} is not installed in {sys.prefix}: run this with the venv that "
                             f"has arena[server] installed") from None
        wanted = [""] + sorted(requirement.extras)
        if key in found and not requirement.extras:
            continue
        found[key] = dist
        for text in dist.requires or ():
            for chosen in wanted:
                todo.append((Requirement(text), chosen))
    return found


def interpreter_files() -> dict[str, Path]:
    """The interpreter, libpython and the standard library, by their names in the image: under /usr/local, as in
    the official python images (the bots' sandbox binds /usr, so the bots find python3 there too), with libpython in
    the system's library directory (the interpreter's RUNPATH names this machine's prefix, absent in the image)."""
    prefix = Path(sys.base_prefix)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    multiarch = sysconfig.get_config_var("MULTIARCH") or "x86_64-linux-gnu"
    files = {f"{LOCAL}/bin/{version}": Path(os.path.realpath(sys.executable))}
    library = sysconfig.get_config_var("INSTSONAME")
    if library and (prefix / "lib" / library).is_file():  # a shared build (pyenv's); Debian's links it in
        files[f"/usr/lib/{multiarch}/{library}"] = prefix / "lib" / library
    stdlib = prefix / "lib" / version
    for path in sorted(stdlib.rglob("*")):
        parts = path.relative_to(stdlib).parts
        if parts and (parts[0] in STDLIB_SKIP or parts[0].startswith("config-")):
            continue
        if path.is_file() and not path.is_symlink():
            files[f"{LOCAL}/lib/{version}/{path.relative_to(stdlib)}"] = path
    return files


def shared_libraries(paths: list[Path]) -> set[Path]:
    """Every library the ELF files among ``paths`` load, as ``ldd`` resolves them here."""
    found: set[Path] = set()
    for path in paths:
        if path.is_symlink() or not path.is_file():
            continue
        with open(path, "rb") as head:
            if head.read(4) != b"\x7fELF":
                continue
        listing = subprocess.run(["ldd", str(path)], capture_output=True, text=True, check=False).stdout
        found.update(Path(match[1]) for match in map(LDD_LINE.search, listing.splitlines()) if match)
    return found


def layer() -> tuple[bytes, dict[str, int]]:
    """The base image's only layer, and counts of what went in."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = Path(f"{LOCAL}/lib/{version}/site-packages")
    entries = interpreter_files()  # the name in the image: the file here
    dists = distributions()
    for dist in dists.values():
        base = Path(str(dist.locate_file("")))
        for file in dist.files or ():
            here = Path(str(dist.locate_file(file)))
            if file.parts[0] == ".." or not here.is_file():
                continue  # console scripts and the like, outside site-packages
            entries[str(site / here.relative_to(base))] = here
    for tool in TOOLS:
        if os.path.exists(tool):
            entries[tool] = Path(tool)
    for library in shared_libraries(list(entries.values())):
        if not library.is_relative_to(sys.base_prefix):  # libpython: in the image already
            entries[str(library)] = library
    buffer = io.BytesIO()
    made: set[str] = set()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        def directory(name: str, mode: int = 0o755) -> None:
            if name in made or name in ("", "."):
                return
            directory(os.path.dirname(name))
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, mode
            tar.addfile(info)
            made.add(name)

        def link(name: str, target: str) -> None:
            directory(os.path.dirname(name))
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
            made.add(name)

        for top in TOP_LINKS:  # merged /usr: /bin, /lib, /lib64 are links here, and so in the image
            if os.path.islink(top):
                link(top.lstrip("/"), os.readlink(top))
        for name, here in sorted(entries.items()):
            # A path through a linked directory (/lib/x86_64-linux-gnu/...) goes in at its real place.
            real_dir = os.path.realpath(os.path.dirname(name))
            target = os.path.join(real_dir, os.path.basename(name)).lstrip("/")
            if target in made:
                continue
            directory(os.path.dirname(target))
            if here.is_symlink():
                link(target, os.readlink(here))
                resolved = Path(os.path.realpath(here))
                real = os.path.realpath(resolved).lstrip("/")
                if real not in made:
                    directory(os.path.dirname(real))
                    tar.add(resolved, real, recursive=False)
                    made.add(real)
                continue
            tar.add(here, target, recursive=False)
            made.add(target)
        link(f"{LOCAL[1:]}/bin/python3", version)
        link(f"{LOCAL[1:]}/bin/python", version)
        directory("tmp", 0o1777)
        for name, text in (("etc/passwd", "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"),
                           ("etc/group", "root:x:0:\nnogroup:x:65534:\n")):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            directory("etc")
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue(), {"files": len(made), "distributions": len(dists)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tag", default=TAG)
    tag = parser.parse_args().tag
    import docker  # type: ignore[import-untyped]  # the engine's SDK, one of arena's dependencies
    import docker.errors  # type: ignore[import-untyped]

    data, counts = layer()
    digest = hashlib.sha256(data).hexdigest()[:16]
    client = docker.from_env(timeout=600)
    repository, _, version = tag.partition(":")
    try:
        image = client.images.get(tag)
    except docker.errors.ImageNotFound:
        image = None
    imported = image is None or image.labels.get(LAYER_LABEL) != digest
    if imported:  # the same layer again is not imported again: each import would leave an image behind
        client.api.import_image_from_data(data, repository=repository, tag=version or "latest", changes=[
            "ENV PATH=/usr/local/bin:/usr/bin:/bin", "ENV LANG=C.UTF-8", f"LABEL {LAYER_LABEL}={digest}"])
        image = client.images.get(tag)
    assert image is not None
    print(json.dumps({"image": tag, "id": image.id, "imported": imported, "layer_bytes": len(data), **counts}))


if __name__ == "__main__":
    main()
