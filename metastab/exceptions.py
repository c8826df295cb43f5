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
    to get it back (restore it, or compute it again).

    Examples
    --------
    >>> import metastab as ms
    >>> try:
    ...     raise ms.DamagedFileError("run.npz: its SHA-256 differs from run.json's")
    ... except ValueError as err:   # a ValueError, so existing handlers catch it
    ...     print(type(err).__name__, err)
    DamagedFileError run.npz: its SHA-256 differs from run.json's
    """


class DiagnosticWarning(RuntimeWarning):
    """A statistic is reported but says less than it seems: no events, most chains censored,
    chains excluded, a model that does not fit; or a replay runs under other versions than the
    result it repeats (``result.replay()``). The message carries the numbers.

    Examples
    --------
    Make every diagnostic an error, as the test suite does:

    >>> import warnings
    >>> import metastab as ms
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error", ms.DiagnosticWarning)
    ...     try:
    ...         warnings.warn("3 of 4 chains censored", ms.DiagnosticWarning)
    ...     except ms.DiagnosticWarning as w:
    ...         print(w)
    3 of 4 chains censored
    """


class AbsorptionWarning(DiagnosticWarning):
    """A statistic of escape times was given absorbed chains (their event out of reach,
    :mod:`metastab.engine.absorption`): they are left out, so it describes the escape law
    conditional on not being absorbed; :func:`metastab.stats.absorption` gives how likely
    absorption is. The message gives the numbers.

    Examples
    --------
    >>> import warnings
    >>> import metastab as ms
    >>> issubclass(ms.AbsorptionWarning, ms.DiagnosticWarning)   # filtered with the diagnostics
    True
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", ms.AbsorptionWarning)
    ...     warnings.warn("2 absorbed chains left out", ms.AbsorptionWarning)   # silenced
    """


class ResolutionWarning(RuntimeWarning):
    """Direct stepping cannot draw the moves a run needs: their weights e^{β(s_ij − max_k s_ik)}
    underflow to 0 in the kernels' exp (exponent below
    :func:`metastab.engine.underflow_exponent`), so chains stay where they are and are
    censored, and a fitted rate or exponent is wrong. The message gives the numbers and ends
    with :attr:`REMEDY` (which the command line says in its own terms).

    Examples
    --------
    >>> import metastab as ms
    >>> ms.ResolutionWarning.REMEDY
    "first_passage(..., mode='accelerated')"
    >>> issubclass(ms.ResolutionWarning, RuntimeWarning)
    True
    """

    REMEDY = "first_passage(..., mode='accelerated')"


class StepSizeWarning(RuntimeWarning):
    """A step size beyond the stable range of its scheme (:meth:`metastab.SphereFlow.stable_dt`):
    the run may diverge, or follow something else than the flow it discretises. The message names
    the step, the range and why.

    Examples
    --------
    >>> import warnings
    >>> import metastab as ms
    >>> from metastab.models import check_step
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     check_step(ms.SphereFlow(beta=1.0, dt=10.0), d=2)   # stable for dt <= 1 here
    >>> caught[0].category is ms.StepSizeWarning
    True
    """


class Interrupted(KeyboardInterrupt):
    """A Ctrl-C during :func:`metastab.first_passage` (exact mode); ``result`` is the run up to
    the step it reached, a :class:`~metastab.FirstPassage` whose ``max_steps`` is that step: the
    same chains as the run with that budget (:mod:`metastab.engine.interrupt`).

    A :class:`KeyboardInterrupt`, so that code that does not expect it still stops.

    Parameters
    ----------
    message : str
        What was interrupted, and at which step.
    result : FirstPassage
        The run up to that step (kept as the attribute ``result``).

    Examples
    --------
    >>> import metastab as ms
    >>> try:
    ...     raise ms.Interrupted("interrupted at step 7 of 100", {"max_steps": 7})
    ... except KeyboardInterrupt as err:
    ...     print(err, err.result)
    interrupted at step 7 of 100 {'max_steps': 7}
    """

    def __init__(self, message: str, result: object):
        super().__init__(message)
        self.result = result
