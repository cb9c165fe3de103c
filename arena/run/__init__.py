"""Playing many matches and recording them: one run loop, and the runners that are policies over it.

One job a module: ``jobs`` (a match as a picklable job, and the worker process), ``players`` (where jobs run: the
local pool or a Dask cluster), ``cluster`` (the Dask side), ``plan`` (create or resume a run in the store),
``loop`` (the run loop: lease, signals, recording, verdicts, ratings), and the policies: ``tournament``,
``stoprule``, ``abtest`` and ``league``; ``series`` (``arena match --games``) plays on the local pool with no store.
"""
