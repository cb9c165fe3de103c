"""The distribution as pyproject.toml declares it: every module arena/ imports is a declared dependency (in the
core list or in the extra of the code that needs it), nothing is declared that nothing imports, the names and the
version have one source each, and a missing extra is named with the pip line that brings it."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

import arena
from arena.extras import EXTRAS, missing_extra, pip_line
from arena.sandbox import docker_engine_status
from tests.support.runs import shadowed

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
TOOLING_EXTRAS = {"test", "dev"}
"""Extras for working on arena, not for running it: a module arena/ imports must not need one of them."""
IMPORTED_BY_NAME = {"mpmath"}
"""Declared but never imported by arena/: trueskill loads mpmath when told its backend's name ("mpmath")."""
EXTRA_CODE = {"server": ("arena/server/",), "cluster": ("arena/run/cluster.py",),
              "docker": ("arena/sandbox/docker.py", "arena/sandbox/docker_image.py")}
"""The code that runs only with each extra installed (the commands reach it through arena.extras' checks)."""


def normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_names(requirements: list[str]) -> set[str]:
    return {normal(re.match(r"[A-Za-z0-9._-]+", line).group()) for line in requirements}  # type: ignore[union-attr]


def release(version: str) -> tuple[int, ...]:
    """A plain release number as a tuple, trailing zeros dropped (0.37 is 0.37.0)."""
    parts = [int(part) for part in version.split(".")]
    while parts and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def imported_distributions() -> dict[str, set[str]]:
    """Each distribution that arena/'s code imports (the stdlib and arena itself left out), and the files that do."""
    owners = packages_distributions()
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "arena").rglob("*.py")):
        if "templates" in path.parts:  # a bot author's starting code, run by the bot's own interpreter
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.partition(".")[0]
                if top in sys.stdlib_module_names or top == "arena":
                    continue
                assert top in owners, f"{path.relative_to(ROOT)}: imports {top}, which no installed distribution has"
                for distribution in owners[top]:
                    found.setdefault(normal(distribution), set()).add(path.relative_to(ROOT).as_posix())
    return found


def test_every_imported_module_is_declared_where_the_code_that_imports_it_is_installed() -> None:
    core = requirement_names(PYPROJECT["dependencies"])
    extras = {name: requirement_names(lines) for name, lines in PYPROJECT["optional-dependencies"].items()}
    imported = imported_distributions()
    for distribution, files in sorted(imported.items()):
        if distribution in core:
            continue
        homes = [extra for extra, names in extras.items() if distribution in names and extra not in TOOLING_EXTRAS]
        assert homes, f"{distribution} is imported by {sorted(files)} but not declared in pyproject.toml"
        allowed = tuple(prefix for extra in homes for prefix in EXTRA_CODE[extra])
        outside = sorted(file for file in files if not file.startswith(allowed))
        assert not outside, f"{distribution} (extra {homes}) is imported outside that extra's code: {outside}"
    runtime = core | {name for extra, names in extras.items() if extra not in TOOLING_EXTRAS for name in names}
    assert runtime - set(imported) - IMPORTED_BY_NAME == set(), "declared, never imported"


def test_the_extras_checks_name_every_runtime_extra() -> None:
    runtime = set(PYPROJECT["optional-dependencies"]) - TOOLING_EXTRAS
    assert set(EXTRAS) == runtime == set(EXTRA_CODE)


def test_the_distribution_name_and_version_have_one_source() -> None:
    assert PYPROJECT["name"] == arena.DISTRIBUTION
    assert "version" not in PYPROJECT and PYPROJECT["dynamic"] == ["version"]
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert setuptools["dynamic"]["version"] == {"attr": "arena.__version__"}
    assert "py.typed" in setuptools["package-data"]["arena"] and (ROOT / "arena" / "py.typed").is_file()


def test_the_classifiers_name_the_pythons_ci_runs() -> None:
    """CI's python3 is the lowest that requires-python allows (the README's command runs on it); .ci/run loops
    over the others; the classifiers name exactly these."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    named = re.findall(r"^Programming Language :: Python :: (3\.\d+)$", "\n".join(PYPROJECT["classifiers"]), re.MULTILINE)
    others = re.search(r"^for version in ([\d. ]+); do$", ci, re.MULTILINE)
    assert others is not None, ".ci/run has no loop over the other Pythons"
    assert named == [PYPROJECT["requires-python"].removeprefix(">="), *others.group(1).split()] == ["3.11", "3.12", "3.13"]


def test_without_the_docker_sdk_the_docker_sandbox_names_the_extra(tmp_path: Path) -> None:
    """As on a host where arena was installed without its docker extra: the SDK's import fails."""
    env = shadowed(tmp_path, "docker")
    probe = (
        "from arena.sandbox import SandboxError, docker_engine_status, get_sandbox\n"
        "print(docker_engine_status())\n"
        "try:\n    get_sandbox('docker')\nexcept SandboxError as error:\n    print('refused:', error)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=ROOT,
                          check=False)
    assert done.returncode == 0, done.stderr
    expected = f"the docker sandbox needs the docker extra, which is not installed here (No module named 'docker'): " \
               f"{pip_line('docker')}"
    assert done.stdout.splitlines() == [str((False, expected)), f"refused: {expected}"]  # doctor prints the first


def test_with_the_docker_sdk_the_docker_extra_is_not_missing() -> None:
    pytest.importorskip("docker", reason="the docker extra is not installed here")
    assert missing_extra("docker", "the docker sandbox") is None
    assert pip_line("docker") not in docker_engine_status()[1]  # an engine's version, or why no engine answers


def test_ci_installs_every_lower_bound_that_pyproject_states() -> None:
    """.ci/constraints-lowest.txt pins each direct dependency at the lower bound pyproject.toml gives it (the dev
    extra's tools aside: the lowest run does not lint), so the bounds CI tests are the bounds users get."""
    lowest = dict(re.findall(r"^([A-Za-z0-9._-]+)==(\S+)$", (ROOT / ".ci" / "constraints-lowest.txt").read_text(
        encoding="utf-8"), re.MULTILINE))
    lowest = {normal(name): release(version) for name, version in lowest.items()}
    stated = {}
    for extra, lines in [("core", PYPROJECT["dependencies"]), *PYPROJECT["optional-dependencies"].items()]:
        for line in lines:
            found = re.match(r"([A-Za-z0-9._-]+)(?:\[[^]]*\])?\s*(?:>=|==)\s*([^,;\s]+)", line)
            if extra != "dev" and found and normal(found.group(1)) != normal(arena.DISTRIBUTION):
                stated[normal(found.group(1))] = release(found.group(2))
    assert {name: lowest.get(name) for name in stated} == stated
