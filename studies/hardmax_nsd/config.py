"""The typed configuration of the hardmax-nsd study (``config.toml``; its comments say
what each key means)."""

from __future__ import annotations

from metastab.studies.study import StudyConfig, bounded, config_table


@config_table
class Counterexample(StudyConfig):
    """The ``[counterexample]`` table."""

    x0: list[float]
    steps: int = bounded(1)


@config_table
class Symmetric(StudyConfig):
    """The ``[symmetric]`` table."""

    ks: list[int]
    steps: int = bounded(1)
    schedules: list[dict]


@config_table
class Random(StudyConfig):
    """The ``[random]`` table."""

    n: int = bounded(1)
    draws: int = bounded(1)
    steps: int = bounded(1)
    times: int
    cases: list[dict]
    schedules: list[dict]
    limit_tolerance: float


@config_table
class Power(StudyConfig):
    """The ``[power]`` table: the wrong predictions that the claims' checks must reject."""

    bound_factor: float = bounded(0.0)  # the printed bound with this times the classical constant
    collapse_fraction: float = bounded(0.0)  # the final diameter predicted as this × D_0


@config_table
class Config(StudyConfig):
    """The keys of ``config.toml`` (its ``[quick]`` table overrides some; ``[about]`` is not
    passed to the study)."""

    seed: int
    symmetry_roundoff: float
    symmetry_break: float
    symmetry_floor: float
    diameter_floor: float
    counterexample: Counterexample
    symmetric: Symmetric
    random: Random
    power: Power
