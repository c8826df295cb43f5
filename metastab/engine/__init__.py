"""The engine: runs the chains of a model on a backend and wraps the results.

- :mod:`~metastab.engine.api`: :func:`simulate` and :func:`first_passage` (mode dispatch, the
  recording and the exact loop's result);
- :mod:`~metastab.engine.exact`: the exact loop (every step, chunked kernel calls);
- :mod:`~metastab.engine.tracking`: :func:`track`, cluster counts and observables on-line;
- :mod:`~metastab.engine.accelerated`: ``mode="accelerated"``, the event-driven SA_P chain;
- :mod:`~metastab.engine.ams`: generalised adaptive multilevel splitting over a replica
  stepper (pure Python), and :mod:`~metastab.engine.ams_chains`: :func:`ams_probability`, its
  front end for SA_P and the noisy sphere (P[T <= t], P[the event before the reference set];
  the noisy sphere's checks in :mod:`~metastab.engine.ams_noisy`);
- :mod:`~metastab.engine.ams_hill`: :func:`ams_mean_escape_time`, the mean escape time by the
  Hill relation (direct cycles and AMS from their entrance law);
- :mod:`~metastab.engine.resolution`: what direct stepping resolves (underflow of pick weights,
  cross-group probabilities);
- :mod:`~metastab.engine.run_setup`: :func:`~metastab.engine.run_setup.prepare_run`, the one
  prepared run of the above (validation, memory, state, streams) and the results it builds;
- :mod:`~metastab.engine.chains`, :mod:`~metastab.engine.progress`: inputs, state and progress
  shared by the above (and :func:`announce_compile_for`, the compile announcement of the runs
  that the demo and the benchmarks warm up);
- :mod:`~metastab.engine.backends`: where the chains run, chosen by the ``device`` argument (the
  only importer of the kernels' targets in the engine).
"""

from .accelerated import budget, first_passage_accelerated
from .ams_chains import ams_probability, reaction_coordinate
from .ams_hill import ams_mean_escape_time
from .api import first_passage, simulate
from .backends import BACKENDS, resolve
from .progress import announce_compile_for
from .resolution import (
    MERGE_TOL,
    MODES,
    check_resolution,
    cross_probabilities,
    merge_tolerance,
    underflow_exponent,
)
from .tracking import track

__all__ = [
    "BACKENDS",
    "MERGE_TOL",
    "MODES",
    "ams_mean_escape_time",
    "ams_probability",
    "announce_compile_for",
    "budget",
    "check_resolution",
    "cross_probabilities",
    "first_passage",
    "first_passage_accelerated",
    "merge_tolerance",
    "reaction_coordinate",
    "resolve",
    "simulate",
    "track",
    "underflow_exponent",
]
