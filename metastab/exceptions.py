"""The public warnings and errors of metastab, in one module (as :mod:`numpy.exceptions`).

The warnings are :class:`RuntimeWarning` subclasses; all are exported at top level
(``metastab.DiagnosticWarning``, ``metastab.AbsorptionWarning``, ``metastab.ResolutionWarning``,
``metastab.StepSizeWarning``, ``metastab.DamagedFileError``, ``metastab.Interrupted``). This module
imports nothing, so catching or filtering them loads neither numba nor scipy.
"""

__all__ = [
    "AbsorptionWarning",
    "DamagedFileError",
    "DiagnosticWarning",
    "Interrupted",
    "ResolutionWarning",
    "StepSizeWarning",
]


class DamagedFileError(ValueError):
    """A saved file that is not what was written: its bytes differ from the SHA-256 its sidecar
    records (changed or truncated), or it cannot be parsed. The message names the file and how
    to get it back (restore it, or compute it again)."""


class DiagnosticWarning(RuntimeWarning):
    """A statistic is reported but says less than it seems: no events, most chains censored,
    chains excluded, a model that does not fit; or a replay runs under other versions than the
    result it repeats (``result.replay()``). The message carries the numbers."""


class AbsorptionWarning(DiagnosticWarning):
    """A statistic of escape times was given absorbed chains (their event out of reach,
    :mod:`metastab.engine.absorption`): they are left out, so it describes the escape law
    conditional on not being absorbed; :func:`metastab.stats.absorption` gives how likely
    absorption is. The message gives the numbers."""


class ResolutionWarning(RuntimeWarning):
    """Direct stepping cannot draw the moves a run needs: their weights e^{β(s_ij − max_k s_ik)}
    underflow to 0 in the kernels' exp (exponent below
    :func:`metastab.engine.underflow_exponent`), so chains stay where they are and are
    censored, and a fitted rate or exponent is wrong. The message gives the numbers and ends
    with :attr:`REMEDY` (which the command line says in its own terms)."""

    REMEDY = "first_passage(..., mode='accelerated')"


class StepSizeWarning(RuntimeWarning):
    """A step size beyond the stable range of its scheme (:meth:`metastab.SphereFlow.stable_dt`):
    the run may diverge, or follow something else than the flow it discretises. The message names
    the step, the range and why."""


class Interrupted(KeyboardInterrupt):
    """A Ctrl-C during :func:`metastab.first_passage` (exact mode); ``result`` is the run up to
    the step it reached, a :class:`~metastab.FirstPassage` whose ``max_steps`` is that step: the
    same chains as the run with that budget (:mod:`metastab.engine.interrupt`)."""

    def __init__(self, message: str, result: object):
        super().__init__(message)
        self.result = result
