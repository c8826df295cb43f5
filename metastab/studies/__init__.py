"""The study framework: what runs, checks and renders the reproduction studies of the
repository's ``studies/`` folder (the studies themselves live there, not in the package).

- :mod:`.study`: a study's folder as the package ``studies.PACKAGE``
  (:func:`~.study.study_module`, :func:`~.study.package_name`), the base of the studies' typed
  configurations (:class:`~.study.StudyConfig`, :func:`~.study.config_table`) and the report
  templates (:func:`~.study.fill`).
- :mod:`.runner`: :class:`~.runner.Study` and :func:`run_study` by name (``metastab study``),
  and the provenance of the studies' tables (:func:`~.runner.study_meta`,
  :func:`~.runner.read_tables`).
- :mod:`.measurement`: what the studies measure with: streams per β, first-passage points, β
  scans, recorded runs, and the statistics of their samples (:func:`~.measurement.quiet`,
  :func:`~.measurement.logrank_p`, :func:`~.measurement.poisson_limit_intervals`,
  :func:`~.measurement.pit`).
- :mod:`.circle`: the clusters of tokens on the circle.
- :mod:`.parking`: the strong and plain Rényi centres of causal attention.
- :mod:`.verdict`: checks tables (:func:`~.verdict.check`, :func:`~.verdict.checks_frame`) and
  the one verdict rule (:func:`~.verdict.verdict`).
- :mod:`.compare`: the comparators a check is written with (its rule and its pass test from one
  object; :func:`~.compare.declare`: a claim with its power row).
- :mod:`.render`: the markdown and number formatting of the reports.
- :mod:`.figures`: the figure helpers of the studies' ``figures.py``.

Nothing of the core imports this package.
"""

from .runner import Study, list_studies, load_config, run_study, study_about, study_root
from .study import ConfigError, StudyConfig, package_name, study_module

__all__ = [
    "Study",
    "StudyConfig",
    "ConfigError",
    "study_root",
    "list_studies",
    "load_config",
    "study_about",
    "package_name",
    "study_module",
    "run_study",
]
