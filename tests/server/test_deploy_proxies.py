"""deploy/'s proxy files, run by the tools they are for, where this machine has them: nginx checks ``nginx.conf``
(``nginx -t``), Caddy ``Caddyfile`` (``caddy validate``), and each then fronts a real ``arena serve`` on loopback,
where ``/`` passes and the operator's endpoints (``/metrics``, ``/readyz``) answer only from the proxy's own host
(compose.yaml: tests/server/test_deploy.py).

Each file is run as shipped but for what only a deployment knows: its ports (free ones on loopback), its
certificates (nginx: a self-signed one made here; Caddy: its own local CA, no ACME) and the league's port. A
client outside is a connection from 127.0.0.2 (the files allow 127.0.0.1 only). A missing tool skips its test,
saying which package gives it.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.support.server import Server, free_port, league_server, require_tool

pytestmark = [pytest.mark.slow, pytest.mark.long]

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
HOST = "league.example.org"
@contextmanager
def league(root: Path) -> Iterator[Server]:
    """A real ``arena serve`` on loopback whose league waits for bots (one house bot, two seats)."""
    # the proxy is named, as docs/SERVER.md asks
    with league_server(root, "proxied", server="server:\n  trusted_proxies: [127.0.0.1]\n").running() as server:
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
    require_tool("openssl", "openssl")
    key, cert = where / "privkey.pem", where / "fullchain.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", f"/CN={HOST}",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True, timeout=60)
    return key, cert


def test_nginx_conf_passes_nginx_t_and_fronts_a_server(tmp_path: Path) -> None:
    nginx = require_tool("nginx", "nginx")
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
    caddy = require_tool("caddy", "caddy")
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
