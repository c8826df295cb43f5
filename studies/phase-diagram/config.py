"""The typed configuration of the phase-diagram study (``config.toml``; its comments say
what each key means)."""

from __future__ import annotations

from dataclasses import dataclass

from metastab.studies.study import StudyConfig, bounded


@dataclass(frozen=True)
class Circle(StudyConfig):
    """The ``[circle]`` table."""

    betas: list[float]
    published: list[int]
    times: list[float]
    deltas: list[float]


@dataclass(frozen=True)
class Reduction(StudyConfig):
    """The ``[reduction]`` table."""

    d: int
    beta: float
    realisations: int = bounded(1)


@dataclass(frozen=True)
class Checks(StudyConfig):
    """The ``[checks]`` table."""

    time_tolerance: float
    transition_z: float
    tolerances_moved: list[float]
    late: list[float]
    monotone_slack: float
    estimator_z: float
    reduction_tolerance: float


@dataclass(frozen=True)
class Power(StudyConfig):
    """The ``[power]`` table: the wrong predictions that the claims' checks must reject."""

    curve_scale: float = bounded(0.0)  # the Γ claims: the transition at this × t*(β) instead
    count_shifts: list[int]  # the circle claims: the published count + s, each s of this list


@dataclass(frozen=True)
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
