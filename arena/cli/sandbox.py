"""``arena sandbox ...``: commands that prepare a host's sandbox backends (the docker runtime image).

Kept apart from ``arena/cli/main.py`` so that backend chores do not crowd the match and tournament commands, and out of
the ``arena.sandbox`` package, which knows processes and containers, not command lines.
"""

from __future__ import annotations

import click

from arena.cli.common import CONTEXT, ExitCode, emit_json, fail, json_option, require_extra


@click.group("sandbox", context_settings=CONTEXT)
def sandbox_group() -> None:
    """Prepare this host's sandbox backends."""


@sandbox_group.command("build-image")
@click.option("--tag", default=None, help="Image name and tag (default: the docker backend's runtime image).")
@json_option("Print what was built as one JSON object.")
def build_image(tag: str | None, as_json: bool) -> None:
    """Build the docker backend's runtime image locally, with no registry and no network.

    The image holds only empty mount points and the host's top-level symlinks; at run time the host's /usr and a
    few /etc files are bound into it read-only, so bots use this host's interpreters (python3, node, ...).
    """
    require_extra("docker", "arena sandbox build-image")
    from arena.sandbox.docker_image import RUNTIME_IMAGE, build_runtime_image, connect, runtime_mounts

    tag = tag or RUNTIME_IMAGE
    image_id = build_runtime_image(connect(), tag)
    binds = [mount["Target"] for mount in runtime_mounts()]
    if as_json:
        emit_json({"image": tag, "id": image_id, "read_only_binds": binds})
        return
    click.echo(f"built {tag} ({image_id}): an image of empty mount points, imported from a tarball made here")
    click.echo(f"bots in it see these host paths, read-only: {', '.join(binds)}")


@sandbox_group.command("build-views")
@json_option("Print what was built as one JSON object.")
def build_views(as_json: bool) -> None:
    """Build the runtime image that gives every sandbox private views of /usr and its bot (docs/SECURITY.md,
    "Earlier matches"): once per host and state of /usr, a minute or more, and as much RAM as /usr takes. Until it
    is built, sandboxes share the kernel's caches of /usr, through which a bot can leave bits for a later match's."""
    import time

    from arena.sandbox import views

    works, reason = views.status()
    if not works:
        fail(f"private views cannot work on this host: {reason}", ExitCode.FAILED)
    started = time.monotonic()
    image = views.runtime_image()
    size = image.stat().st_size
    if as_json:
        emit_json({"image": str(image), "bytes": size, "seconds": round(time.monotonic() - started, 1)})
        return
    click.echo(f"runtime image {image}: {size / 2**30:.2f} GiB in RAM, ready in {time.monotonic() - started:.1f} s; "
               "every sandbox of this host now mounts its own view of it (arena doctor: private_caches)")
