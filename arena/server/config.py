"""The league server's config file: its ``league:`` section (arena/run/config.py's :class:`LeagueConfig`) and the
optional ``server:`` settings (uploads, the check's sandbox, the limits of a build)."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from arena.registry.build import DEFAULT_BUILD_LIMITS, BuildLimits
from arena.run.config import ConfigError, LeagueConfig, parse_league, section
from arena.sandbox import BACKENDS as SANDBOXES
from arena.server.admission import AdmissionLimits
from arena.server.guard import ConnectionLimits
from arena.server.sessions import LoginLimits
from arena.yamlfile import excerpt, load_yaml

SERVER_KEYS = {"uploads_per_hour", "max_upload_kb", "check_sandbox", "build_seconds", "build_memory_mb",
               "build_scratch_mb", "max_connections", "header_timeout_s", "body_timeout_s", "send_timeout_s",
               "listen_backlog", "upload_queue", "attempts_per_hour", "logins_per_hour", "login_attempts_per_hour",
               "trusted_proxies"}


@dataclass(frozen=True)
class ServeConfig:
    """A server config file: the ``league:`` and the optional ``server:`` settings."""

    league: LeagueConfig
    uploads_per_hour: int = 10
    max_upload_bytes: int = 5 << 20
    check_sandbox: str = "process"
    build: BuildLimits = DEFAULT_BUILD_LIMITS
    """The limits of an upload's ``build:`` (``server: build_seconds, build_memory_mb, build_scratch_mb``)."""
    connections: ConnectionLimits = ConnectionLimits()
    """``server: max_connections, header_timeout_s, body_timeout_s, send_timeout_s, listen_backlog``."""
    admission: AdmissionLimits = AdmissionLimits()
    """``server: upload_queue, attempts_per_hour`` (its ``slots`` are the host's check slots)."""
    logins: LoginLimits = LoginLimits()
    """``server: logins_per_hour, login_attempts_per_hour``."""
    trusted_proxies: tuple[str, ...] = ()
    """``server: trusted_proxies``: the addresses (or networks) whose ``X-Forwarded-For`` and ``-Proto`` are
    believed; none by default, so no client can pick the address its login attempts are counted under."""


def load_serve_config(path: Path, default_registry: Path) -> ServeConfig:
    """Read a server config (``league:`` and ``server:``), or raise :class:`ConfigError` naming the key."""
    try:
        data = load_yaml(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise ConfigError(f"{path}: cannot read the config: {error}") from None

    def bad(key: str, expected: str, value: object) -> ConfigError:
        return ConfigError(f"{path}: {key}: expected {expected}, got {excerpt(value)}")

    if not isinstance(data, Mapping) or not isinstance(data.get("league"), Mapping):
        raise ConfigError(f"{path}: league: missing (a server config is a mapping with a league: section and an "
                          "optional server: section)")
    unknown = sorted(str(key) for key in data if key not in ("league", "server"))
    if unknown:
        raise ConfigError(f"{path}: {unknown[0]}: unknown key (known: league, server)")
    league = parse_league(data["league"], path, default_registry)
    server = section(data, "server")
    if not isinstance(server, Mapping):
        raise bad("server", "a mapping such as {uploads_per_hour: 10, max_upload_kb: 5120}", server)
    for key in server:
        if key not in SERVER_KEYS:
            raise bad(f"server.{key}", "one of " + ", ".join(sorted(SERVER_KEYS)), key)
    uploads = server.get("uploads_per_hour", 10)
    if type(uploads) is not int or not 1 <= uploads <= 100_000:  # attempts_per_hour, at least this, is at most that
        raise bad("server.uploads_per_hour", "an integer from 1 to 100000", uploads)
    upload_kb = server.get("max_upload_kb", 5120)
    if type(upload_kb) is not int or not 1 <= upload_kb <= 1 << 20:
        raise bad("server.max_upload_kb", "an integer from 1 to 1048576", upload_kb)
    check_sandbox = server.get("check_sandbox", league.sandbox)
    if check_sandbox not in SANDBOXES:
        raise bad("server.check_sandbox", "one of " + ", ".join(SANDBOXES), check_sandbox)
    seconds = server.get("build_seconds", DEFAULT_BUILD_LIMITS.seconds)
    if type(seconds) not in (int, float) or not 1 <= seconds <= 3600:
        raise bad("server.build_seconds", "a number of seconds from 1 to 3600", seconds)
    memory = server.get("build_memory_mb", DEFAULT_BUILD_LIMITS.memory_mb)
    if type(memory) is not int or not 64 <= memory <= 16384:
        raise bad("server.build_memory_mb", "an integer from 64 to 16384", memory)
    scratch = server.get("build_scratch_mb", DEFAULT_BUILD_LIMITS.scratch_mb)
    if type(scratch) is not int or not 16 <= scratch <= 65536:
        raise bad("server.build_scratch_mb", "an integer from 16 to 65536", scratch)
    build = BuildLimits(seconds=float(seconds), memory_mb=memory, scratch_mb=scratch)

    def number(key: str, default: float, low: float, high: float, integer: bool = True) -> float:
        value = server.get(key, default)
        if type(value) not in ((int,) if integer else (int, float)) or not low <= value <= high:
            raise bad(f"server.{key}", f"{'an integer' if integer else 'a number'} from {low:g} to {high:g}", value)
        return value  # type: ignore[no-any-return]

    default_conn, default_adm = ConnectionLimits(), AdmissionLimits()
    connections = ConnectionLimits(
        max_connections=int(number("max_connections", default_conn.max_connections, 8, 100_000)),
        header_timeout_s=float(number("header_timeout_s", default_conn.header_timeout_s, 1, 600, False)),
        body_timeout_s=float(number("body_timeout_s", default_conn.body_timeout_s, 1, 600, False)),
        send_timeout_s=float(number("send_timeout_s", default_conn.send_timeout_s, 1, 600, False)),
        listen_backlog=int(number("listen_backlog", default_conn.listen_backlog, 16, 65_535)))
    admission = AdmissionLimits(
        queue=int(number("upload_queue", default_adm.queue, 0, 1000)),
        attempts_per_hour=int(number("attempts_per_hour", max(default_adm.attempts_per_hour, uploads), uploads,
                                     100_000)))
    default_logins = LoginLimits()
    logins = LoginLimits(per_author=int(number("logins_per_hour", default_logins.per_author, 1, 100_000)),
                         per_address=int(number("login_attempts_per_hour", default_logins.per_address, 1, 100_000)))
    return ServeConfig(league, uploads, upload_kb << 10, check_sandbox, build, connections, admission, logins,
                       proxies(server.get("trusted_proxies", []), bad))


def proxies(value: object, bad: Callable[[str, str, object], ConfigError]) -> tuple[str, ...]:
    """``server: trusted_proxies``: a list of IP addresses or networks (``127.0.0.1``, ``10.0.0.0/8``)."""
    expected = "a list of IP addresses or networks, such as [127.0.0.1]"
    if not isinstance(value, list):
        raise bad("server.trusted_proxies", expected, value)
    for entry in value:
        try:
            ipaddress.ip_network(entry if isinstance(entry, str) else "-")
        except ValueError:
            raise bad("server.trusted_proxies", expected, entry) from None
    return tuple(value)
