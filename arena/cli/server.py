"""The league server's commands: ``arena serve``, ``arena author add|list|revoke``, ``arena league status``, and
the client half of ``arena submit --server``.

Thin click commands over :mod:`arena.server` and :mod:`arena.registry.client`, registered on the main group by name in
``arena/cli/main.py`` (loaded when run). The organiser's admin actions (authors, revoking) are here on the command
line, never over HTTP.
Exit codes as everywhere: 0 done, 1 the thing asked for failed (the server is unreachable, the bot failed its
check), 2 bad input (a bad config, an unknown author, an upload the server refused as input).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from arena.cli.common import ExitCode, check_cluster, colour, emit_json, fail, json_option, require_extra
from arena.registry.versions import default_registry, sweep_incoming
from arena.run.config import seed_warning
from arena.stats.standings import standings
from arena.store import Store

if TYPE_CHECKING:
    from arena.run.league import League

DEFAULT_DB = Path("results/arena.db")
db_option = click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path), default=DEFAULT_DB,
                         show_default=True, help="The results store (SQLite); the registry is bots/ beside it.")


@click.command()
@click.argument("config_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; loopback unless you mean it (put a TLS proxy in front, docs/SERVER.md).")
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True)
@db_option
@click.option("--site", "site_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Where the public site is written (default: public/ beside the store).")
@click.option("--cluster", callback=lambda _c, _p, value: check_cluster(value), metavar="ADDRESS",
              help="Play the league on a Dask cluster: local:N, tcp://HOST:PORT or tls://HOST:PORT (default: the "
                   "league's cluster: key, else the local pool; docs/CLUSTER.md).")
@click.option("--log-format", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="The server's and the league's log lines on stderr: text, or one JSON object per line (access "
                   "lines included; docs/SERVER.md).")
@json_option("An error that stops the server from starting is a JSON object on stdout (the logs follow "
             "--log-format).")
def serve(config_file: Path, host: str, port: int, db_path: Path, site_dir: Path | None,
          cluster: str | None, log_format: str, as_json: bool) -> None:
    """Run the league server for the league: config in CONFIG_FILE: take submissions over HTTP, play the league
    continuously, serve the live standings and the results site. Ctrl-C (or SIGTERM) stops it (exit 0); run it
    again to resume."""
    require_extra("server", "arena serve")
    from arena.server import guard, heap, logs
    from arena.server.app import ServerSettings, create_app
    from arena.server.config import load_serve_config

    json_logs = log_format == "json"

    def tell(message: str, level: int = logging.INFO) -> None:
        if json_logs:
            logging.getLogger("arena.server").log(level, message)  # stderr stays one JSON object per line
        else:
            click.echo(message, err=True)

    logs.configure(json_lines=json_logs)
    heap.limit_arenas()  # before any thread of the server starts
    config = load_serve_config(config_file, default_registry(db_path))
    warning = seed_warning(config.league)
    if warning is not None:
        tell(warning, logging.WARNING)
    views_warning = shared_caches_warning(config.league.sandbox)
    if views_warning is not None:
        tell(views_warning, logging.WARNING)
    if cluster is not None:
        config = dataclasses.replace(config, league=dataclasses.replace(config.league, cluster=cluster))
    if config.league.cluster is not None:
        require_extra("cluster", f"{config_file}: cluster:")
    Store(db_path).close()  # creates or migrates the store now, so errors come before the server starts
    scratch = config.league.registry / ".incoming" / "uploads"
    sweep_incoming(config.league.registry)
    app = create_app(ServerSettings(db=db_path, config=config, site_dir=site_dir or db_path.parent / "public",
                                    scratch=scratch))
    league = app.state.server.league
    claim(league, db_path)  # before a port is bound: a server that cannot play must not look alive
    try:
        try:
            sock = guard.listen(host, port, config.connections.listen_backlog)
        except OSError as error:
            league.release()
            fail(f"cannot listen on {host}:{port}: {error.strerror or error}", ExitCode.FAILED)
        where = "the local pool" if config.league.cluster is None else f"the cluster {config.league.cluster}"
        tell(f"league {config.league.name!r} at http://{host}:{port}/ (store {db_path}, registry "
             f"{config.league.registry}, matches on {where})")
        try:
            stopped_by = guard.run(app, sock, config.connections, config.trusted_proxies, own_logs=json_logs,
                                   count_connections=app.state.metrics.count_connections,
                                   on_stop=app.state.server.intake.stop)
        except guard.GuardMismatch as error:
            league.release()
            fail(str(error), ExitCode.FAILED)
    except KeyboardInterrupt:
        # A stop that came before the server took its signals (while it bound its port or tested its guard): the
        # stop asked for, done; the league had not started.
        league.release()
        tell(f"league {config.league.name!r} stopped before it served; its lease is released")
        return
    # The application has shut down: the league's batch stopped (its unfinished matches stay pending and are
    # played first on the next start) and its lease released. A stop asked for is a success (exit 0), so that
    # systemd and Docker see a clean stop.
    cause = "by itself" if stopped_by is None else f"on {signal.Signals(stopped_by).name}"
    thread = app.state.league_thread
    if thread is not None and thread.is_alive():
        fail(f"league {config.league.name!r} stopped {cause}, but its matches did not stop in time; those not "
             "stored are played again when it is served again", ExitCode.FAILED)
    tell(f"league {config.league.name!r} stopped {cause}: {league.state.matches_played} matches played since "
         "the start; unfinished matches are played first when it is served again")


def shared_caches_warning(sandbox: str) -> str | None:
    """A competition's server whose sandboxes would share the kernel's caches of /usr (the runtime image not built:
    docs/SECURITY.md, "Earlier matches") says so at start, with the command that closes the channel."""
    if sandbox != "process":
        return None
    from arena.sandbox import views

    works, reason = views.ready()
    if works:
        return None
    return (f"warning: sandboxes share the kernel's caches of /usr ({reason}); a bot can leave bits there for a later "
            "match of its deal: run `arena sandbox build-views` before a competition")


def claim(league: League, db_path: Path) -> None:
    """Hold the league and check its identity, or exit with one line: 1 if another server holds it (as ``arena
    run`` does), 2 if the config is not the league's in the store."""
    from arena.run.league import LeagueError
    from arena.store import LeaseHeldError

    store = Store(db_path)  # a StoreError is mapped to its exit code by the root group
    try:
        league.claim(store)
    except LeaseHeldError as error:
        fail(f"{db_path}: {error}; stop that server first, or serve another store", ExitCode.FAILED)
    except LeagueError as error:
        fail(str(error))
    finally:
        store.close()


