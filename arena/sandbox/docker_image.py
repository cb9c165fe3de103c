"""The docker backend's engine and its runtime image: a client of the engine (:func:`connect`), and the local image
bots run in by default, imported from a tarball made here (no registry, no network): empty mount points and the
host's top-level symlinks, into which :func:`runtime_mounts` binds the host's runtime read-only (see
arena/sandbox/docker.py)."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile

import docker  # type: ignore[import-untyped]
import docker.errors  # type: ignore[import-untyped]
import requests.exceptions
from docker.types import Mount  # type: ignore[import-untyped]

from arena.sandbox import SandboxError
from arena.sandbox.common import RUNTIME_DIRS, RUNTIME_ETC, RUNTIME_EXTRA_ETC

RUNTIME_IMAGE = "arena-runtime:1"
"""The default image: built locally by :func:`build_runtime_image`, never pulled."""
LAYOUT_LABEL = "arena.runtime.layout"
"""A hash of the runtime image's layer, so that an up-to-date image is not rebuilt."""
NO_BIND = ("/sbin",)
"""Never bound from the host: the engine mounts its init at /sbin/docker-init, which a read-only bind would hide."""
API_TIMEOUT_S = 30
ENGINE_ERRORS = (docker.errors.DockerException, requests.exceptions.RequestException, OSError)
"""What a down or misbehaving engine raises through the SDK (APIError and NotFound are DockerExceptions)."""


def runtime_mounts(root: str = "") -> list[Mount]:
    """Read-only binds of the host's runtime into the runtime image (top-level symlinks are in the image), from the
    host or from ``root``, a container's private mount of the runtime image (:mod:`arena.sandbox.views`, which
    holds the /etc files with their symlinks resolved)."""
    mounts = []
    for path in RUNTIME_DIRS:
        if path in NO_BIND or os.path.islink(path) or not os.path.isdir(path):
            continue
        mounts.append(Mount(path, root + path, type="bind", read_only=True))
    for path in (*RUNTIME_ETC, *RUNTIME_EXTRA_ETC):
        if os.path.exists(path):
            mounts.append(Mount(path, root + path if root else os.path.realpath(path), type="bind", read_only=True))
    return mounts


def runtime_image_tar() -> bytes:
    """The runtime image's only layer: mount points, the host's top-level symlinks (merged /usr), and an
    /etc/passwd that names the bots' uid. No file of the host is copied into it."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        def add_dir(name: str, mode: int = 0o755) -> None:
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, mode
            tar.addfile(info)

        def add_file(name: str, text: str) -> None:
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))

        directories = {"usr", "etc", "bot", "protocol", "proc", "dev", "sys"}
        for path in RUNTIME_DIRS:
            name = path.lstrip("/")
            if path not in NO_BIND and os.path.islink(path):
                info = tarfile.TarInfo(name)
                info.type, info.linkname = tarfile.SYMTYPE, os.readlink(path)
                tar.addfile(info)
            elif path in NO_BIND or os.path.isdir(path):
                directories.add(name)
        for name in sorted(directories):
            add_dir(name)
        add_dir("tmp", 0o1777)
        add_file("etc/passwd", "root:x:0:0:root:/nonexistent:/bin/false\n"
                               "nobody:x:65534:65534:nobody:/tmp:/bin/false\n")
        add_file("etc/group", "root:x:0:\nnogroup:x:65534:\n")
    return buffer.getvalue()


def connect(base_url: str | None = None) -> docker.DockerClient:
    """A client of the engine at ``base_url`` (default: the environment, DOCKER_HOST or the local socket)."""
    try:
        if base_url is None:
            client = docker.from_env(timeout=API_TIMEOUT_S)
        else:
            client = docker.DockerClient(base_url=base_url, timeout=API_TIMEOUT_S)
        client.ping()
    except ENGINE_ERRORS as error:
        where = base_url or os.environ.get("DOCKER_HOST") or "the local socket"
        raise SandboxError(f"no Docker engine answers at {where}: {error}") from error
    return client


def build_runtime_image(client: docker.DockerClient | None = None, tag: str = RUNTIME_IMAGE) -> str:
    """Import the runtime image from a tarball made here (no registry, no network); return its id.

    An image of the same layout already under ``tag`` is kept: rebuilding on every CI run would pile up images.
    """
    client = client or connect()
    repository, _, version = tag.partition(":")
    layer = runtime_image_tar()
    layout = hashlib.sha256(layer).hexdigest()[:16]
    try:
        try:
            existing = client.images.get(tag)
            if existing.labels.get(LAYOUT_LABEL) == layout:
                return str(existing.id)
        except docker.errors.ImageNotFound:
            pass
        client.api.import_image_from_data(layer, repository=repository, tag=version or "latest",
                                          changes=[f"LABEL {LAYOUT_LABEL}={layout}"])
        return str(client.images.get(tag).id)
    except ENGINE_ERRORS as error:
        raise SandboxError(f"cannot build the runtime image {tag}: {error}") from error
