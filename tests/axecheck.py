"""Test helper: axe-core (pinned: the axe-playwright-python package of the ``test`` extra bundles it) run on a page
open in Playwright, its violations as readable lines.

The browser tests of the results site and of the league server assert :func:`problems` is empty on every page type,
so a failure names each rule, its impact and the elements (CSS selectors) that break it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page

TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"]
"""WCAG 2.2 A and AA, and axe's best practices (landmarks, a main, unique labels, headings)."""
IMPACTS = ("serious", "critical")
ALSO = frozenset({"landmark-unique", "landmark-one-main", "region", "skip-link", "page-has-heading-one"})
"""Rules held to even when axe rates them moderate: what the site was fixed for (two navs both labelled "Pages")."""

AXE = Axe()


SAME = [["table.matches tbody.deal:nth-of-type(n+4)"], ["table.matches tbody:not(.deal) tr:nth-child(n+10)"]]
"""Left out of a check: a match list's rows past its third deal (or ninth row), the same markup as the rows before
them, each one more second of axe's contrast rule on a loaded machine."""


def run(page: Page, rules: Sequence[str] | None = None) -> dict[str, Any]:
    """axe-core's whole answer for the page as it is now (its script injected into the page): the rules of
    :data:`TAGS`, or only ``rules``, over all of the page but :data:`SAME`."""
    only = {"type": "tag", "values": TAGS} if rules is None else {"type": "rule", "values": list(rules)}
    found: dict[str, Any] = AXE.run(page, context={"include": [["html"]], "exclude": SAME},
                                    options={"runOnly": only, "resultTypes": ["violations"]}).response
    return found


def problems(page: Page, rules: Sequence[str] | None = None) -> list[str]:
    """The serious and critical violations (and those of :data:`ALSO`), a line each: rule, impact, what it wants,
    and the first elements that break it."""
    lines = []
    for violation in run(page, rules)["violations"]:
        if violation["impact"] not in IMPACTS and violation["id"] not in ALSO:
            continue
        targets = [" ".join(map(str, node["target"])) for node in violation["nodes"]]
        more = f" and {len(targets) - 5} more" if len(targets) > 5 else ""
        lines.append(f"{violation['id']} ({violation['impact']}): {violation['help']} at {'; '.join(targets[:5])}{more}")
    return lines