@click.group("author")
def author_group() -> None:
    """The league's authors and their API tokens (the organiser's side; the server need not be stopped)."""


@author_group.command("add")
@click.argument("name")
@db_option
@json_option()
def author_add(name: str, db_path: Path, as_json: bool) -> None:
    """Add author NAME and print their API token. It is shown only this once: the store keeps only its hash."""
    from arena.server.authors import add_author

    store = Store(db_path)
    token = add_author(store, name)
    if as_json:
        emit_json({"author": name, "token": token})
    else:
        click.echo(token)
        click.echo(f"author {name!r} added; give them this token (it is not stored and cannot be shown again): "
                   f"arena submit BOT_DIR --server URL --token TOKEN, or ARENA_TOKEN=TOKEN", err=True)


@author_group.command("list")
@db_option
@json_option()
def author_list(db_path: Path, as_json: bool) -> None:
    """Every author, the bot names they own and how many uploads were accepted."""
    from arena.server.authors import list_authors

    found = list_authors(Store(db_path))
    if as_json:
        emit_json({"authors": [summary.to_dict() for summary in found]})
        return
    click.echo(f"{'author':<24} {'since':<20} {'status':<8} {'uploads':>7}  bots")
    for summary in found:
        author = summary.author
        click.echo(f"{author.name:<24} {author.created_at:<20} {'active' if author.active else 'revoked':<8} "
                   f"{summary.submissions:>7}  {', '.join(summary.bots) or '-'}")


@author_group.command("revoke")
@click.argument("name")
@db_option
def author_revoke(name: str, db_path: Path) -> None:
    """Revoke author NAME's token at once; their bots and results stay."""
    from arena.server.authors import revoke_author

    revoke_author(Store(db_path), name)
    click.echo(f"author {name!r} revoked", err=True)


@click.group("league")
def league_group() -> None:
    """Leagues in the store (run by arena serve)."""


