"""A cheating bot and the check that it learned nothing: the end-to-end rows of the integrity suite.

The bot, *peek*, plays like greedy and tries to learn the other seats' starting hands of round 1. It publishes its
own hand, under a fingerprint of the deal that every seat of every rotation sees alike (the players' names, sorted,
and the first floor card), through every channel it knows, and reads the other seats' hands back through the same
channels at each of its turns of round 1:

- ``drop``: a file in ``/tmp``. Nothing isolates ``/tmp`` under the ``plain`` sandbox, so there a copy reads what an
  earlier rotation of the same deal left: the control that shows the check below catches a leak.
- ``locks``: byte-range read locks on a file of the interpreter under ``/usr``, read back with ``F_GETLK`` from
  another process (the red team's H1 channel), when two rotations of a deal play at once.

*cache* (:data:`CACHE`) uses the page cache instead, across the rotations of one deal, which never play at once: at
round 1 it reads one byte of chosen pages of a file of its own bot directory (``pages.bin``) to encode its hand, and
exits with its match; its copy in a later rotation times one read of each page (a page another sandbox read is in
the kernel's cache: microseconds; one from the disk: tens or hundreds) against a threshold it calibrates on pages
it reads twice and pages nobody reads. :func:`write_cache_peek` writes it and drops ``pages.bin`` from the host's
cache, so that only the bot's own reads put pages there.

What it learns it says on stderr (``LEARNED seat=S hand=...``), which the store keeps per seat; :func:`leaks`
compares every such claim with the hand the referee dealt that seat, read from the match's event log. A claim that
matches is a card the bot was neither dealt nor shown: five named cards cannot be guessed.
"""

from __future__ import annotations

import gzip
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from arena.game.results import MatchResult
from arena.store import Store

PEEK = r'''
import errno, fcntl, hashlib, json, os, struct, sys, time
import arena_bot

SHARED = os.__file__            # a file of the interpreter: under /usr, the same inode in every sandbox
DROP = "/tmp/arena-peek-drop"   # shared only where nothing isolates /tmp
BYTES = 64                      # a hand of five cards as text, with room to spare
WAIT_S = 0.5                    # how long the first turn of round 1 waits for a copy to publish


def fingerprint(players, floor):
    return hashlib.sha256(json.dumps([sorted(players), floor]).encode()).hexdigest()[:32]


def region(deal, seat):
    return (int(hashlib.sha256(f"{deal}/{seat}".encode()).hexdigest(), 16) % (1 << 36)) * 1024


def say(text):
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


class Peek(arena_bot.Bot):
    def __init__(self):
        self.players, self.seat, self.deal, self.lock_file, self.known = [], 0, None, None, set()
        self.waited = False

    def on_hello(self, message):
        self.players, self.seat = message["players"], message["seat"]

    def on_message(self, message):
        if message.get("type") == "round_start" and message.get("round") == 1:
            self.deal = fingerprint(self.players, message["floor"][0])
            self.publish(",".join(message["hand"]))

    def on_turn(self, message):
        # Round 1 only (its hands are shown to all at its end); the first turn waits for a copy to publish (which
        # costs only the bank).
        deadline = time.monotonic() + (0 if self.waited else WAIT_S)
        self.waited = True
        while message.get("round", 1) == 1 and self.deal is not None:
            for seat in range(len(self.players)):
                if seat != self.seat and seat not in self.known:
                    hand = self.read_drop(seat) or self.read_locks(seat)
                    if hand:
                        self.known.add(seat)
                        say(f"LEARNED seat={seat} hand={hand}")
            if len(self.known) == len(self.players) - 1 or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        card = max(message["hand"], key=arena_bot.value)
        return arena_bot.play([card], "deck")

    def publish(self, hand):
        try:
            os.makedirs(DROP, exist_ok=True)
            with open(os.path.join(DROP, f"{self.deal}-{self.seat}"), "w") as out:
                out.write(hand)
        except OSError as error:
            say(f"drop refused: {errno.errorcode.get(error.errno, error.errno)}")
        self.lock_file = open(SHARED, "rb")
        try:
            base = region(self.deal, self.seat)
            data = hand.encode().ljust(BYTES, b"\0")
            bits = [(byte >> i) & 1 for byte in data for i in range(8)]
            for index, bit in enumerate(bits):
                if bit:
                    fcntl.lockf(self.lock_file, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, base + 1 + index)
            fcntl.lockf(self.lock_file, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, base)  # present: the message is whole
        except OSError as error:
            say(f"locks refused: {errno.errorcode.get(error.errno, error.errno)}")

    def read_drop(self, seat):
        try:
            with open(os.path.join(DROP, f"{self.deal}-{seat}")) as found:
                return found.read()
        except OSError:
            return None

    def locked(self, fd, offset):
        query = struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, offset, 1, 0)
        return struct.unpack("hhqqi4x", fcntl.fcntl(fd, fcntl.F_GETLK, query))[0] != fcntl.F_UNLCK

    def read_locks(self, seat):
        # Through the descriptor that holds this copy's own locks: closing any other descriptor of the file would
        # release them (POSIX locks belong to the process and the file, not to the descriptor).
        if self.lock_file is None:
            return None
        try:
            base = region(self.deal, seat)
            if not self.locked(self.lock_file, base):
                return None
            bits = [self.locked(self.lock_file, base + 1 + i) for i in range(BYTES * 8)]
        except OSError:
            return None
        data = bytes(sum(bits[8 * n + i] << i for i in range(8)) for n in range(BYTES))
        return data.rstrip(b"\0").decode(errors="replace")


arena_bot.run(Peek())
'''

