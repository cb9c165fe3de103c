"""``arena test NEW BASE``: the command line of the paired sequential A/B test in arena/run/abtest.py; and the
series of ``arena match A B ... --games N`` (arena/run/series.py), which the match command in arena/cli/play.py hands
over.

Exit status: 0 NEW is better, 1 not better, 3 undecided at ``--max-matches``, 2 bad
input, 4 incomplete (interrupted, or matches failed for infrastructure reasons: run the same command again to
resume).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import click

from arena.bots.manifest import BotSpec
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
    sandbox_choice,
    verbosity,
)
from arena.cli.ticker import Ticker
from arena.game.rules import Rules, RulesError
from arena.match.live import Reuse
from arena.match.protocol import Limits
from arena.registry.versions import entrant_names
from arena.run import abtest
from arena.run.cluster import ClusterError
from arena.run.series import play_series, table, totals
from arena.stats import sprt
from arena.stats.sprt import Status


def gain(estimate: sprt.Estimate | None) -> str:
    if estimate is None:
        return "no deal yet"
    return f"estimated gain {estimate.difference:+.2f} [{estimate.low:+.2f}, {estimate.high:+.2f}] places per match"


def status_line(status: Status, matches: int) -> str:
    """The live line: matches, the LLR and where it decides, the estimate so far."""
    return (f"{matches} matches ({status.samples} deals)  LLR {status.llr:+.2f} (decides at {status.lower:+.2f} or "
            f"{status.upper:+.2f})  {gain(status.estimate)}")


def asked(test: abtest.ABTest) -> str:
    """The gain the test looks for, in words."""
    where = "head to head at the table" if test.pairing == "table" else "against the field"
    return f"a gain of {test.settings.margin:g} places per match {where}"


def stopped(report: abtest.TestReport) -> str:
    """Why the test ended: its verdict, the cap, an interruption, or failed matches."""
    if report.status.verdict != "undecided":
        return "verdict"
    return "interrupted" if report.interrupted else "failed" if report.failed else "cap"


def verdict_line(report: abtest.TestReport, test: abtest.ABTest) -> str:
    """What a reader takes away: the verdict, what the test was set to detect, the estimate (stopping-aware)."""
    new, base = report.bots[abtest.NEW], report.bots[abtest.BASE]
    after = f"after {report.matches} matches ({report.status.samples} deals)"
    said = {"verdict": {"better": f"better: {new} is better than {base}",
                        "not better": f"not better: {new} is not better than {base}",
                        "undecided": ""}[report.status.verdict],
            "cap": f"undecided: no verdict between {new} and {base} within --max-matches {test.max_matches}",
            "interrupted": f"interrupted: no verdict yet between {new} and {base}",
            "failed": f"incomplete: no verdict yet between {new} and {base} ({report.failed} matches failed)",
            }[stopped(report)]
    return f"{said}. The test was set to detect {asked(test)}; {gain(report.status.estimate)}, {after}."


@click.command("test")
@click.argument("new", **BOT_DIR)
@click.argument("base", **BOT_DIR)
@click.option("--opponents", multiple=True, **BOT_DIR,
              help="An opponent bot, a directory or sample:NAME (repeat the option). Without opponents the test is "
              "heads-up.")
@click.option("--pairing", type=click.Choice(abtest.PAIRINGS), default="table", show_default=True,
              help="table: NEW and BASE at the same table in both orders (heads-up: from both seats); field: each "
              "plays the same deals and seats against the opponents without meeting (needs about 3x the matches).")
@click.option("--players", type=click.IntRange(2, 8), help="Seats per match (default: NEW and BASE at the "
              "table, or one of them against the field, with every opponent, at most 8).")
@click.option("--alpha", type=float, default=sprt.ALPHA, show_default=True,
              help="Allowed P(verdict better) when NEW is not better.")
@click.option("--beta", type=float, default=sprt.BETA, show_default=True,
              help="Allowed P(verdict not better) when NEW is better by the margin.")
@click.option("--margin", type=float, help="The gain worth detecting, in places per match [default: "
              f"{abtest.DEFAULT_MARGINS['table']:g} with --pairing table, where a difference is head to head, "
              f"{abtest.DEFAULT_MARGINS['field']:g} with --pairing field: the same gain in strength].")
@click.option("--max-matches", type=click.IntRange(1), default=abtest.DEFAULT_MAX_MATCHES, show_default=True,
              help="Stop undecided after this many matches (whole deals).")
@click.option("--seed", type=int, default=1, show_default=True, help="Seed of the deals.")
@click.option("--threshold", type=int, help="Elimination threshold (rule option).")
@click.option("--move-ms", type=click.IntRange(1), default=Limits.move_ms, show_default=True)
@click.option("--sandbox", "sandbox_name", type=sandbox_choice(), default="process", show_default=True)
@click.option("--workers", type=click.IntRange(1, 256), help="Parallel matches (default: the CPUs).")
@click.option("--cluster", callback=lambda _c, _p, value: check_cluster(value), metavar="ADDRESS",
              help="Play on a Dask cluster: local:N, tcp://HOST:PORT or tls://HOST:PORT (docs/CLUSTER.md).")
@click.option("--reuse", type=click.IntRange(2, 1000), metavar="N",
              help="Bots that say persistent play up to N matches per process, never two of one deal (as a "
              "tournament's reuse: {matches: N}; docs/TOURNAMENTS.md). Default: a process per match.")
@click.option("--name", help="The test's name in the store (default: made from the bots and the settings).")
@click.option("--fresh", is_flag=True, help="Discard this test's stored results and start over.")
@click.option("--no-site", is_flag=True, help="Do not build the results site at the end.")
@db_option()
@json_option("Print the verdict and the test's numbers as JSON.")
def ab_test(new: Path, base: Path, opponents: tuple[Path, ...], pairing: abtest.Pairing, players: int | None,
            alpha: float, beta: float, margin: float | None, max_matches: int, seed: int, threshold: int | None,
            move_ms: int, sandbox_name: str, workers: int | None, cluster: str | None, reuse: int | None,
            name: str | None, fresh: bool,
            no_site: bool,
            db_path: Path, as_json: bool) -> None:
    """Is NEW better than BASE? They play the same deals from the same seats with the same opponents, and a
    sequential test (the exact GSPRT, as chess engine testers run) on BASE's mean place minus NEW's stops as soon
    as it can say "better" or "not better" at the error rates asked (docs/RATINGS.md).

    Exit 0 better, 1 not better, 3 undecided at --max-matches, 4 incomplete (interrupted or failed matches: run it
    again to resume)."""
    from arena.cli import site as cli_site

    try:
        settings = sprt.Settings(alpha=alpha, beta=beta,
                                 margin=abtest.DEFAULT_MARGINS[pairing] if margin is None else margin)
    except ValueError as error:
        fail(f"--{error}")
    try:
        rules = Rules.from_dict({} if threshold is None else {"threshold": threshold})
    except RulesError as error:
        fail(f"--threshold: {error}")
    test = abtest.make_test(new, base, opponents, players, settings, max_matches, seed, name, pairing, rules=rules,
                            limits=Limits(move_ms=move_ms), sandbox=sandbox_name, workers=workers or os.cpu_count() or 1,
                            reuse=None if reuse is None else Reuse(reuse))
    store = open_store(db_path, must_exist=False)
    live = progress_shown(as_json)
    ticker = Ticker(max_matches)

    def show(status: Status, matches: int) -> None:
        click.echo(f"\r{test.config.name}: {status_line(status, matches)}\033[K", err=True, nl=False)

    def log_line(status: Status, matches: int) -> None:
        if ticker.due(matches):  # not a terminal: a line now and then (arena/cli/ticker.py)
            click.echo(f"{test.config.name}: {status_line(status, matches)}", err=True)

    try:
        report = abtest.run_test(test, store, fresh, workers,
                                 show if live else None if as_json or verbosity() < 0 else log_line, cluster)
    except KeyboardInterrupt:  # a stop before the matches began (or after they ended)
        fail("interrupted: finished matches are stored; run the same command again to resume", ExitCode.INCOMPLETE)
    except ClusterError as error:
        fail(f"{error}; finished matches are stored, run the same command again to resume", ExitCode.INCOMPLETE)
    finally:
        if live:
            click.echo("", err=True)
    complete = not report.interrupted and not report.failed
    site = None if no_site or not complete else cli_site.build_after_run(store, report.name)
    if as_json:
        emit_json({"tournament": report.name, "new": report.bots[abtest.NEW], "base": report.bots[abtest.BASE],
                   "opponents": list(report.bots[2:]), "players": test.config.players, "pairing": pairing,
                   "alpha": alpha, "beta": beta, "margin": settings.margin, "max_matches": max_matches,
                   "stopped": stopped(report), "matches": report.matches, "played": report.played,
                   "failed": report.failed, "interrupted": report.interrupted, "seconds": round(report.seconds, 1),
                   "db": str(db_path), "site": None if site is None else str(site.index)} | report.status.to_dict())
    else:
        click.echo(verdict_line(report, test))
        info(f"{report.name}: stored in {db_path} (arena standings {report.name})")
    if report.interrupted or report.failed:
        click.echo("arena: " + ("interrupted: finished matches are stored" if report.interrupted else
                                f"{report.failed} matches failed for infrastructure reasons (see arena matches "
                                f"{report.name})") + "; run the same command again to resume", err=True)
        sys.exit(ExitCode.INCOMPLETE)
    sys.exit({"better": ExitCode.OK, "not better": ExitCode.FAILED, "undecided": ExitCode.UNDECIDED}
             [report.status.verdict])


COMMANDS = (ab_test,)


def series(bots: list[BotSpec], games: int, seed: int, rules: Rules, limits: Limits, sandbox: str,
           workers: int | None, log_dir: Path | None, as_json: bool) -> None:
    """``arena match A B ... --games N`` (registered as an option of arena/cli/play.py's match command)."""
    names = [bot.name for bot in entrant_names(bots)]
    if len(set(names)) != len(names):
        names = [f"{name}#{slot + 1}" for slot, name in enumerate(names)]  # the same bot twice: tell the seats apart
    if log_dir is None:
        log_dir = Path("results/logs") / f"games-{seed}-{time.strftime('%Y%m%d-%H%M%S')}"
    live = progress_shown(as_json)

    def show(done: int) -> None:
        click.echo(f"\r{done}/{games} matches\033[K", err=True, nl=False)

    series_ = play_series(bots, games, seed, rules, limits, sandbox, workers or os.cpu_count() or 1, log_dir,
                          show if live else None)
    if live:
        click.echo("", err=True)
    found = totals(names, series_.played)
    failed = sum(result is None for _, result in series_.played)
    finished = len(series_.played)
    if as_json:
        emit_json({"games": games, "finished": finished, "interrupted": series_.interrupted, "seed": seed,
                   "failed": failed, "logs": str(log_dir), "bots": [total.to_dict() for total in found]})
    else:
        for line in table(found, finished, failed):
            click.echo(line)
        info(f"logs: {log_dir}")
    if series_.interrupted:
        fail(f"interrupted: the totals are of the {finished} of {games} matches that finished", ExitCode.FAILED)
    if failed:
        fail(f"{failed} matches failed for infrastructure reasons", ExitCode.FAILED)