@league_group.command("status")
@click.argument("name", required=False)
@db_option
@json_option()
def league_status(name: str | None, db_path: Path, as_json: bool) -> None:
    """What the leagues in the store are doing: bots in the field, matches played and in play, the last match, the
    leader among the bots in the field, how evenly they meet, and whether a full disk holds the league up."""
    from arena.run.league import tally_from_store
    from arena.run.matchmaking import spread, throttle_weights
    from arena.store import is_active, nearly_full

    if not db_path.exists():
        fail(f"{db_path}: no results store here yet (arena serve creates it, or pass --db)")
    store = Store(db_path)
    leagues = []
    for row in store.tournaments():
        config = json.loads(row["config"])
        if not config.get("league") or name not in (None, row["name"]):
            continue
        counts = store.status_counts(row["id"])
        table = [line for line in standings(store, row["id"]) if line.active]
        bots = store.bots(row["id"])
        active = [int(bot["id"]) for bot in bots if is_active(bot)]
        names = {int(bot["id"]): str(bot["name"]) for bot in bots}
        in_field = set(active)
        weights = throttle_weights({bot: seconds for bot, seconds in store.think_seconds(row["id"]).items()
                                    if bot in in_field})
        spread_of = spread(tally_from_store(store, row["id"], int(config["players"])), active, weights)
        leagues.append({"league": row["name"], "since": row["created_at"], "bots": len(active),
                        "left": len(bots) - len(active), "matches": counts,
                        "last_match_at": store.last_finished(row["id"]),
                        "leader": table[0].name if table and table[0].matches else None,
                        "disk_full": nearly_full(db_path), "served_by": store.holder(str(row["name"])),
                        "spread": spread_of.to_dict(names),
                        "throttled": {names[bot]: round(weight, 4) for bot, weight in sorted(weights.items())}})
    if name is not None and not leagues:
        fail(f"{db_path}: no league {name!r}")
    if as_json:
        emit_json({"leagues": leagues})
        return
    for entry in leagues:
        counts = entry["matches"]
        # Pending matches are in play only while a server holds the league; else they wait for its next start.
        pending = (f"{counts.get('pending', 0)} in play" if entry["served_by"] else
                   f"{counts.get('pending', 0)} to play when it is served again")
        click.echo(f"{entry['league']}: since {entry['since']}, {entry['bots']} bots in the field ({entry['left']} "
                   f"left), {counts.get('done', 0)} matches played, {pending}, "
                   f"{counts.get('failed', 0)} failed; last match {entry['last_match_at'] or 'none yet'}; leader "
                   f"{entry['leader'] or 'none yet'}")
        click.echo(f"  served by {entry['served_by']}" if entry["served_by"] else "  no server is running it")
        pairs = entry["spread"]
        if pairs["pairs"]:
            shares = [bot["share"] for bot in pairs["bots"] if bot["share"] is not None]
            balance = ("no pair due 3 meetings yet" if pairs["balance_while_active"] is None else
                       f"{pairs['least_over_expected']:.2f}x to {pairs['most_over_expected']:.2f}x an even "
                       f"schedule's while both were in the field (balance {pairs['balance_while_active']:.2f})")
            click.echo(f"  pairs in the field met {pairs['least_meetings']} to {pairs['most_meetings']} times "
                       f"(ratio {pairs['ratio']}), {balance}; matches per bot "
                       f"{min(shares, default=0):.2f}x to {max(shares, default=0):.2f}x its fair share")
        for bot, weight in entry["throttled"].items():
            click.echo(f"  {bot} is throttled to {weight:.0%} of its share: its matches take over twice the "
                       "median bot's")
        if entry["disk_full"]:
            click.echo("  paused: the disk under the store is full; the league goes on by itself when space "
                       "returns")


def submit_remote(bot_dir: Path, server: str, token: str | None, as_json: bool) -> NoReturn:
    """``arena submit BOT_DIR --server URL``: upload, print the server's verdict and the check report, exit."""
    from arena.bots.files import SubmissionRejected
    from arena.bots.manifest import ManifestError
    from arena.registry.check import CheckReport, Step, format_report
    from arena.registry.client import pack, upload

    if not server.lower().startswith(("http://", "https://")):
        fail(f"--server {server}: expected the server's URL, starting with http:// or https:// "
              f"(say --server http://{server}, or https:// behind a TLS proxy)")
    if not token:
        fail("--server needs your API token: --token TOKEN or the ARENA_TOKEN environment variable")
    try:
        body = pack(bot_dir)
    except (ManifestError, SubmissionRejected) as error:
        fail(f"rejected, nothing sent: {error}")
    reply = upload(server, token, body)
    if as_json:
        emit_json({"http_status": reply.status, **reply.body})
    else:
        check = reply.body.get("check")
        if isinstance(check, dict):
            report = CheckReport(check.get("directory") or str(bot_dir), check.get("sandbox") or "?",
                                 check.get("bot"), check.get("files_hash"),
                                 [Step(s["step"], s["ok"], s["expected"], s["got"], s.get("advice", []),
                                       s.get("stderr_tail", "")) for s in check.get("steps", [])],
                                 float(check.get("seconds") or 0.0))
            for line in format_report(report, colour=colour()):
                click.echo(line)
        status = reply.body.get("status")
        if status == "stored":
            click.echo(f"stored {reply.body['name']} version {reply.body['version']} on {server}; it enters the "
                       "league at the next batch")
        elif status == "unchanged":
            click.echo(f"{reply.body.get('name')}: {reply.body.get('reason')}")
        else:
            click.echo(f"rejected (HTTP {reply.status}), nothing stored: {reply.body.get('error')}", err=True)
    sys.exit(0 if reply.status in (200, 201) else 1 if reply.status == 422 or reply.status >= 500 else 2)


COMMANDS = (serve, author_group, league_group)