CACHE = r'''
import hashlib, json, os, random, sys, time
import arena_bot

PAGES = "/bot/pages.bin"
PAGE = 4096
STRIDE = 2                      # pages between two bits' pages (readahead is off: POSIX_FADV_RANDOM)
COPIES = 3                      # pages per bit, read as the quickest: a busy machine only ever adds time
REGION = 512                    # pages per seat's message: a presence bit, then 3 bits of length + 6 bits a card
SLOTS = 7                       # regions; the file's last region is for calibration
DECK = [rank + suit for suit in "CDHS" for rank in "A23456789TJQK"]


def fingerprint(players, floor):
    return hashlib.sha256(json.dumps([sorted(players), floor]).encode()).hexdigest()[:32]


def say(text):
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


class CachePeek(arena_bot.Bot):
    def __init__(self):
        self.players, self.seat, self.deal, self.tried = [], 0, None, False
        self.fd = os.open(PAGES, os.O_RDONLY)
        os.posix_fadvise(self.fd, 0, 0, os.POSIX_FADV_RANDOM)  # no readahead: one read, one page
        self.rng = random.Random()

    def on_hello(self, message):
        self.players, self.seat = message["players"], message["seat"]

    def base(self, seat):
        start = int(hashlib.sha256(self.deal.encode()).hexdigest(), 16)
        return ((start + seat) % SLOTS) * REGION

    def touch(self, page):
        os.pread(self.fd, 1, page * PAGE)

    def timed(self, page):
        start = time.perf_counter_ns()
        os.pread(self.fd, 1, page * PAGE)
        return time.perf_counter_ns() - start

    def threshold(self):
        """Between a page read twice (cached) and a page nobody read (the calibration region), geometrically; the
        quickest of each, as a busy machine only ever adds time."""
        fast, slow = [], []
        for page in self.rng.sample(range(SLOTS * REGION, (SLOTS + 1) * REGION), 9):
            slow.append(self.timed(page))
            fast.append(self.timed(page))
        return (min(fast) * sorted(slow)[4]) ** 0.5  # the median: another copy's calibration cached a few pages

    def on_message(self, message):
        if message.get("type") == "round_start" and message.get("round") == 1:
            self.deal = fingerprint(self.players, message["floor"][0])
            hand = message["hand"]
            bits = [1] + [len(hand) >> i & 1 for i in range(3)]
            for card in hand[:7]:
                bits += [DECK.index(card) >> i & 1 for i in range(6)]
            base = self.base(self.seat)
            for index, bit in enumerate(bits):
                for copy in range(COPIES) if bit else ():
                    self.touch(base + (index * COPIES + copy) * STRIDE)

    def bit(self, base, index, threshold):
        return min(self.timed(base + (index * COPIES + copy) * STRIDE) for copy in range(COPIES)) < threshold

    def read(self, seat, threshold):
        """Each page of a region is read once, ever: a read caches it, for this sandbox and (shared) for others."""
        base = self.base(seat)
        if not self.bit(base, 0, threshold):
            return None  # nobody published here
        bits = [self.bit(base, index, threshold) for index in range(1, 1 + 3 + 7 * 6)]
        count = sum(bits[i] << i for i in range(3))
        cards = [DECK[index] for n in range(count)
                 if (index := sum(bits[3 + 6 * n + i] << i for i in range(6))) < len(DECK)]
        return cards if len(cards) == count and len(set(cards)) == count and count else None

    def on_turn(self, message):
        if message.get("round", 1) == 1 and self.deal is not None and not self.tried:
            self.tried = True
            threshold = self.threshold()
            say(f"cache threshold {threshold / 1000:.1f} us")
            for seat in range(len(self.players)):
                if seat != self.seat:
                    hand = self.read(seat, threshold)
                    if hand:
                        say(f"LEARNED seat={seat} hand={','.join(hand)}")
        card = max(message["hand"], key=arena_bot.value)
        return arena_bot.play([card], "deck")


arena_bot.run(CachePeek())
'''
PAGES_BYTES = 8 * 512 * 4096
"""``pages.bin``: seven seat regions and a calibration region of 512 pages."""

