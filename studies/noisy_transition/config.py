"""The typed configuration of the noisy-transition study (``config.toml``; its comments say what
each key means)."""

from __future__ import annotations

from metastab.studies.study import StudyConfig, bounded, config_table


@config_table
class Sweep(StudyConfig):
    """The ``[sweep]`` table."""

    n: int = bounded(2)
    dt: float = bounded(0.0)
    equilibrate: float = bounded(0.0)
    average: float = bounded(0.0)
    spacing: float = bounded(0.0)
    chains: int = bounded(2)


@config_table
class Slow(StudyConfig):
    """The ``[slow]`` table."""

    betas: list[float] = bounded(0.0)
    equilibrate: float = bounded(0.0)
    average: float = bounded(0.0)
    chains: int = bounded(2)


@config_table
class Size(StudyConfig):
    """The ``[size]`` table."""

    betas: list[float] = bounded(0.0)
    n: int = bounded(2)
    chains: int = bounded(2)


@config_table
class Checks(StudyConfig):
    """The ``[checks]`` table."""

    confidence: float = bounded(0.0, 1.0)
    width_tolerance: float = bounded(0.0)
    dt_budget: float = bounded(0.0)
    level_tolerance: float = bounded(0.0)
    level_from: float = bounded(0.0)
    beta_star_tolerance: float = bounded(0.0)
    open_barrier: float = bounded(0.0)


@config_table
class Binder(StudyConfig):
    """The ``[binder]`` table."""

    pairs: list[list[int]]  # checked in checks.binder_pairs: two N >= 2, increasing
    low: float = bounded(0.0)
    high: float = bounded(0.0)
    dt: float = bounded(0.0)
    points: int = bounded(2)
    budget: float = bounded(0.0)


@config_table
class Power(StudyConfig):
    """The ``[power]`` table (the other wrong predictions are fixed in checks.py)."""

    coupling_shift: float = bounded(0.0)


@config_table
class Config(StudyConfig):
    """The keys of ``config.toml`` (its ``[quick]`` table overrides some; ``[about]`` is not
    passed to the study)."""

    seed: int
    d: int = bounded(2)
    betas: list[float] = bounded(0.0)
    factors: list[float] = bounded(0.0)
    level: float = bounded(0.0, 1.0)
    sweep: Sweep
    slow: Slow
    size: Size
    checks: Checks
    binder: Binder
    power: Power
