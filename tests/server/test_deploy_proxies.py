"""deploy/'s proxy and compose files, run by the tools they are for, where this machine has them: nginx checks
``nginx.conf`` (``nginx -t``), Caddy ``Caddyfile`` (``caddy validate``), and each then fronts a real ``arena serve``
on loopback, where ``/`` passes and the operator's endpoints (``/metrics``, ``/readyz``) answer only from the
proxy's own host; compose checks and runs ``compose.yaml`` with the image built here.

Each file is run as shipped but for what only a deployment knows: its ports (free ones on loopback), its
certificates (nginx: a self-signed one made here; Caddy: its own local CA, no ACME) and the league's port. A
client outside is a connection from 127.0.0.2 (the files allow 127.0.0.1 only). A missing tool skips its test,
saying which package gives it.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.support.docker import require_docker
from tests.support.server import SAMPLES, Server, free_port

pytestmark = [pytest.mark.slow, pytest.mark.long]

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
HOST = "league.example.org"
CONFIG = f"""\
league:
  name: proxied
  bots: ["registry:*", {SAMPLES / "greedy"}]
  players: 2
  rules: {{threshold: 30}}
  workers: 1
server:
  trusted_proxies: [127.0.0.1]
"""


def need(tool: str, package: str) -> str:
    found = shutil.which(tool)
    if found is None:
        pytest.skip(f"{tool} is not installed here (apt-get install {package})")
    return found


@contextmanager
def league(root: Path) -> Iterator[Server]:
    """A real ``arena serve`` on loopback whose league waits for bots (one house bot, two seats)."""
    config = root / "league.yaml"
    config.write_text(CONFIG)
    with Server(root, config, root / "results" / "arena.db", free_port()).running() as server:
        yield server


@contextmanager
def running(command: list[str], port: int, log: Path, env: dict[str, str] | None = None) -> Iterator[None]:
    """``command`` in the foreground, until it listens on ``port``; stopped (SIGTERM) at the end."""
    with open(log, "ab") as out:
        process = subprocess.Popen(command, stdout=out, stderr=out, env=env)
    try:
        deadline = time.monotonic() + 60
        while not listening(port):
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
        yield
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def client(source: str) -> httpx.Client:
    """A client whose connections come from ``source`` (a loopback address), for the proxy's own certificate."""
    return httpx.Client(transport=httpx.HTTPTransport(local_address=source, verify=False), verify=False,
                        timeout=30, headers={"Host": HOST})


def assert_proxied(https: int) -> None:
    """``/`` passes the proxy from anywhere; ``/metrics`` and ``/readyz`` only from the proxy's host."""
    url = f"https://127.0.0.1:{https}"
    with client("127.0.0.2") as outside, client("127.0.0.1") as monitoring:
        home = outside.get(f"{url}/")
        assert home.status_code == 200 and "proxied" in home.text, home.text[:500]
        assert outside.get(f"{url}/api/league").json()["league"] == "proxied"
        for path in ("/metrics", "/readyz"):
            refused = outside.get(f"{url}{path}")
            assert refused.status_code == 403, (path, refused.status_code, refused.text[:300])
        metrics = monitoring.get(f"{url}/metrics")
        assert metrics.status_code == 200 and "arena_league_matches_played_total" in metrics.text
        assert monitoring.get(f"{url}/readyz").status_code in (200, 503)  # answered by the server, not the proxy


def self_signed(where: Path) -> tuple[Path, Path]:
    need("openssl", "openssl")
    key, cert = where / "privkey.pem", where / "fullchain.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", f"/CN={HOST}",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True, timeout=60)
    return key, cert


