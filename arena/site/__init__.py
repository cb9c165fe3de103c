"""The results site: static HTML pages (standings, bots, matches, replays) built from the results store.

Three layers, so that each can be tested alone: :mod:`arena.site.data` reads the store (and the match logs) into
plain dataclasses, one per page, with :mod:`arena.site.replay` making a match's move list and its replay's data from
its log's view (:mod:`arena.match.matchview`, kept beside the log); :mod:`arena.site.svg` draws charts as strings; :mod:`arena.site.render` fills the Jinja2 templates in
``site/templates`` with them and is the only module that writes files.
"""
