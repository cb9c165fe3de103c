"""The server's image (deploy/Dockerfile) builds from the repository alone and serves a league on loopback.

No registry is reachable here, so the base is made from this machine's Python by deploy/base_image.py (as
``arena sandbox build-image`` makes the bots' runtime image) and passed as the Dockerfile's ``BASE``; the build runs
with no network. The container publishes its port on 127.0.0.1 only, with the image's own league config (three
seats, two house bots: it waits for authors' bots, so it needs no sandbox privileges to serve). deploy/compose.yaml
is checked by the compose this machine has and brought up from the same base (in this module: the two tests would
otherwise make the base at once on two workers).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support.docker import require_docker
from tests.support.server import answered, free_port, require_tool

ROOT = Path(__file__).resolve().parents[2]


def docker(*args: str, timeout: float = 600) -> str:
    done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"docker {' '.join(args[:2])}: {done.stderr[-3000:]}"
    return done.stdout.strip()


@pytest.mark.slow
@pytest.mark.long
def test_the_server_image_builds_from_the_repository_and_serves_a_league() -> None:
    require_docker()
    made = subprocess.run([sys.executable, str(ROOT / "deploy" / "base_image.py")], capture_output=True, text=True,
                          timeout=600, check=False)
    assert made.returncode == 0, made.stderr[-3000:]
    base = json.loads(made.stdout)["image"]
    image = f"arena-server-test:{secrets.token_hex(4)}"
    docker("build", "--quiet", "--network", "none", "--build-arg", f"BASE={base}", "-f",
           str(ROOT / "deploy" / "Dockerfile"), "-t", image, str(ROOT))
    port = free_port()
    container = ""
    try:
        container = docker("run", "--detach", "--publish", f"127.0.0.1:{port}:8000", image, timeout=120)
        health = answered(f"http://127.0.0.1:{port}/healthz", 90, lambda: docker("logs", container)[-3000:])
        assert health.text == "ok\n"
        home = httpx.get(f"http://127.0.0.1:{port}/", timeout=10)
        assert home.status_code == 200 and "league" in home.text
        league = httpx.get(f"http://127.0.0.1:{port}/api/v1/league", timeout=10).json()
        # "running" while it publishes its first site, before it finds it has no bots yet
        assert league["league"] == "league" and league["state"] in ("starting", "running", "waiting for bots")
        logs = subprocess.run(["docker", "logs", container], capture_output=True, text=True, timeout=60,
                              check=False).stderr.splitlines()
        records = [json.loads(line) for line in logs if line.startswith("{")]
        assert any(record["logger"] == "uvicorn.access" and record["path"] == "/healthz" for record in records)
    finally:
        if container:
            subprocess.run(["docker", "rm", "--force", container], capture_output=True, timeout=120, check=False)
        subprocess.run(["docker", "image", "rm", "--force", image], capture_output=True, timeout=120, check=False)


def compose_command() -> tuple[list[str], bool]:
    """How compose runs here, and whether it is v2 (the file's ``cgroup:`` key is v2's; v1 rejects it)."""
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True,
                                                 timeout=60, check=False).returncode == 0:
        return ["docker", "compose"], True
    return [require_tool("docker-compose", "docker-compose-v2, or docker-compose for v1")], False


@pytest.mark.slow
@pytest.mark.long
def test_compose_file_is_valid_and_serves_a_league(tmp_path: Path) -> None:
    require_docker()
    compose, v2 = compose_command()
    shipped = ROOT / "deploy" / "compose.yaml"
    port = free_port()
    env = {**os.environ, "ARENA_PORT": str(port), "ARENA_IMAGE": f"arena-compose-test:{secrets.token_hex(4)}"}
    project = ["-p", f"arena-test-{secrets.token_hex(4)}", "--project-directory", str(ROOT / "deploy")]
    if v2:
        used = shipped
    else:
        refused = subprocess.run([*compose, *project, "-f", str(shipped), "config"], capture_output=True, text=True,
                                 timeout=120, check=False, env=env)
        assert refused.returncode != 0 and "'cgroup'" in refused.stderr, refused.stderr  # v2's key, as it says
        used = tmp_path / "compose.yaml"
        used.write_text("".join(line for line in shipped.read_text().splitlines(keepends=True)
                                if not line.lstrip().startswith(("cgroup:", "# drop the line"))))
    made = subprocess.run([sys.executable, str(ROOT / "deploy" / "base_image.py")], capture_output=True, text=True,
                          timeout=600, check=False)
    assert made.returncode == 0, made.stderr[-3000:]
    env["ARENA_BASE"] = json.loads(made.stdout)["image"]
    run = [*compose, *project, "-f", str(used)]
    config = subprocess.run([*run, "config"], capture_output=True, text=True, timeout=120, check=False, env=env)
    assert config.returncode == 0, config.stderr
    assert f"127.0.0.1:{port}:8000" in config.stdout and env["ARENA_BASE"] in config.stdout
    try:
        up = subprocess.run([*run, "up", "-d", "--build"], capture_output=True, text=True, timeout=900, check=False,
                            env=env)
        assert up.returncode == 0, up.stderr[-3000:]
        ready = answered(f"http://127.0.0.1:{port}/readyz", 120, lambda: subprocess.run(
            [*run, "logs"], capture_output=True, text=True, timeout=60, check=False, env=env).stdout[-3000:])
        assert ready.json()["phase"] in ("running", "waiting")  # the image's league: three seats, two house bots
        assert httpx.get(f"http://127.0.0.1:{port}/api/v1/league", timeout=10).json()["league"] == "league"
        stopped = subprocess.run([*run, "stop"], capture_output=True, text=True, timeout=180, check=False, env=env)
        assert stopped.returncode == 0, stopped.stderr[-3000:]
        state = subprocess.run([*run, "ps", "-q", *(["-a"] if v2 else [])], capture_output=True, text=True, timeout=60, check=False, env=env)
        exited = subprocess.run(["docker", "inspect", "--format", "{{.State.ExitCode}}", *state.stdout.split()],
                                capture_output=True, text=True, timeout=60, check=False)
        assert exited.stdout.split() == ["0"], exited  # docker stop's SIGTERM: a clean stop
    finally:
        subprocess.run([*run, "down", "--volumes", "--rmi", "all"], capture_output=True, timeout=300, check=False,
                       env=env)
