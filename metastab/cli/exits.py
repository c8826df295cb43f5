"""The exit policy of the ``metastab`` command, in one place.

A user's error (a flag, a file, a size) is one line ``metastab: error: ...`` on stderr and exit
status 2, never a traceback; warnings are one line ``metastab: warning: ...``; Ctrl-C is status
130; ``--help`` and ``--version`` exit 0. This module names the errors and the one-line form;
:func:`metastab.cli.command.main` applies them to every command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

__all__ = ["PROG", "UsageError", "USER_ERRORS", "one_line"]

PROG = "metastab"
# Errors a user can cause through flags, files or sizes: reported in one line, exit status 2.
USER_ERRORS = (ValueError, TypeError, MemoryError, OSError, ArithmeticError)


class UsageError(ValueError):
    """A flag value that the command line itself rejects."""


def one_line(exc: BaseException | Warning | str) -> str:
    """The text of an error or warning on one line (its type's name when it has no text)."""
    return " ".join(str(exc).split()) or type(exc).__name__
