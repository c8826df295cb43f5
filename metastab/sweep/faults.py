"""Fault injection at named points of a sweep's writes, for the tests of crash safety.

The points: ``start:mkdir``, ``start:locked``, ``json:manifest.json``, ``start:manifest``,
``chunk:written`` (before its rename), ``chunk:renamed`` (before its journal record),
``chunk:journaled``, ``discard:journaled`` (before the file is removed), ``json:results.json``.
"""

from __future__ import annotations

import os
import signal
import time

__all__ = ["checkpoint", "KILL_AT", "PAUSE_AT"]

KILL_AT, PAUSE_AT = "METASTAB_SWEEP_KILL_AT", "METASTAB_SWEEP_PAUSE_AT"
_hits: dict[str, int] = {}


def checkpoint(name: str) -> None:
    """Fault-injection hook at a named point of a sweep's writes (used by the tests).

    ``METASTAB_SWEEP_KILL_AT=NAME`` (or ``NAME#K``: at its K-th pass) makes the process kill
    itself with SIGKILL there; ``METASTAB_SWEEP_PAUSE_AT=NAME=SECONDS`` sleeps there, and
    ``NAME=PATH`` waits there until the file PATH exists (at most ten minutes), so that a test can
    hold a sweep at a point for exactly as long as it needs, however loaded the machine. Unset, it
    costs one dictionary lookup.
    """
    kill, pause = os.environ.get(KILL_AT), os.environ.get(PAUSE_AT)
    if not (kill or pause):
        return
    _hits[name] = _hits.get(name, 0) + 1
    if pause and pause.rpartition("=")[0] == name:
        _pause(pause.rpartition("=")[2])
    if kill:
        where, _, count = kill.partition("#")
        if where == name and _hits[name] == int(count or 1):
            os.kill(os.getpid(), signal.SIGKILL)


def _pause(until: str) -> None:
    try:
        time.sleep(float(until))
        return
    except ValueError:
        pass
    deadline = time.monotonic() + 600
    while not os.path.exists(until) and time.monotonic() < deadline:
        time.sleep(0.02)
