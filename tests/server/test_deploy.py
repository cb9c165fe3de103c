"""The server's image (deploy/Dockerfile) builds from the repository alone and serves a league on loopback.

No registry is reachable here, so the base is made from this machine's Python by deploy/base_image.py (as
``arena sandbox build-image`` makes the bots' runtime image) and passed as the Dockerfile's ``BASE``; the build runs
with no network. The container publishes its port on 127.0.0.1 only, with the image's own league config (three
seats, two house bots: it waits for authors' bots, so it needs no sandbox privileges to serve).
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.support.docker import require_docker
from tests.support.server import free_port

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
        deadline = time.monotonic() + 90
        while True:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5)
                if health.status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, docker("logs", container)[-3000:]
            time.sleep(0.5)
        assert health.text == "ok\n"
        home = httpx.get(f"http://127.0.0.1:{port}/", timeout=10)
        assert home.status_code == 200 and "league" in home.text
        league = httpx.get(f"http://127.0.0.1:{port}/api/v1/league", timeout=10).json()
        assert league["league"] == "league" and league["state"] in ("starting", "waiting for bots")
        logs = subprocess.run(["docker", "logs", container], capture_output=True, text=True, timeout=60,
                              check=False).stderr.splitlines()
        records = [json.loads(line) for line in logs if line.startswith("{")]
        assert any(record["logger"] == "uvicorn.access" and record["path"] == "/healthz" for record in records)
    finally:
        if container:
            subprocess.run(["docker", "rm", "--force", container], capture_output=True, timeout=120, check=False)
        subprocess.run(["docker", "image", "rm", "--force", image], capture_output=True, timeout=120, check=False)
