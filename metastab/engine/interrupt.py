"""Ctrl-C in an exact first passage: the chains computed so far are kept, not lost.

While :func:`deferred` is active in the main thread, SIGINT only sets a flag, which the exact loop
reads between kernel calls (a call is about half a second or less); the loop then stops at a step
t that every chain has reached, and :func:`metastab.first_passage` raises
:class:`metastab.Interrupted` carrying the run as it stands: exactly the run with
``max_steps=t`` (the same seed gives the same chains whatever the chunking), so it can be saved,
analysed and replayed like any other. A second Ctrl-C interrupts at once, as usual. Elsewhere
than in the main thread, or where the program has a SIGINT handler of its own, nothing changes.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

__all__ = ["Halted", "Request", "deferred"]


class Halted(Exception):
    """Raised by the exact loop where it stopped on a deferred Ctrl-C, at step ``t``, with the
    chains' ``times`` and ``done`` as they stand."""

    def __init__(self, t: int, times: np.ndarray, done: np.ndarray):
        super().__init__(f"interrupted at step {t}")
        self.t, self.times, self.done = t, times, done


class Request:
    """Whether a Ctrl-C arrived while deferred."""

    def __init__(self) -> None:
        self.made = False


@contextmanager
def deferred() -> Iterator[Request]:
    """Defer SIGINT to the returned :class:`Request` for the duration of the block."""
    request = Request()
    main = threading.current_thread() is threading.main_thread()
    if not main or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield request
        return

    def defer(signum: int, frame: Any) -> None:
        if request.made:  # a second Ctrl-C: at once
            signal.default_int_handler(signum, frame)
        request.made = True

    signal.signal(signal.SIGINT, defer)
    try:
        yield request
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
