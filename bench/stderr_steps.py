"""Benchmark: how many of a bot's stderr lines the referee logs at a step other than the move they were written for.

A copy of sample:greedy writes ``MARK turn N`` on stderr as it starts thinking of its N-th move (tests/support/
diarist.py); ``arena run`` plays it against sample:greedy in the chosen sandbox, and each line's logged step is
compared with the step of the bot's N-th move. The process sandbox reads stdout and stderr from their own pipes in
the same wake-up; docker's attach stream carries them apart and can hand stderr over later (issue 43). Prints one
JSON object: the sandbox, the matches, the lines and how many were logged at another step.

    python bench/stderr_steps.py [--sandbox process|docker] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arena.match.matchlog import load
from tests.support.diarist import DIARY, diarist, moves_of


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sandbox", default="process", choices=("process", "docker"))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        where = Path(scratch)
        config = {"name": "diary", "bots": [str(diarist(where / "bots", "diarist", "MARK")),
                                            str(ROOT / "sample_bots" / "greedy")],
                  "players": 2, "repeats": args.repeats, "seed": "stderr-steps-bench", "limits": {"move_ms": 2000},
                  "workers": 1, "sandbox": args.sandbox}
        (where / "diary.yaml").write_text(yaml.safe_dump(config))
        subprocess.run([sys.executable, "-m", "arena", "run", str(where / "diary.yaml"), "--db",
                        str(where / "results" / "arena.db"), "--no-site", "--json"], cwd=ROOT, check=True,
                       capture_output=True)
        logs = sorted((where / "results" / "logs" / "diary").glob("*.jsonl.gz"))
        lines = elsewhere = 0
        for path in logs:
            log = load(path)
            seat = next(seat for seat, bot in enumerate(log.header["bots"]) if bot["name"] == "diarist")
            logged = {int(found[2]): line.step for line in log.debug
                      if line.seat == seat and (found := DIARY.match(line.text))}
            for turn, step in enumerate(moves_of(log.events, seat), 1):
                lines += 1
                elsewhere += logged.get(turn) != step
    print(json.dumps({"sandbox": args.sandbox, "matches": len(logs), "lines": lines, "at_another_step": elsewhere}))


if __name__ == "__main__":
    main()