def test_nginx_conf_passes_nginx_t_and_fronts_a_server(tmp_path: Path) -> None:
    nginx = need("nginx", "nginx")
    key, cert = self_signed(tmp_path)
    https, http = free_port(), free_port()
    with league(tmp_path) as server:
        site = (DEPLOY / "nginx.conf").read_text()
        for shipped, here in ((f"/etc/letsencrypt/live/{HOST}/fullchain.pem", str(cert)),
                              (f"/etc/letsencrypt/live/{HOST}/privkey.pem", str(key)),
                              ("listen 443 ssl;", f"listen 127.0.0.1:{https} ssl;"),
                              ("listen 80;", f"listen 127.0.0.1:{http};"),
                              ("http://127.0.0.1:8000", f"http://127.0.0.1:{server.port}")):
            assert shipped in site, shipped
            site = site.replace(shipped, here)
        (tmp_path / "site.conf").write_text(site)
        # The file is a server block for sites-enabled/: nginx.conf's own frame around it, run as this user.
        user = "user root;\n" if os.geteuid() == 0 else ""
        (tmp_path / "nginx.conf").write_text(
            f"{user}daemon off;\npid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\nevents {{}}\n"
            f"http {{\n  access_log {tmp_path}/access.log;\n  include {tmp_path}/site.conf;\n}}\n")
        command = [nginx, "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")]
        checked = subprocess.run([*command, "-t"], capture_output=True, text=True, timeout=60, check=False)
        assert checked.returncode == 0, checked.stderr
        with running(command, https, tmp_path / "nginx.log"):
            assert_proxied(https)
            redirect = httpx.get(f"http://127.0.0.1:{http}/standings", headers={"Host": HOST}, timeout=30)
            assert (redirect.status_code, redirect.headers["location"]) == (301, f"https://{HOST}/standings")
        assert server.process is not None and server.process.poll() is None


def test_caddyfile_passes_caddy_validate_and_fronts_a_server(tmp_path: Path) -> None:
    caddy = need("caddy", "caddy")
    env = {**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data"),
           "XDG_CONFIG_HOME": str(tmp_path / "config")}
    shipped = DEPLOY / "Caddyfile"
    checked = subprocess.run([caddy, "validate", "--config", str(shipped), "--adapter", "caddyfile"],
                             capture_output=True, text=True, timeout=60, check=False, env=env)
    assert checked.returncode == 0, checked.stderr[-3000:]
    https, http = free_port(), free_port()
    with league(tmp_path) as server:
        site = shipped.read_text()
        assert "127.0.0.1:8000" in site
        # Global options for a machine with no ACME: Caddy's own CA, its ports, no admin endpoint.
        (tmp_path / "Caddyfile").write_text(
            f"{{\n\tadmin off\n\thttp_port {http}\n\thttps_port {https}\n\tlocal_certs\n\tskip_install_trust\n"
            f"\tdefault_sni {HOST}\n}}\n\n" + site.replace("127.0.0.1:8000", f"127.0.0.1:{server.port}"))
        with running([caddy, "run", "--config", str(tmp_path / "Caddyfile"), "--adapter", "caddyfile"], https,
                     tmp_path / "caddy.log", env):
            assert_proxied(https)
        assert server.process is not None and server.process.poll() is None


def compose_command() -> tuple[list[str], bool]:
    """How compose runs here, and whether it is v2 (the file's ``cgroup:`` key is v2's; v1 rejects it)."""
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True,
                                                 timeout=60, check=False).returncode == 0:
        return ["docker", "compose"], True
    return [need("docker-compose", "docker-compose-v2, or docker-compose for v1")], False


def test_compose_file_is_valid_and_serves_a_league(tmp_path: Path) -> None:
    require_docker()
    compose, v2 = compose_command()
    shipped = DEPLOY / "compose.yaml"
    port = free_port()
    env = {**os.environ, "ARENA_PORT": str(port), "ARENA_IMAGE": f"arena-compose-test:{secrets.token_hex(4)}"}
    project = ["-p", f"arena-test-{secrets.token_hex(4)}", "--project-directory", str(DEPLOY)]
    if v2:
        used = shipped
    else:
        refused = subprocess.run([*compose, *project, "-f", str(shipped), "config"], capture_output=True, text=True,
                                 timeout=120, check=False, env=env)
        assert refused.returncode != 0 and "'cgroup'" in refused.stderr, refused.stderr  # v2's key, as it says
        used = tmp_path / "compose.yaml"
        used.write_text("".join(line for line in shipped.read_text().splitlines(keepends=True)
                                if not line.lstrip().startswith(("cgroup:", "# drop the line"))))
    made = subprocess.run([sys.executable, str(DEPLOY / "base_image.py")], capture_output=True, text=True,
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
        deadline = time.monotonic() + 120
        while True:
            try:
                ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=5)
                if ready.status_code == 200:
                    break
            except httpx.TransportError:
                pass
            logs = subprocess.run([*run, "logs"], capture_output=True, text=True, timeout=60, check=False, env=env)
            assert time.monotonic() < deadline, logs.stdout[-3000:]
            time.sleep(1)
        assert ready.json()["phase"] == "waiting"  # the image's league: three seats, two house bots
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
