"""Test helper: the child processes of a test that interrupts them with SIGINT must take it.

A shell starts a background job with SIGINT ignored (`pytest ... &`), every process it starts inherits that, and
arena, like other Unix programs, keeps an ignored SIGINT ignored: a run started by such a test would never see
its Ctrl-C. No Popen option restores an ignored SIGINT before exec, so this runs in the child (``preexec_fn``).
"""

from __future__ import annotations

import signal


def default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
