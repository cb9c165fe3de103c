"""Chromium for the site's browser tests: the fixtures and helpers every browser test module shares.

Importing this module skips the importing test module, saying why, when Debian's ``chromium`` or the ``playwright``
package is missing, unless ARENA_REQUIRE_BROWSER=1 (as in CI), in which case it fails.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
SCREENSHOTS = ROOT / "test-output" / "screenshots"
CHROMIUM = os.environ.get("ARENA_CHROMIUM", "/usr/bin/chromium")
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                "--no-first-run", "--disable-dev-shm-usage"]


def _missing() -> str | None:
    if not Path(CHROMIUM).is_file():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[test]')"
    return None


MISSING = _missing()
if MISSING is not None:
    if os.environ.get("ARENA_REQUIRE_BROWSER") == "1":
        pytest.fail(f"ARENA_REQUIRE_BROWSER=1 but {MISSING}", pytrace=False)
    pytest.skip(MISSING, allow_module_level=True)

from playwright.sync_api import Browser, Page, expect, sync_playwright

__all__ = ["Browser", "Page", "expect"]
"""A test module imports ``browser_fixture`` and ``page_fixture`` to have the fixtures ``browser`` and ``page``."""



@pytest.fixture(scope="module", name="browser")
def browser_fixture() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        yield launched
        launched.close()


@pytest.fixture(name="page")
def page_fixture(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    yield opened
    context.close()
    assert errors == [], errors


def url(path: Path) -> str:
    return path.resolve().as_uri()


def shoot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


@contextmanager
def opened(browser: Browser, width: int, dark: bool = False,
           height: int | None = None) -> Iterator[Page]:
    """A page of ``width`` CSS px: below 1000 a phone (touch, mobile viewport; upright unless ``height`` says
    otherwise), else a desktop."""
    phone = width < 1000
    size = {"width": width, "height": height or (844 if phone else 900)}
    context = browser.new_context(viewport=size, is_mobile=phone,
                                  has_touch=phone, color_scheme="dark" if dark else "light")
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    try:
        yield page
    finally:
        context.close()
    assert errors == [], errors
