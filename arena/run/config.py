"""Tournament and league configs: a YAML file read into a validated, frozen :class:`TournamentConfig`, and the
``league:`` section of a server config into a :class:`LeagueConfig` (the rest of that file: arena/server/config.py).

Every error names the file, the key and what was expected, because an organiser reading it should not need our
code. Bot paths are relative to the directory the config file is in, so a config means the same wherever the
command runs.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from arena.bots.manifest import NAME_PATTERN
from arena.game.rules import Rules, RulesError
from arena.match.live import Reuse
from arena.match.protocol import Limits
from arena.registry.versions import REGISTRY_PREFIX, VERSION_MODES, Registry, RegistryError
from arena.resources import NoSuchSample, sample_bot
from arena.sandbox import BACKENDS, SandboxLimits
from arena.sandbox.rlimits import ungrantable
from arena.schedule import DEALS, Deals, Secret, make_schedule
from arena.stats.confidence import MARGIN
from arena.stats.ratings import RatingConfig
from arena.yamlfile import excerpt, load_yaml

FORMATS = ("round-robin",)
DEFAULT_REGISTRY = Path("results/bots")
"""Beside the default store, results/arena.db (relative to where the command runs)."""
TOURNAMENT_NAME = NAME_PATTERN


T = TypeVar("T")


class ConfigError(ValueError):
    """A bad tournament config; the message names the file and the key."""


@dataclass(frozen=True)
class StopRule:
    """``stop: {confidence: 0.95, max_matches: N, margin: 0.15}``: play round after round (every group of the
    schedule once) and stop when every adjacent pair of the standings is decided, apart or equal within
    ``margin``, by a test whose errors over all the looks stay within 1 - ``confidence``, or at ``max_matches``
    (whole rounds); arena/run/stoprule.py."""

    confidence: float = 0.95
    max_matches: int = 1000
    margin: float = MARGIN
    """Two bots neither of which places above the other in more than 1/2 + margin of their meetings may be
    shown as equal."""


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """What a tournament and a league are both configured by: who names the run, how many sit at a table, the seed,
    the rules, the limits, the sandbox and the rating, plus where matches are played (the pool's ``workers`` or a
    ``cluster``) and how often a failed one is tried again. One parse checks these keys for both
    (:func:`_parse_shared`), so that a key means and says the same in a tournament and a league."""

    name: str
    players: int
    seed: Secret | None = field(default=None, repr=False)
    """The run's secret, which every deal follows from (arena/schedule.py's :func:`~arena.schedule.deal_seed`); None:
    one is made when the run is created and kept in the store (docs/SECURITY.md). Never shown: not in ``repr``,
    and the store keeps it out of the config it shows."""
    rules: Rules = Rules()
    limits: Limits = Limits()
    sandbox_limits: SandboxLimits = SandboxLimits()
    sandbox: str = BACKENDS[0]
    workers: int = 1
    rating: RatingConfig = RatingConfig()
    retries: int = 2
    """How many times a match that failed for infrastructure reasons is tried again."""
    cluster: str | None = None
    """A Dask scheduler to play on (docs/CLUSTER.md, arena/run/cluster.py) instead of the local pool; like
    ``workers``, not part of the identity: the results are the same."""
    source: Path | None = field(default=None, compare=False)

    def identity(self) -> dict[str, Any]:
        """The shared part of what decides the results (not ``workers``, ``retries`` or ``cluster``), as plain
        data."""
        return {"name": self.name, "players": self.players, "seed": self.seed, "rules": self.rules.to_dict(),
                "limits": self.limits.to_dict(), "sandbox_limits": dataclasses.asdict(self.sandbox_limits),
                "sandbox": self.sandbox, "rating": dataclasses.asdict(self.rating)}


@dataclass(frozen=True, kw_only=True)
class TournamentConfig(RunConfig):
    bots: tuple[Path, ...]
    repeats: int = 1
    format: str = "round-robin"
    deals: Deals = "duplicate"
    """Duplicate deals (a group's rotations share a deal) or independent ones (every match its own); schedule.py."""
    workers: int = field(default_factory=lambda: os.cpu_count() or 1)
    stop: StopRule | None = None
    """Open-ended: ``repeats`` is then the most rounds ``stop.max_matches`` allows."""
    reuse: Reuse | None = None
    """Bots that say ``persistent`` play several matches per process, in the schedule's chains (arena/run/lanes.py);
    None (``reuse: false``, the default): a process per seat and match."""

    def identity(self) -> dict[str, Any]:
        """Everything that decides the results (not ``workers``, which must not change them), as plain data."""
        # ``deals`` only when not the default, so that the configs of tournaments stored before it keep their hash.
        extra: dict[str, Any] = {} if self.deals == "duplicate" else {"deals": self.deals}
        if self.reuse is not None:  # a bot may remember its lane's earlier matches: part of what decides results
            extra["reuse"] = dataclasses.asdict(self.reuse)
        if self.stop is not None:
            # ``margin`` only when not the default, as ``deals``.
            extra["stop"] = {key: value for key, value in dataclasses.asdict(self.stop).items()
                             if key != "margin" or value != StopRule.margin}
        return {**super().identity(), "bots": [str(path) for path in self.bots], "repeats": self.repeats,
                "format": self.format, **extra}


SEED_MAX_CHARS = 1000
WEAK_SEED_BITS = 64
"""A configured seed with fewer bits than this (by :func:`seed_bits`) is one a bot could find by trying seeds
against its own hand: :func:`seed_warning` says so."""
SEED_EXPECTED = f"a non-negative integer or a string of 1 to {SEED_MAX_CHARS} characters (best: leave it out)"


def parse_seed(data: Mapping[Any, Any], problems: _Problems) -> Secret | None:
    """The ``seed`` key: absent (None: a secret is made when the run is created), a non-negative integer or a
    string."""
    seed = data.get("seed")
    if seed is None and "seed" not in data:
        return None
    if type(seed) is int and seed >= 0 or isinstance(seed, str) and 1 <= len(seed) <= SEED_MAX_CHARS:
        return seed
    # The value is not echoed: a seed is a secret, even a bad one.
    got = ("a negative integer" if type(seed) is int else f"a string of {len(seed)} characters"
           if isinstance(seed, str) else "nothing" if seed is None else f"a {type(seed).__name__}")
    problems.say("seed", f"expected {SEED_EXPECTED}, got {got}")
    return None


def seed_bits(seed: Secret) -> float:
    """A generous estimate of the bits a guesser must try to find ``seed``: an integer's length in bits; a string's
    length times the bits of a character drawn from the classes it uses (lower and upper case letters, digits,
    anything else). Words and patterns make a real string far weaker than this."""
    if isinstance(seed, int):
        return float(seed.bit_length())
    pool = sum(size for found, size in ((any(c.islower() for c in seed), 26), (any(c.isupper() for c in seed), 26),
                                        (any(c.isdigit() for c in seed), 10),
                                        (any(not c.isalnum() for c in seed), 33)) if found)
    return len(seed) * math.log2(max(pool, 2))


def seed_warning(config: RunConfig) -> str | None:
    """A one-line warning for a configured seed short enough to guess, else None. It never shows the seed."""
    if config.seed is None or seed_bits(config.seed) >= WEAK_SEED_BITS:
        return None
    return (f"warning: {config.source or config.name}: seed: easy to guess (about {seed_bits(config.seed):.0f} bits, "
            f"under {WEAK_SEED_BITS}): a bot that tries seeds against its own hand could find it and know every hand; "
            "leave seed out (a secret is then made and kept in the store) or give a long random one, such as the "
            "output of: python3 -c 'import secrets; print(secrets.token_hex(16))'")


SHARED_KEYS = {"name", "bots", "players", "seed", "rules", "limits", "sandbox", "workers", "rating", "retries",
               "registry", "cluster"}
TOP_KEYS = SHARED_KEYS | {"format", "deals", "repeats", "stop", "reuse"}
LEAGUE_KEYS = SHARED_KEYS | {"versions", "groups_per_batch", "keep_stderr", "throttle", "reuse"}
LIMIT_KEYS = {f.name for f in dataclasses.fields(Limits)} | {f.name for f in dataclasses.fields(SandboxLimits)}


class _Problems:
    """The problems of one config (or of a server config's ``league:`` section, ``prefix`` then ``league.``), each
    naming the file and the key, collected so that an organiser fixes a config in one go rather than one error per
    run."""

    def __init__(self, source: Path, prefix: str = "") -> None:
        self.source = source
        self.prefix = prefix
        self.found: list[ConfigError] = []

    def bad(self, key: str, expected: str, value: object) -> ConfigError:
        return ConfigError(f"{self.source}: {self.prefix}{key}: expected {expected}, got {excerpt(value)}")

    def expected(self, key: str, expected: str, value: object) -> None:
        self.found.append(self.bad(key, expected, value))

    def say(self, key: str, words: str) -> None:
        self.found.append(ConfigError(f"{self.source}: {self.prefix}{key}: {words}"))

    def checked(self, parse: Callable[[], T], default: T) -> T:
        """What ``parse`` returns, or ``default`` with its error kept."""
        try:
            return parse()
        except ConfigError as error:
            self.found.append(error)
            return default

    def raise_any(self) -> None:
        if self.found:
            raise ConfigError("\n".join(str(problem) for problem in self.found))


def load_config(path: str | os.PathLike[str], registry: Path | None = None) -> TournamentConfig:
    """Read and validate a tournament config, or raise :class:`ConfigError`.

    ``registry`` is where ``registry:`` bot entries are looked up when the config has no ``registry`` key (the CLI
    passes the one beside its store); docs/REGISTRY.md describes the syntax.
    """
    source = Path(path)
    try:
        data = load_yaml(source.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{source}: no such config file") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise ConfigError(f"{source}: cannot read the config: {error}") from None
    return parse_config(data, source, registry)


def _parse_shared(data: Mapping[Any, Any], known: set[str], problems: _Problems, workers: int) -> dict[str, Any]:
    """The :class:`RunConfig` keys checked alike for a tournament and a league, as keyword arguments: all but
    ``players``, whose bounds differ (a tournament's table is at most its bots). Unknown and missing keys are
    problems too; ``workers`` is that key's default."""
    for key in sorted(str(key) for key in data if key not in known):
        problems.say(key, f"unknown key (known: {', '.join(sorted(known))})")
    for required in ("name", "bots", "players"):
        if required not in data:
            problems.say(required, "missing (required keys: name, bots, players)")
    name = data.get("name", "")
    if "name" in data and (not isinstance(name, str) or not TOURNAMENT_NAME.fullmatch(name)):
        problems.expected("name", "a slug matching [a-z0-9][a-z0-9_-]{0,39}", name)
    sandbox = data.get("sandbox", BACKENDS[0])
    if sandbox not in BACKENDS:
        problems.expected("sandbox", "one of " + ", ".join(BACKENDS), sandbox)
        sandbox = BACKENDS[0]  # so that the limits are still checked
    workers = data.get("workers", workers)
    if type(workers) is not int or not 1 <= workers <= 256:
        problems.expected("workers", "an integer from 1 to 256", workers)
        workers = 1  # a league's groups per batch default to it
    retries = data.get("retries", 2)
    if type(retries) is not int or not 0 <= retries <= 10:
        problems.expected("retries", "an integer from 0 to 10", retries)
    cluster = data.get("cluster")
    if cluster is not None and (not isinstance(cluster, str) or cluster_address_problem(cluster)):
        problems.expected("cluster", CLUSTER_EXPECTED, cluster)
    rules = problems.checked(lambda: _rules(section(data, "rules"), problems), Rules())
    limits, sandbox_limits = problems.checked(lambda: parse_limits(section(data, "limits"), problems.bad, sandbox),
                                              (Limits(), SandboxLimits()))
    rating = problems.checked(lambda: parse_rating(section(data, "rating"), problems.bad), RatingConfig())
    return {"name": name, "seed": parse_seed(data, problems), "sandbox": sandbox, "workers": workers,
            "retries": retries, "cluster": cluster, "rules": rules, "limits": limits,
            "sandbox_limits": sandbox_limits, "rating": rating}


def section(data: Mapping[Any, Any], key: str) -> object:
    """A section such as ``rules:``: absent or empty (null) means the defaults, anything else is checked as given
    (``rules: 0`` or ``rules: false`` is an error, not the defaults: the published schemas say the same)."""
    value = data.get(key)
    return {} if value is None else value


def parse_config(data: object, source: Path, registry: Path | None = None) -> TournamentConfig:
    """Validate a parsed config. Every problem is reported at once, one line each."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source}: expected a mapping of keys (name, bots, players, ...), got "
                          f"{type(data).__name__}")
    problems = _Problems(source)
    shared = _parse_shared(data, TOP_KEYS, problems, os.cpu_count() or 1)
    bad = problems.bad
    found = problems.checked(lambda: _registry(data.get("registry"), source, bad, registry), None)
    bots: tuple[Path, ...] = ()
    if "bots" in data and found is not None:
        bots = problems.checked(lambda: _bots(data["bots"], source, bad, found), ())
    most = min(8, len(bots)) if bots else 8  # with bad bots, only the range the game allows can be checked
    players = data.get("players", 2)
    if "players" in data and (type(players) is not int or not 2 <= players <= most):
        problems.expected("players", f"an integer from 2 to {most} (at most the number of bots)", players)
    repeats = data.get("repeats", 1)
    if type(repeats) is not int or not 1 <= repeats <= 10_000:
        problems.expected("repeats", "an integer from 1 to 10000", repeats)
    format_ = data.get("format", "round-robin")
    if format_ not in FORMATS:
        problems.expected("format", "one of " + ", ".join(FORMATS), format_)
    deals = data.get("deals", "duplicate")
    if deals not in DEALS:
        problems.expected("deals", "one of " + ", ".join(DEALS), deals)
    stop = None
    if "stop" in data:
        if "repeats" in data:
            problems.expected("repeats", "no repeats with stop (stop.max_matches bounds the tournament)", repeats)
        stop = problems.checked(lambda: _stop(data["stop"], bad), None)
        if stop is not None and not problems.found:  # one round's size needs valid bots, players and deals
            round_matches = len(make_schedule(len(bots), players, 1, 0, deals))
            if stop.max_matches < round_matches:
                problems.expected("stop.max_matches", f"at least {round_matches} (one round of this schedule)",
                                  stop.max_matches)
            repeats = max(1, stop.max_matches // round_matches)
    reuse = _reuse(data.get("reuse", False), problems)
    problems.raise_any()
    return TournamentConfig(**shared, bots=bots, players=players, repeats=repeats, format=format_,
                            deals=deals, stop=stop, reuse=reuse, source=source)


REUSE_EXPECTED = "true, false, or a mapping with matches (an integer from 2 to 1000) and memory_fraction (0.1 to 1)"


def _reuse(value: object, problems: _Problems) -> Reuse | None:
    if value is False:
        return None
    if value is True:
        return Reuse()
    if not isinstance(value, Mapping) or set(value) - {"matches", "memory_fraction"}:
        problems.expected("reuse", REUSE_EXPECTED, value)
        return None
    matches = value.get("matches", Reuse.matches)
    fraction = value.get("memory_fraction", Reuse.memory_fraction)
    if type(matches) is not int or not 2 <= matches <= 1000:
        problems.expected("reuse.matches", "an integer from 2 to 1000", matches)
        return None
    if type(fraction) not in (int, float) or not 0.1 <= fraction <= 1:
        problems.expected("reuse.memory_fraction", "a number from 0.1 to 1", fraction)
        return None
    return Reuse(matches, float(fraction))


def _rules(value: object, problems: _Problems) -> Rules:
    try:
        return Rules.from_dict(value)  # type: ignore[arg-type]
    except RulesError as error:
        raise ConfigError(f"{problems.source}: {problems.prefix}{error}") from None


CLUSTER_EXPECTED = "a Dask scheduler address: local:N (N from 1 to 256), tcp://HOST:PORT or tls://HOST:PORT"
CLUSTER_ADDRESS = re.compile(r"local:(?P<n>[0-9]{1,3})|(?:tcp|tls)://(?:\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+):[0-9]{1,5}")


def cluster_address_problem(address: str) -> str | None:
    """Why ``address`` is not one ``--cluster`` and ``cluster:`` accept, or None when it is."""
    found = CLUSTER_ADDRESS.fullmatch(address)
    if found is None or found["n"] is not None and not 1 <= int(found["n"]) <= 256:
        return f"expected {CLUSTER_EXPECTED}, got {address!r}"
    return None


def _registry(value: object, source: Path, bad: Any, default: Path | None) -> tuple[Path, str]:
    """The ``registry`` key: a directory, or {dir: DIR, versions: latest|all}; relative to the config file."""
    if value is None:
        value = {}
    if isinstance(value, str):
        value = {"dir": value}
    if not isinstance(value, Mapping):
        raise bad("registry", "a directory, or a mapping such as {dir: ../results/bots, versions: latest}", value)
    for key in value:
        if key not in ("dir", "versions"):
            raise bad(f"registry.{key}", "one of dir, versions", key)
    directory = value.get("dir")
    if directory is not None and (not isinstance(directory, str) or not directory):
        raise bad("registry.dir", "a registry directory (relative to the config file)", directory)
    versions = value.get("versions", "latest")
    if versions not in VERSION_MODES:
        raise bad("registry.versions", "one of " + ", ".join(VERSION_MODES), versions)
    if directory is not None:
        return (source.resolve().parent / directory).resolve(), versions
    return (default or DEFAULT_REGISTRY).resolve(), versions


def _bots(value: object, source: Path, bad: Any, registry: tuple[Path, str]) -> tuple[Path, ...]:
    if (not isinstance(value, list) or not all(isinstance(v, str) and v for v in value)
            or len(value) < 2 and not any(v.startswith(REGISTRY_PREFIX) for v in value if isinstance(v, str))):
        raise bad("bots", "a list of at least 2 bot directories", value)
    base = source.resolve().parent
    paths: list[Path] = []
    for index, entry in enumerate(value):
        if entry.startswith(REGISTRY_PREFIX):
            # Registry entries become the versioned directories they name, so the tournament (and its identity)
            # records exactly which version plays; one version named twice (registry:* and a pin) enters once.
            try:
                found = Registry(registry[0]).resolve(entry[len(REGISTRY_PREFIX):], registry[1])
            except RegistryError as error:
                raise ConfigError(f"{source}: bots[{index}]: {error}") from None
            paths.extend(v.directory for v in found if v.directory not in paths)
            continue
        try:
            path = sample_bot(entry) or (base / entry).resolve()
        except NoSuchSample as error:
            raise ConfigError(f"{source}: bots[{index}]: {error}") from None
        if not path.is_dir():
            raise ConfigError(f"{source}: bots[{index}]: expected a bot directory, {excerpt(entry)} is not one "
                              f"(relative paths are read from {base})")
        paths.append(path)
    if len(paths) < 2:
        raise bad("bots", "at least 2 bots (registry entries included)", value)
    if len(set(paths)) != len(paths):
        duplicate = next(p for p in paths if paths.count(p) > 1)
        raise ConfigError(f"{source}: bots: {duplicate} is listed twice")
    return tuple(paths)


def parse_limits(value: object, bad: Any, sandbox: str) -> tuple[Limits, SandboxLimits]:
    if not isinstance(value, Mapping):
        raise bad("limits", "a mapping such as {move_ms: 1000, memory_mb: 512}", value)
    for key, number in value.items():
        if key not in LIMIT_KEYS:
            raise bad(f"limits.{key}", "one of " + ", ".join(sorted(LIMIT_KEYS)), key)
        if type(number) is not int or number < (0 if key == "bank_ms" else 1):
            raise bad(f"limits.{key}", "a positive integer", number)
    time_keys = {f.name for f in dataclasses.fields(Limits)}
    sandbox_limits = SandboxLimits(**{k: v for k, v in value.items() if k not in time_keys})
    # A limit the host cannot grant would fail every launch, match after match: refuse it now, naming the key.
    for key, expected in ungrantable(sandbox_limits, sandbox).items():
        raise bad(f"limits.{key}", expected, value.get(key, getattr(sandbox_limits, key)))
    return Limits(**{k: v for k, v in value.items() if k in time_keys}), sandbox_limits


def _stop(value: object, bad: Any) -> StopRule:
    if not isinstance(value, Mapping):
        raise bad("stop", "a mapping such as {confidence: 0.95, max_matches: 600}", value)
    for key in value:
        if key not in ("confidence", "max_matches", "margin"):
            raise bad(f"stop.{key}", "one of confidence, max_matches, margin", key)
    if "max_matches" not in value:
        raise bad("stop.max_matches", "a number of matches (the bound of an open-ended tournament)", None)
    confidence = value.get("confidence", 0.95)
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0.5 < confidence < 1:
        raise bad("stop.confidence", "a probability above 0.5 and below 1, such as 0.95", confidence)
    max_matches = value["max_matches"]
    if type(max_matches) is not int or not 1 <= max_matches <= 10_000_000:
        raise bad("stop.max_matches", "a positive integer", max_matches)
    margin = value.get("margin", StopRule.margin)
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not 0 < margin < 0.5:
        raise bad("stop.margin", "a share above 0 and below 0.5, such as 0.15 (equal within 35-65% of meetings)",
                  margin)
    return StopRule(float(confidence), max_matches, float(margin))


def parse_rating(value: object, bad: Any) -> RatingConfig:
    if not isinstance(value, Mapping):
        raise bad("rating", "a mapping such as {mu: 25, sigma: 8.333}", value)
    known = {f.name for f in dataclasses.fields(RatingConfig)}
    numbers: dict[str, float] = {}
    for key, number in value.items():
        if key not in known:
            raise bad(f"rating.{key}", "one of " + ", ".join(sorted(known)), key)
        if isinstance(number, bool) or not isinstance(number, (int, float)) or not 0 < number < math.inf:
            raise bad(f"rating.{key}", "a positive number", number)  # .nan and .inf too: the fit would be NaN
        numbers[key] = float(number)
    if numbers.get("draw_probability", 0.02) >= 1:
        raise bad("rating.draw_probability", "a probability above 0 and below 1", numbers["draw_probability"])
    return RatingConfig(**numbers)


@dataclass(frozen=True, kw_only=True)
class LeagueConfig(RunConfig):
    entries: tuple[str, ...]
    """``registry:*``, ``registry:NAME`` (pinned versions too), or absolute bot directories (house bots)."""
    registry: Path
    versions: str = "latest"
    groups_per_batch: int = 1
    keep_stderr: int = 50
    """Each bot version keeps its seats' stderr for its latest this many matches; older seats' is cleared every
    batch (the latest 50 are what an author's ``/me`` page shows)."""
    throttle: bool = True
    """Whether a bot whose matches take over twice the median's is scheduled less (arena/run/matchmaking.py). The
    throttle reads match times, so with it the schedule depends on the machine's speed: ``false`` for a league
    that must play the same matches on any machine and any backend."""
    reuse: Reuse | None = None
    """Bots that say ``persistent`` play several matches per process, in each batch's chains (arena/run/lanes.py),
    as a tournament's do; None (``reuse: false``, the default): a process per seat and match."""

    def identity(self) -> dict[str, Any]:
        """What decides the results (not workers, batch size, cluster or where the registry is), as plain data."""
        # The throttle's and reuse's keys only when not the default: the identity of every league made before them
        # stays the same.
        return {**super().identity(), "league": True, "bots": list(self.entries), "versions": self.versions,
                **({} if self.throttle else {"throttle": False}),
                **({} if self.reuse is None else {"reuse": dataclasses.asdict(self.reuse)})}


def parse_league(data: Mapping[str, Any], path: Path, default_registry: Path) -> LeagueConfig:
    """Validate the ``league:`` section of a server config (arena/server/config.py); every problem at once, each
    naming its key as ``league.KEY``."""
    problems = _Problems(path, "league.")
    shared = _parse_shared(data, LEAGUE_KEYS, problems, 1)
    base = path.resolve().parent
    entries: list[str] = []
    first_index: dict[str, int] = {}
    bots = data.get("bots", [])
    if "bots" in data and (not isinstance(bots, list) or not bots
                           or not all(isinstance(entry, str) and entry for entry in bots)):
        problems.expected("bots", "a list of entries such as registry:* or bot directories", bots)
        bots = []
    for index, entry in enumerate(bots):
        if entry.startswith(REGISTRY_PREFIX):
            named = entry
        else:
            try:
                directory = sample_bot(entry) or (base / entry).resolve()
            except NoSuchSample as error:
                problems.say(f"bots[{index}]", str(error))
                continue
            if not directory.is_dir():
                problems.say(f"bots[{index}]", f"expected registry:..., sample:NAME or a bot directory, "
                                               f"{excerpt(entry)} is not one (relative paths are read from {base})")
            named = str(directory)
        if named in first_index:
            # A house bot listed twice would enter twice: two seats of one program at a table, rated as one.
            problems.say(f"bots[{index}]", f"{excerpt(entry)} names the same bot as bots[{first_index[named]}]; "
                                           "list each bot once")
            continue
        first_index[named] = index
        entries.append(named)
    numbers: dict[str, int] = {}
    defaults = {"groups_per_batch": shared["workers"], "keep_stderr": LeagueConfig.keep_stderr}
    for key, low, high in (("players", 2, 8), ("groups_per_batch", 1, 1000),
                           ("keep_stderr", 1, 1_000_000)):
        # one group per worker keeps the pool busy without stale schedules
        value = data.get(key, defaults.get(key, low))
        if type(value) is not int or not low <= value <= high:
            problems.expected(key, f"an integer from {low} to {high}", value)
        numbers[key] = value
    versions = data.get("versions", "latest")
    if versions not in VERSION_MODES:
        problems.expected("versions", "one of " + ", ".join(VERSION_MODES), versions)
    registry = data.get("registry")
    if registry is not None and (not isinstance(registry, str) or not registry):
        problems.expected("registry", "a registry directory (relative to the config file)", registry)
    throttle = data.get("throttle", True)
    if not isinstance(throttle, bool):
        problems.expected("throttle", "true or false", throttle)
    reuse = _reuse(data.get("reuse", False), problems)
    if reuse is not None and "groups_per_batch" not in data:
        # A block of reuse.matches groups per worker: a block's chains share its deals and play one after another
        # (arena/run/lanes.py), and a batch of fewer groups would make the lanes as short as itself.
        numbers["groups_per_batch"] = min(1000, shared["workers"] * reuse.matches)
    problems.raise_any()
    return LeagueConfig(**shared, players=numbers["players"],
                        groups_per_batch=numbers["groups_per_batch"], keep_stderr=numbers["keep_stderr"],
                        entries=tuple(entries), versions=versions, throttle=throttle, reuse=reuse,
                        source=path, registry=(base / registry).resolve() if registry else default_registry.resolve())
