"""The typed configuration of the phase-diagram study (``config.toml``; its comments say
what each key means)."""

from __future__ import annotations

from metastab.studies.study import StudyConfig, bounded, config_table


@config_table
class Circle(StudyConfig):
    """The ``[circle]`` table."""

    betas: list[float]
    published: list[int]
    times: list[float]
    deltas: list[float]


@config_table
class Reduction(StudyConfig):
    """The ``[reduction]`` table."""

    d: int
    beta: float
    realisations: int = bounded(1)


@config_table
class Checks(StudyConfig):
    """The ``[checks]`` table."""

    time_tolerance: float
    transition_z: float
    tolerances_moved: list[float]
    late: list[float]
    monotone_slack: float
    estimator_z: float
    reduction_tolerance: float


@config_table
class Power(StudyConfig):
    """The ``[power]`` table: the wrong predictions that the claims' checks must reject."""

    curve_scale: float = bounded(0.0)  # the Γ claims: the transition at this × t*(β) instead
    count_shifts: list[int]  # the circle claims: the published count + s, each s of this list


@config_table
class Config(StudyConfig):
    """The keys of ``config.toml`` (its ``[quick]`` table overrides some; ``[about]`` is not
    passed to the study)."""

    seed: int
    n: int = bounded(1)
    delta: float
    dt: float
    t_max: float
    realisations: int = bounded(1)
    ds: list[int]
    betas: list[float]
    record_every: int = bounded(1)
    level: float
    levels_moved: list[float]
    circle: Circle
    reduction: Reduction
    checks: Checks
    power: Power
