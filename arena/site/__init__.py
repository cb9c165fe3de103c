"""The results site: static HTML pages (standings, bots, matches, replays) built from the results store.

Three layers, so that each can be tested alone. :mod:`arena.site.snapshot` reads a tournament from the store, and
:mod:`arena.site.pages` makes from it plain dataclasses, one module per page kind (with :mod:`arena.site.common`
and :mod:`arena.site.rows` for what several pages show, :mod:`arena.site.urls` for where each page is,
:mod:`arena.site.downloads` for the results files, and :mod:`arena.site.replay` for a match's move list and its
replay's data from its log's view, :mod:`arena.match.matchview`). :mod:`arena.site.svg` draws charts as strings and
:mod:`arena.site.html` fills the Jinja2 templates in ``site/templates`` with them. :mod:`arena.site.build` is the
(incremental, parallel) build, and :mod:`arena.site.output` the only module that writes files.
"""
