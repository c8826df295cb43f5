"""Censored first-passage statistics: survival, escape rates, memorylessness, scaling laws.

Input is one first-passage time per chain, right-censored at the step budget, as
:class:`metastab.FirstPassage`, its :meth:`~metastab.FirstPassage.to_frame` or arrays
(:mod:`~metastab.stats.censoring`). The submodules:

- :mod:`~metastab.stats.survival_curve`: the Kaplan–Meier curve (:func:`survival`);
- :mod:`~metastab.stats.rates`: the escape rate of the geometric or exponential law
  (:func:`escape_rate`);
- :mod:`~metastab.stats.memorylessness`: the bootstrap test of that law
  (:func:`exponentiality_test`);
- :mod:`~metastab.stats.scaling`: the joint fit of log E[T] = a + b·β (:func:`fit_scaling`,
  :func:`fit_report`);
- :mod:`~metastab.stats.intervals`: :class:`ConfidenceInterval` and Garwood's interval;
- :mod:`~metastab.stats.censoring`: the samples, and :func:`absorption` (the probability that a
  chain's event went out of reach);
- :mod:`~metastab.stats.summary`: :func:`escape_summary`.

Every result (:class:`Survival`, :class:`EscapeRate`, :class:`ScalingFit`) has its point
estimates as properties (``median``, ``mean``, ``rate``, ``slope``, ...), a
``confidence_interval(confidence_level=None, *, method=...)`` returning a
:class:`ConfidenceInterval` ``(low, high)`` -- ``None`` is the level the result was made with,
0.95 by default; :class:`ScalingFit` takes the parameter's name first -- and ``to_frame()``; its
repr shows the estimates with their intervals and counts (an HTML table in a notebook:
:mod:`~metastab.stats.display`).
Diagnostics are :class:`~metastab.exceptions.DiagnosticWarning`, re-exported here.

The functions import scipy where they use it, not at the top of their modules: importing
``scipy.stats`` takes about a second, which every command that imports a result type (a
``metastab passage``, a sweep's worker) would otherwise pay.
"""

from ..exceptions import AbsorptionWarning, DiagnosticWarning
from .censoring import Absorption, absorption
from .intervals import ConfidenceInterval, garwood_interval
from .memorylessness import ExponentialityTest, exponentiality_test
from .rates import EscapeRate, escape_rate
from .scaling import ScalingFit, fit_report, fit_scaling
from .summary import escape_summary
from .survival_curve import Survival, survival

__all__ = [
    "Absorption",
    "AbsorptionWarning",
    "ConfidenceInterval",
    "DiagnosticWarning",
    "EscapeRate",
    "ExponentialityTest",
    "ScalingFit",
    "Survival",
    "absorption",
    "escape_rate",
    "escape_summary",
    "exponentiality_test",
    "fit_report",
    "fit_scaling",
    "garwood_interval",
    "survival",
]
