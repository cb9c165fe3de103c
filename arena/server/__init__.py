"""The league server (``arena serve``): authors submit bots over HTTP, a league plays them continuously, and the
results site stays current. See docs/SERVER.md.

- :mod:`arena.server.authors`: authors, their API tokens (only a hash is stored), bot-name ownership, the log of
  accepted submissions that the rate limit counts;
- :mod:`arena.server.intake`: one upload from archive to registry version (archive guards, admission check,
  ownership, rate limit);
- :mod:`arena.server.config`: the server's config file (its ``league:`` section is arena/run/config.py's, and the
  league itself a runner of arena/run/league.py);
- :mod:`arena.server.views`: what the web threads read (a store connection per thread, cached public answers);
- :mod:`arena.server.sessions`: authors' browser sessions and the forms' CSRF tokens;
- :mod:`arena.server.authorpage`: an author's own page (``/me``), its login and logout;
- :mod:`arena.server.app`: the Starlette application (the HTTP API, the live standings, the public site).
"""
