"""The typed configuration of the normalisation study (``config.toml``; its comments say what each
key means)."""

from __future__ import annotations

from metastab.studies.study import StudyConfig, bounded, config_table


@config_table
class Initial(StudyConfig):
    """The ``[initial]`` table."""

    ns: list[int]
    betas: list[float]
    dt: float = bounded(0.0)


@config_table
class Collapse(StudyConfig):
    """The ``[collapse]`` table."""

    n: int = bounded(2)
    d: int = bounded(2)
    beta: float = bounded(0.0)
    spread: float = bounded(0.0)
    dt: float = bounded(0.0)
    t_max: float = bounded(0.0)
    grid: float = bounded(0.0)
    t_min: float = bounded(0.0)
    var_floor: float = bounded(0.0)


@config_table
class Plateaus(StudyConfig):
    """The ``[plateaus]`` table."""

    beta: float = bounded(0.0)
    dt: float = bounded(0.0)
    delta: float = bounded(0.0, 2.0)
    per_cap: int = bounded(1)
    cap_radius: float = bounded(0.0)
    gap_first: list[float] = bounded(0.0, 3.2)
    gap_second: list[float] = bounded(0.0, 3.2)
    starts: int = bounded(1)
    sigma_max: float = bounded(0.0)
    grid: float = bounded(0.0)


@config_table
class Checks(StudyConfig):
    """The ``[checks]`` table."""

    slope_tolerance: float = bounded(0.0)
    spread_limit: float = bounded(1.0)
    sigma_tolerance: float = bounded(0.0)
    layer_tolerance: float = bounded(0.0)
    confidence_level: float = bounded(0.0, 1.0)


@config_table
class Power(StudyConfig):
    """The ``[power]`` table: the wrong predictions that the claims' checks must reject (the
    per-scheme ones are fixed in checks.py, as config.toml's comments say)."""

    peri_ratio: float  # peri_faster: peri-LN's initial speed over post-LN's


@config_table
class Config(StudyConfig):
    """The keys of ``config.toml`` (its ``[quick]`` table overrides some; ``[about]`` is not
    passed to the study)."""

    seed: int
    schemes: list[str]
    alpha: float = bounded(0.0)
    tau: float = bounded(0.0)
    initial: Initial
    collapse: Collapse
    plateaus: Plateaus
    checks: Checks
    power: Power
