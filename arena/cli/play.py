"""`arena match`, `arena replay`, `arena doctor` and `arena run`: playing matches and tournaments.

Imported only when one of them runs (arena/cli/main.py loads commands lazily): they bring the referee, the sandboxes,
the runner and the site builder.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import click
import yaml

from arena.cli.common import (
    BOT_DIR,
    ExitCode,
    check_cluster,
    db_option,
    emit_json,
    fail,
    info,
    json_option,
    open_store,
    progress_shown,
    require_extra,
    sandbox_choice,
    verbosity,
)
from arena.cli.results import print_standings, print_stderr
from arena.cli.ticker import Ticker
from arena.game.results import MatchResult
from arena.game.rules import Rules, RulesError
from arena.match.matchlog import describe, find_log, load, verify
from arena.match.protocol import Limits
from arena.match.referee import InfrastructureError, play_match
from arena.registry.versions import default_registry
from arena.resources import data_dir
from arena.run import tournament
from arena.run.cluster import ClusterError  # no Dask at import: it is imported only to play
from arena.run.config import TournamentConfig, load_config, seed_warning
from arena.run.loop import Progress, RunReport
from arena.run.plan import load_entrants
from arena.sandbox import SandboxError, get_sandbox
from arena.site import live as live_site
from arena.stats.standings import shown_standings, standings_and_confidence, standings_with_confidence
from arena.store import Store, disk_full
from arena.yamlfile import load_yaml


def load_rules(rules_file: Path | None, threshold: int | None) -> Rules:
    options: dict[str, Any] = {}
    if rules_file is not None:
        try:
            loaded = load_yaml(rules_file.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError, UnicodeDecodeError) as error:
            fail(f"{rules_file}: cannot read rules: {error}")
        if not isinstance(loaded, dict):
            fail(f"{rules_file}: expected a mapping of rule options, got {type(loaded).__name__}")
        options.update(loaded)
    if threshold is not None:
        options["threshold"] = threshold
    try:
        return Rules.from_dict(options)
    except RulesError as error:
        fail(f"{rules_file or '--threshold'}: {error}")


BUILD_CACHE = Path("results/builds")
"""Where ``arena match`` builds bot directories that have a ``build:`` (``arena run`` builds beside its store)."""


@click.command()
@click.argument("bot_dirs", nargs=-1, required=True, **BOT_DIR)
@click.option("--seed", type=click.IntRange(0), default=1, show_default=True,
              help="Deal seed (as a config's seed: 0 or more); the same seed gives the same match.")
@click.option("--threshold", type=int, help="Elimination threshold (shortcut for the rule option).")
@click.option("--rules", "rules_file", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="YAML file of rule options (see protocol/RULES.md).")
@click.option("--log", "log_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Event log to write (default: results/logs/match-SEED-TIME.jsonl.gz).")
@click.option("--move-ms", type=click.IntRange(1), default=Limits.move_ms, show_default=True)
@click.option("--bank-ms", type=click.IntRange(0), default=Limits.bank_ms, show_default=True)
@click.option("--hello-ms", type=click.IntRange(1), default=Limits.hello_ms, show_default=True)
@click.option("--sandbox", "sandbox_name", type=sandbox_choice(), default="process",
              show_default=True, help="process: bubblewrap on this host; docker: a container per bot.")
@click.option("--games", type=click.IntRange(1), help="Play N matches (seat rotations of duplicate deals) and "
              "print totals per bot instead of one match; --log is then a directory.")
@click.option("--workers", type=click.IntRange(1, 256), help="With --games: parallel matches (default: the CPUs).")
@json_option("Print the result as one JSON object.")
def match(bot_dirs: tuple[Path, ...], seed: int, threshold: int | None, rules_file: Path | None,
          log_path: Path | None, move_ms: int, bank_ms: int, hello_ms: int, sandbox_name: str,
          games: int | None, workers: int | None, as_json: bool) -> None:
    """Play one match between the bots in BOT_DIRS (2 to 8; seat order as given), or a series with --games.

    A BOT_DIR written sample:NAME is a sample bot that ships with arena (sample:greedy, sample:random, sample:planner, ...).

    A bot with a build: in its bot.yaml is built first, in the sandbox, into results/builds (once for each state of
    its files; the bot's own directory is never written)."""
    if not 2 <= len(bot_dirs) <= 8:
        raise click.UsageError(f"a match needs 2 to 8 bot directories, got {len(bot_dirs)}")
    rules = load_rules(rules_file, threshold)
    bots = load_entrants(bot_dirs, BUILD_CACHE)
    if games is not None:
        from arena.cli import abtest as cli_abtest  # only a series needs the A/B runner, none of the rest

        cli_abtest.series(bots, games, seed, rules, Limits(hello_ms, move_ms, bank_ms), sandbox_name, workers,
                        log_path, as_json)
        return
    if log_path is None:
        log_path = Path("results/logs") / f"match-{seed}-{time.strftime('%Y%m%d-%H%M%S')}.jsonl.gz"
    try:
        log_path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        fail(f"{log_path}: cannot write the event log here ({error.strerror}); pass --log PATH")
    try:
        sandbox = get_sandbox(sandbox_name)
        result = play_match(bots, seed, sandbox, rules, Limits(hello_ms, move_ms, bank_ms), log_path=log_path)
    except (InfrastructureError, SandboxError) as error:
        fail(f"infrastructure error, match not played: {error}", ExitCode.FAILED)
    except OSError as error:  # the bots are sandboxed: what this process writes is the event log
        fail(f"{log_path}: cannot write the event log ({error.strerror}); pass --log PATH")
    if as_json:
        emit_json(result.to_dict(stderr=True))
    else:
        print_result(result)


def print_result(result: MatchResult) -> None:
    click.echo(f"seed {result.seed}: {result.summary()}, "
               f"{result.duration_s:.1f} s")
    click.echo(f"{'place':>5}  {'seat':>4}  {'bot':<20} {'score':>5}  fault")
    for player in sorted(result.players, key=lambda p: (p.place, p.seat)):
        fault = "" if player.fault is None else f"{player.fault.reason.value}: {player.fault.detail}"
        click.echo(f"{player.place:>5}  {player.seat:>4}  {player.name:<20} {player.score:>5}  {fault}")
    for player in result.players:
        if player.fault is not None:
            click.echo(f"\nseat {player.seat} {player.name}: {player.fault.reason.value} in round "
                       f"{player.fault.round}: {player.fault.detail}")
            print_stderr(player.stderr_tail, "   ")
    if result.log_path is not None:
        click.echo(f"log: {result.log_path}   (arena replay {result.log_path})")


@click.command()
@click.argument("log", metavar="LOG_OR_MATCH_ID")
@click.option("--verify", "check", is_flag=True,
              help="Re-run the engine from the seed and recorded moves; exit 1 on any mismatch.")
@click.option("--stderr", "stderr", is_flag=True,
              help="Print in line what each bot wrote on stderr, after the step during which it arrived.")
@db_option("The results store in which a MATCH_ID is looked up.")
@json_option("Print the narration (or with --verify, the verdict) as one JSON object; errors too.")
def replay(log: str, check: bool, stderr: bool, db_path: Path, as_json: bool) -> None:
    """Print a match from its event log turn by turn, or verify it against the engine. A number that is no file
    here is a match id, as arena matches shows it: its log is found through the store."""
    log_file = log_of(log, db_path)
    loaded = load(log_file)
    lines = list(describe(loaded, stderr))  # a malformed log (LogError) is bad input, with or without --verify
    if not check:
        if as_json:
            emit_json({"log": str(log_file), "events": len(loaded.events), "lines": lines})
        else:
            for line in lines:
                click.echo(line)
        return
    problems = verify(loaded)
    if as_json:
        emit_json({"log": str(log_file), "ok": not problems, "problems": problems, "events": len(loaded.events)})
    elif problems:
        for problem in problems:
            click.echo(f"MISMATCH: {problem}", err=True)
    else:
        click.echo(f"ok: {len(loaded.events)} events replay to the recorded outcome")
    sys.exit(ExitCode.FAILED if problems else ExitCode.OK)


def log_of(given: str, db_path: Path) -> Path:
    """``arena replay``'s argument as a log file: the path, or for a match id (digits that name no file here) the
    log of that match in the store."""
    path = Path(given)
    if path.exists() or not given.isdigit():
        return path
    if not db_path.exists():
        fail(f"{given}: no such log file, and no results store at {db_path} to look up match {given} in "
             "(pass --db)")
    store = open_store(db_path)
    match_ = store.match(int(given))
    if match_ is None:
        fail(f"{given}: no such log file, and {db_path} has no match with id {given} (see arena matches)")
    found = find_log(match_.log_path, db_path.parent, match_.tournament, match_.idx)
    if found is None:
        fail(f"{db_path}: match {given} ({match_.status}) has no event log "
             + ("yet" if match_.status != "done" else "any more (it was moved or deleted)"))
    return found


@click.command()
@json_option("Machine-readable output.")
def doctor(as_json: bool) -> None:
    """Say what this host can guarantee about untrusted bots (see docs/SECURITY.md)."""
    from arena.sandbox.doctor import checks, docker_guarantees, sandbox_guarantees

    found = checks()
    backends = {"process": sandbox_guarantees(), "docker": docker_guarantees()}
    shown = {name: guarantees for name, guarantees in backends.items() if guarantees is not None}
    if as_json:
        emit_json({"checks": [check.to_dict() for check in found]}
                  | {f"{name}_sandbox": {key: {"ok": ok, "reason": reason} for key, (ok, reason) in guarantees.items()}
                     for name, guarantees in shown.items()})
        return
    width = max(len(check.name) for check in found)
    for check in found:
        click.echo(f"{check.name:<{width}}  {'yes' if check.ok else 'no ':<3}  {check.reason}")
    for name, guarantees in shown.items():
        click.echo(f"\nThe {name} sandbox on this host guarantees:")
        width = max(len(key) for key in guarantees)
        for key, (ok, reason) in guarantees.items():
            click.echo(f"  {key:<{width}}  {'yes' if ok else 'no ':<3}  {reason}")
    if not all(ok for ok, _ in shown["process"].values()):
        click.echo("\nNot every guarantee holds: run only trusted bots here (docs/SECURITY.md).")


# -- tournaments ------------------------------------------------------------------------------------------------

@click.command()
@click.argument("config_file", type=click.Path(dir_okay=False, path_type=Path))
@db_option()
@click.option("--workers", type=click.IntRange(1, 256), help="Parallel matches (default: the config's, or the CPUs).")
@click.option("--dry-run", is_flag=True, help="Print the schedule summary and the estimated time; play nothing.")
@click.option("--fresh", is_flag=True, help="Discard this tournament's stored results and start over.")
@click.option("--no-site", is_flag=True, help="Do not build the results site (site/ beside the store) at the end.")
@click.option("--site", "site_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Where the results site goes (default: site/ beside the store).")
@click.option("--live", is_flag=True,
              help="Keep the site current while the matches play: its pages say 'live, N of M matches' and reload "
                   "themselves; a last build at the end (docs/TOURNAMENTS.md). Each match writes its spectators' "
                   "feed as it plays: arena watch follows one move by move.")
@click.option("--live-every", type=click.FloatRange(0, 3600), metavar="SECONDS",
              help=f"With --live: at most one site build per SECONDS (default {live_site.EVERY_S:.0f}; implies --live).")
@click.option("--cluster", callback=lambda _c, _p, value: check_cluster(value), metavar="ADDRESS",
              help="Play on a Dask cluster: local:N, tcp://HOST:PORT or tls://HOST:PORT (docs/CLUSTER.md).")
@json_option()
def run(config_file: Path, db_path: Path, workers: int | None, dry_run: bool, fresh: bool, no_site: bool,
        site_dir: Path | None, live: bool, live_every: float | None, cluster: str | None, as_json: bool) -> None:
    """Play the tournament in CONFIG_FILE, resuming it if it was interrupted, and print the standings.

    CONFIG_FILE is a YAML file, or the name of an example config that ships with arena (demo: the sample bots).
    With --live the results site is kept current while it plays, to watch a long tournament."""
    live = live or live_every is not None
    if no_site and (live or site_dir is not None):
        fail("--no-site builds no site: it cannot go with --site, --live or --live-every")
    watched: live_site.LiveSite | None = None
    try:
        config = load_config(example_or_path(config_file), registry=default_registry(db_path))
        if cluster is None and config.cluster is not None and not dry_run:
            require_extra("cluster", f"{config_file}: cluster:")
        warnings = (seed_warning(config),  # once the config is known to run: a refusal is said alone
                    tournament.reuse_warning(config, workers or config.workers))
        for warning in warnings:
            if warning is not None:
                click.echo(warning, err=True)
        if dry_run:
            summary = tournament.dry_run(config, workers, cluster)
            if as_json:
                emit_json(summary)
            else:
                deals = (f"{summary['deals']} deals x {summary['players']} seat rotations"
                         if summary["deal_mode"] == "duplicate" else "independent deals")
                where = (f"{summary['workers']} workers" if summary["cluster"] is None
                         else f"on the cluster {summary['cluster']} ({summary['workers']} workers"
                         + (")" if summary["cluster"].startswith("local:") else " here; the scheduler's may differ)"))
                click.echo(f"{summary['name']}: {summary['matches']} matches ({summary['design']}, {deals}), "
                           f"{summary['bots']} bots, {where}, about {summary['estimated_seconds']:.0f} s")
                if summary["open_ended"]:
                    stop = summary["open_ended"]
                    click.echo(f"  open-ended: stops when every adjacent pair is decided, apart or equal within "
                               f"a head-to-head share of {0.5 - stop['margin']:.0%}-{0.5 + stop['margin']:.0%}, "
                               f"with errors under {1 - stop['confidence']:.0%} over all the looks; at most "
                               f"{summary['matches']} matches (the numbers here are that bound)")
                for name, seats in summary["seats_per_bot"].items():
                    click.echo(f"  {name:<20} {sum(seats):>5} matches, per seat {seats}")
            return
        store = open_store(db_path, must_exist=False)
        if live:
            watched = live_site.LiveSite(db_path, config.name, site_out(db_path, site_dir),
                                         live_site.EVERY_S if live_every is None else live_every,
                                         warn=lambda message: click.echo(f"arena: warning: {message}", err=True))
        try:
            report = run_with_progress(config, store, fresh, workers, quiet=as_json, cluster=cluster, live=watched)
        finally:
            if watched is not None:
                watched.stop()  # before the last build, which writes the same files
    except KeyboardInterrupt:  # a stop before the matches began (or after they ended)
        fail("interrupted: finished matches are stored; run the same command again to resume", ExitCode.FAILED)
    except ClusterError as error:
        fail(f"{error}; finished matches are stored, run the same command again to resume", ExitCode.FAILED)
    site = None
    site_error = None
    # A live site is built at the end even of an interrupted run: its pages must stop saying "live".
    if not (no_site or report.interrupted and watched is None):
        from arena.cli import site as cli_site  # as in site_out: --no-site starts without Jinja2

        try:
            site = cli_site.build_after_run(store, report.name, live=progress_shown(as_json),
                                            out=site_out(db_path, site_dir))
        except OSError as error:
            full = disk_full(error, cli_site.site_dir_for(db_path))
            if full is None:
                raise
            site_error = f"site not built: {full}"
    table, sure = standings_and_confidence(store, report.tid)
    if as_json:
        emit_json({"tournament": report.name, "matches": report.total, "played": report.played,
                   "failed": report.failed, "interrupted": report.interrupted, "seconds": round(report.seconds, 1),
                   "db": str(db_path), "site": None if site is None else str(site.index),
                   **({} if report.cluster is None else {"cluster": report.cluster.to_dict()}),
                   "note": shown_standings(table, sure).note,
                   "standings": standings_with_confidence(table, sure)})
    else:
        print_standings(table, sure)
        done = report.done_before + report.played - report.failed
        info(f"{report.name}: {done}/{report.total} matches done ({report.played} played now, "
                   f"{report.done_before} before) in "
                   f"{report.seconds:.1f} s; store {db_path}")
        if report.cluster is not None:
            counts = ", ".join(f"{worker} {count}" for worker, count in sorted(report.cluster.per_worker.items()))
            info(f"cluster {report.cluster.address}: {report.cluster.workers} workers; matches per worker: "
                       f"{counts or 'none'}")
        if site is not None:
            info(f"site: {site.index}")
    if site_error is not None:
        fail(site_error, ExitCode.FAILED)
    if report.interrupted:
        fail("interrupted: finished matches are stored; run the same command again to resume", ExitCode.FAILED)
    if report.failed:
        fail(f"{report.failed} matches failed for infrastructure reasons and were not rated (see arena matches); "
             "run the same command again to retry them", ExitCode.FAILED)


def site_out(db_path: Path, site_dir: Path | None) -> Path:
    """Where arena run's site goes: ``--site``, else the store's default (``site/`` beside it)."""
    from arena.cli import site as cli_site  # only a run that builds a site pays for its modules (~65 ms CPU)

    return site_dir if site_dir is not None else cli_site.site_dir_for(db_path)


def example_or_path(config_file: Path) -> Path:
    """CONFIG_FILE as given; or, for a bare name such as ``demo`` that is no file here, the shipped example
    ``tournaments/NAME.yaml``, so that an installed arena runs the demo without a source checkout."""
    if config_file.exists() or config_file.parent != Path(".") or config_file.suffix:
        return config_file
    example = data_dir("tournaments") / f"{config_file.name}.yaml"
    return example if example.is_file() else config_file


def progress_status(progress: Progress) -> str:
    """The text beside ``arena run``'s progress bar."""
    on = "" if progress.cluster is None else f" on {progress.cluster.workers} workers"
    sure = progress.leader_settled()
    # A lead that is not settled at 95% is shown as the shared first place it is (docs/RATINGS.md).
    lead = "" if sure is None else " (settled)" if sure >= 0.95 else f" (1=, P above next {sure:.2f})"
    # The count of the whole tournament, as the final line gives it (a resumed run's bar measures only what is
    # left to play, so that its ETA holds; its own position would read 16/69 beside 71/120).
    done = progress.done + progress.played - progress.failed
    return f"{done}/{progress.total} done, {progress.rate:.1f}/s leader {progress.leader}{lead}{on}"


def run_with_progress(config: TournamentConfig, store: Store, fresh: bool, workers: int | None,
                      quiet: bool, cluster: str | None = None, live: live_site.LiveSite | None = None) -> RunReport:
    bar: Any = None
    ticker: Ticker | None = None

    def show(progress: Progress) -> None:
        nonlocal bar, ticker
        if live is not None:
            live.changed()
        if lines:
            ticker = ticker or Ticker(progress.total - progress.done)
            if ticker.due(progress.played):
                click.echo(f"{config.name}: {progress_status(progress)}", err=True)
        if not terminal:
            return
        if bar is None:
            bar = click.progressbar(length=progress.total - progress.done, label=config.name, file=sys.stderr,
                                    show_eta=True, show_pos=False, show_percent=False,
                                    item_show_func=lambda _: progress_status(progress))
            bar.__enter__()
        bar.update(1, progress)

    try:
        # A bar only on a terminal: in a log file it would be noise, and a line now and then tells how it goes.
        terminal = progress_shown(quiet)
        lines = not quiet and verbosity() >= 0 and not terminal
        return tournament.run_tournament(config, store, fresh, workers, show if terminal or lines or live is not None else None, cluster,
                                         None if live is None else lambda _: live.start(), watched=live is not None)
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
