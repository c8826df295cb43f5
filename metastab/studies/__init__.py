"""The study framework: what runs, checks and renders the reproduction studies of the
repository's ``studies/`` folder (the studies themselves live there, not in the package).

- :mod:`.runner`: :func:`run_study` by name (``metastab study``), its config and the helpers the
  studies' own files share (:func:`~.runner.sibling`, :func:`~.runner.study_meta`,
  :func:`~.runner.read_tables`, :func:`~.runner.recorded`, :func:`~.runner.quantile_band`).
- :mod:`.verdict`: checks tables (:func:`~.verdict.check`, :func:`~.verdict.checks_frame`) and
  the one verdict rule (:func:`~.verdict.verdict`).
- :mod:`.render`: the markdown and number formatting of the reports.
- :mod:`.figures`: the figure helpers of the studies' ``figures.py``.

Nothing of the core imports this package.
"""

from .runner import list_studies, load_config, run_study, study_about, study_root

__all__ = ["study_root", "list_studies", "load_config", "study_about", "run_study"]
