"""The results site: static HTML pages (standings, bots, matches, replays) built from the results store.

Three layers, so that each can be tested alone: :mod:`arena.site.snapshot` reads the store into a snapshot of a
tournament, from which :mod:`arena.site.pages` (one module per page kind, with :mod:`arena.site.common` and
:mod:`arena.site.rows` for what several pages show, :mod:`arena.site.urls` for where each page is and
:mod:`arena.site.downloads` for the results files) makes plain dataclasses, one per page, with :mod:`arena.site.replay` making a match's move list and its replay's data from
its log's view (:mod:`arena.match.matchview`, kept beside the log); :mod:`arena.site.svg` draws charts as strings; :mod:`arena.site.render` fills the Jinja2 templates in
``site/templates`` with them and is the only module that writes files.
"""
