"""The author kits (issue 40): the Python kit (protocol/kit-python, the module the sandbox also serves) and the
JavaScript kit (protocol/kit-js) are built from the repository, installed from their built packages into empty
environments, and play matches; both find the same legal sets; ``arena submit``'s upload client imports none of the
runner's heavy dependencies. Without npm the JavaScript tests skip, unless ARENA_REQUIRE_KITS is set (CI)."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from arena.bots.manifest import load_bot
from arena.game.rules import Rules
from arena.match.protocol import Limits
from arena.match.referee import play_match
from arena.registry.check import check_bot
from arena.resources import data_dir
from arena.sandbox.process import ProcessSandbox

ROOT = Path(__file__).resolve().parents[2]
KIT_PY = ROOT / "protocol" / "kit-python"
KIT_JS = ROOT / "protocol" / "kit-js"
HEAVY = ("numpy", "docker", "trueskill", "mpmath", "jinja2", "orjson", "click")


def need(program: str) -> str:
    found = shutil.which(program)
    if found is None:
        if os.environ.get("ARENA_REQUIRE_KITS"):
            pytest.fail(f"{program} is not installed, and ARENA_REQUIRE_KITS is set")
        pytest.skip(f"{program} is not installed here")
    return found


def test_the_upload_client_imports_none_of_the_runners_heavy_modules(tmp_path: Path) -> None:
    """Packing a bot for ``arena submit --server`` with numpy, docker and the rest made unimportable."""
    script = (f"import sys\nfor name in {HEAVY!r}:\n    sys.modules[name] = None\n"
              "from arena.registry.client import pack, upload\n"
              f"body = pack({str(data_dir('sample_bots') / 'greedy')!r})\n"
              f"print(len(body), sorted(m for m in {HEAVY!r} if sys.modules.get(m) is not None))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr
    size, loaded = done.stdout.split(" ", 1)
    assert int(size) > 500 and loaded.strip() == "[]"


def test_the_javascript_kit_finds_the_python_kits_legal_sets() -> None:
    node = need("node")
    import arena_bot  # protocol/ is on the test path, as it is on every bot's

    deck = [rank + suit for rank in arena_bot.RANKS for suit in "CDHS"]
    draw = random.Random(40)
    variants = [{}, {"two_pairs_mixed": False, "sequence_lengths": [3, 4, 5], "sequence_same_suit": True,
                     "flush_size": 3}, {"sequence_lengths": [4], "flush_size": 4}]
    cases = [(draw.sample(deck, draw.randint(1, 5)), variants[n % 3]) for n in range(600)]
    cases += [(["QH", "KH", "AH"], {}), (["KS", "AH", "2D"], {}), (["AS", "2S", "3S", "4S", "5S"], {})]
    script = ("const kit = require(process.argv[1]); const cases = JSON.parse(require('fs').readFileSync(0));"
              "process.stdout.write(JSON.stringify(cases.map(([hand, rules]) => kit.legalSets(hand, rules))));")
    done = subprocess.run([node, "-e", script, str(KIT_JS / "index.js")], input=json.dumps(cases),
                          capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == [arena_bot.legal_sets(hand, rules) for hand, rules in cases]


KIT_BOT = """import sys
import arena_bot
# the kit installed in this venv, not the copy the runner puts on PYTHONPATH
assert "site-packages" in arena_bot.__file__, arena_bot.__file__

class Greedy(arena_bot.Bot):
    def on_turn(self, message):
        if message["may_declare"] and arena_bot.total(message["hand"]) <= 4:
            return arena_bot.declare()
        return arena_bot.play(max(arena_bot.legal_sets(message["hand"], self.rules), key=arena_bot.total))

arena_bot.run(Greedy())
"""


@pytest.mark.slow
def test_the_python_kit_wheel_in_an_empty_venv_plays_a_match(tmp_path: Path) -> None:
    source = tmp_path / "kit"
    shutil.copytree(KIT_PY, source)  # the link to protocol/arena_bot.py becomes the file: the build leaves no trace
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(source), "-w",
                            str(tmp_path / "wheel")], capture_output=True, text=True, timeout=600, check=False)
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "wheel").glob("leastscore_bot-*.whl")
    empty = tmp_path / "venv"
    venv.create(empty)  # no pip of its own: this venv's pip installs into it (--python)
    python = empty / "bin" / "python"
    installed = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-index",
                                "--no-deps", str(wheel)], capture_output=True, text=True, timeout=600, check=False)
    assert installed.returncode == 0, installed.stderr
    probe = "import arena_bot, importlib.util; print(arena_bot.__file__, importlib.util.find_spec('arena'))"
    listed = subprocess.run([python, "-c", probe], capture_output=True, text=True, cwd=tmp_path, check=True)
    assert str(empty) in listed.stdout and listed.stdout.split()[1] == "None"  # the kit, and not the runner

    bot = tmp_path / "bot"
    bot.mkdir()
    (bot / "bot.py").write_text(KIT_BOT)
    # -E: not the runner's PYTHONPATH, which serves every bot protocol/arena_bot.py; the venv's kit, or nothing
    (bot / "bot.yaml").write_text(f"name: kit\ncommand: [{str(python)!r}, -E, bot.py]\n")
    # The venv is on this host, outside what a sandbox binds: the bot runs as a plain process (trusted: our own).
    box = ProcessSandbox(isolate=False)
    try:
        result = play_match([load_bot(bot), load_bot(data_dir("sample_bots") / "greedy")], 7, box,
                            Rules(threshold=30), Limits(), log_path=tmp_path / "m.jsonl.gz")
    finally:
        box.close()
    assert all(player.fault is None for player in result.players), [(p.fault, p.stderr_tail) for p in result.players]
    assert result.rounds > 0


KIT_JS_BOT = """const kit = require("leastscore-bot");
kit.run({
  onTurn(message) {
    if (message.may_declare && kit.total(message.hand) <= 4) return kit.declare();
    const sets = kit.legalSets(message.hand, this.rules);
    return kit.play(sets.reduce((a, b) => (kit.total(b) > kit.total(a) ? b : a)));
  },
});
"""


@pytest.mark.slow
def test_the_javascript_kit_packed_and_installed_offline_plays_in_the_sandbox(tmp_path: Path) -> None:
    npm = need("npm")
    packed = subprocess.run([npm, "pack", str(KIT_JS), "--pack-destination", str(tmp_path), "--silent"],
                            capture_output=True, text=True, cwd=tmp_path, timeout=300, check=False)
    assert packed.returncode == 0, packed.stderr
    (tarball,) = tmp_path.glob("leastscore-bot-*.tgz")
    bot = tmp_path / "bot"
    bot.mkdir()
    installed = subprocess.run([npm, "install", "--offline", "--no-audit", "--no-fund", str(tarball)],
                               capture_output=True, text=True, cwd=bot, timeout=300, check=False)
    assert installed.returncode == 0, installed.stderr
    (bot / "bot.js").write_text(KIT_JS_BOT)
    (bot / "bot.yaml").write_text("name: kit-js\ncommand: node bot.js\nlanguage: javascript\n")
    report = check_bot(bot)  # the real sandbox: node_modules/ travels with the bot (not ignored by default)
    assert report.fit, [step.to_dict() for step in report.steps]