MANIFEST = "name: {name}\ncommand: python3 bot.py\nlanguage: python\n"

CLAIM = re.compile(r"^LEARNED seat=(\d+) hand=(\S*)$", re.MULTILINE)


def write_peek(directory: Path, name: str = "peek") -> Path:
    """The cheating bot in ``directory/name``."""
    bot = directory / name
    bot.mkdir(parents=True)
    (bot / "bot.py").write_text(PEEK)
    (bot / "bot.yaml").write_text(MANIFEST.format(name=name))
    return bot


def write_cache_peek(directory: Path, name: str = "cache") -> Path:
    """The page-cache cheater in ``directory/name``, with its ``pages.bin``; :func:`uncache` it once loaded."""
    bot = directory / name
    bot.mkdir(parents=True)
    (bot / "bot.py").write_text(CACHE)
    (bot / "bot.yaml").write_text(MANIFEST.format(name=name))
    (bot / "pages.bin").write_bytes(os.urandom(PAGES_BYTES))
    return bot


def uncache(bot: Path) -> None:
    """Drop the cheater's ``pages.bin`` from the host's cache (after load_bot, whose hash reads every byte), so that
    only the bots' own reads put its pages there."""
    with open(bot / "pages.bin", "rb+") as pages:
        os.fsync(pages.fileno())
        os.posix_fadvise(pages.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)


@dataclass(frozen=True)
class Claim:
    """One thing a seat said it learned, and whether it was true."""

    match_id: int
    seat: int
    about: int
    hand: tuple[str, ...]
    true: bool


def dealt_hands(log: Path) -> dict[int, tuple[str, ...]]:
    """Each seat's starting hand of round 1, as the referee sent it (the event log's ``send`` records)."""
    hands: dict[int, tuple[str, ...]] = {}
    for line in gzip.decompress(log.read_bytes()).splitlines():
        record = json.loads(line)
        message = record.get("msg") or {}
        if record.get("t") == "send" and message.get("type") == "round_start" and message.get("round") == 1:
            hands[record["seat"]] = tuple(message["hand"])
    return hands


def claims_in(match_id: int, result: MatchResult, bot: str = "peek") -> list[Claim]:
    """Every claim the seats of ``bot`` made in one match, checked against its event log."""
    if result.log_path is None:
        return []
    hands = dealt_hands(Path(result.log_path))
    found = []
    for player in result.players:
        if player.name != bot:
            continue
        for about, hand in CLAIM.findall(player.stderr_tail or ""):
            cards = tuple(hand.split(",")) if hand else ()
            found.append(Claim(match_id, player.seat, int(about), cards, hands.get(int(about)) == cards))
    return found


def claims(store: Store, tid: int, bot: str = "peek") -> list[Claim]:
    """Every claim the seats of ``bot`` made in the tournament's matches."""
    return [claim for match in store.matches(tid) if match.result is not None
            for claim in claims_in(match.id, match.result, bot)]


def leaks(found: list[Claim]) -> list[Claim]:
    """The claims that named another seat's real starting hand: cards the bot was not dealt or shown."""
    return [claim for claim in found if claim.true and claim.about != claim.seat]
