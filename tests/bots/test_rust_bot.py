"""A Rust bot built by cargo passes ``arena check`` by the recipe of docs/REGISTRY.md ("Toolchains outside /usr"):
build on the host, copy the binary out of ``target/`` (cargo's outputs are hard links), leave ``target/`` where it
is (``.arenaignore``'s defaults). Skipped where cargo is not installed."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.runs import arena

SOURCES = Path(__file__).resolve().parents[1] / "data" / "rust-bot"


@pytest.mark.slow
def test_a_cargo_built_bot_passes_the_check_by_the_recipe(tmp_path: Path) -> None:
    cargo = shutil.which("cargo")
    if cargo is None:
        pytest.skip("cargo is not installed here")
    bot = tmp_path / "rusty"
    shutil.copytree(SOURCES, bot)
    # the recipe, as docs/REGISTRY.md gives it: std only, so --offline needs no crate
    built = subprocess.run([cargo, "build", "--release", "--offline", "--quiet"], cwd=bot, capture_output=True,
                           text=True, timeout=600, check=False)
    assert built.returncode == 0, built.stderr
    shutil.copyfile(bot / "target" / "release" / "rusty", bot / "rusty")  # a plain copy, not cargo's hard link
    (bot / "rusty").chmod(0o755)
    (bot / "bot.yaml").write_text("name: rusty\ncommand: ./rusty\nlanguage: rust\n")
    assert (bot / "target" / "release" / "rusty").stat().st_nlink > 1  # what the check would refuse, unignored

    done = arena("check", bot, "--json", cwd=tmp_path)
    report = json.loads(done.stdout)
    assert done.returncode == 0, json.dumps(report["steps"], indent=1)
    assert [step["step"] for step in report["steps"]] == ["manifest", "files", "hello", "self-play", "vs greedy"]
    files = report["steps"][1]["got"]
    assert files.startswith("5 files") and "leave out target" in files, files  # Cargo.toml, .lock, src, binary, yaml
