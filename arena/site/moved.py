"""Pages left at the addresses a site's bot pages had before they moved: each a redirect to where the page is now.

A league's bot versions (``bob@2``) had pages under names built from their row ids (``bots/_b6-bob-2/``) until
``NAME@VERSION`` became an address of its own (``bots/bob@2/``). A site built before keeps those files in its
manifest, and a rebuild would remove them as pages it no longer makes; but authors shared those addresses, and
the site cannot know who links there. So where the last build left a page under an address the bot no longer
has, the build leaves in its place a page that sends the reader on (a meta refresh, with a canonical link and a
plain link for what does not follow one), and keeps it in later builds. A site that never had such pages gets none.
"""

from __future__ import annotations

import html
import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass

from arena.site.html import relative

ROW_ID_ADDRESS = re.compile(r"t/(?P<tournament>[^/]+)/bots/(?P<slug>_b(?P<id>[0-9]+)(?:-[a-z0-9_-]*)?)/(?P<page>[^/]+)")
"""A bot's file under an address made from its row id (:func:`arena.site.urls.slug`'s ``_bID-name``)."""


@dataclass(frozen=True)
class Moved:
    """An old file of the site and the page it is now."""

    path: str
    """Site-relative, as the old manifest has it."""
    target: str
    """Site-relative: the same page at the bot's address now, or its main page if that page is gone."""
    name: str
    """The bot's name, for the page's text."""


def moved_pages(old_paths: Collection[str], tslug: str, slugs: dict[int, tuple[str, str]],
                made: Collection[str]) -> Iterator[Moved]:
    """The files of tournament ``tslug`` among ``old_paths`` (the last build's) under a bot address that is no
    longer the bot's; ``slugs`` is each bot's name and address by row id, ``made`` the files this build made."""
    for path in old_paths:
        found = ROW_ID_ADDRESS.fullmatch(path)
        if found is None or found["tournament"] != tslug:
            continue
        bot = slugs.get(int(found["id"]))
        if bot is None or bot[1] == found["slug"]:
            continue  # not a bot of this tournament now, or its address still (a name no slug can take)
        same = f"t/{tslug}/bots/{bot[1]}/{found['page']}"
        yield Moved(path, same if same in made else f"t/{tslug}/bots/{bot[1]}/index.html", bot[0])


def redirect_page(moved: Moved) -> str:
    """The page left at ``moved.path``: links relative to it, as every page of the site (it works from ``file://``
    and under any prefix)."""
    href = html.escape(relative(moved.target, moved.path), quote=True)
    name = html.escape(moved.name)
    return (f'<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{name}: moved</title>\n'
            f'<link rel="canonical" href="{href}">\n<meta http-equiv="refresh" content="0; url={href}">\n'
            f'<meta name="robots" content="noindex">\n</head>\n<body>\n<p>The page of {name} is now at '
            f'<a href="{href}">{href}</a>.</p>\n</body>\n</html>\n')
