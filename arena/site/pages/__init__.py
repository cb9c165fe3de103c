"""The data of each page kind of the results site, one module per kind: a pure function of a
:class:`arena.site.snapshot.Snapshot` (nothing here renders or writes: :mod:`arena.site.html` does)."""
