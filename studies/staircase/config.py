"""The typed configuration of the staircase study (``config.toml``; its comments say
what each key means)."""

from __future__ import annotations

from metastab.studies.study import StudyConfig, bounded, config_table


@config_table
class Prepared(StudyConfig):
    """The ``[prepared]`` table."""

    angles: list[float]
    per_cap: int
    cap_radius: float
    exponents: list[float]
    chains: int = bounded(1)
    horizon_factor: float


@config_table
class Control(StudyConfig):
    """The ``[control]`` table."""

    dt: float
    exponents: list[float]
    chains: int = bounded(1)
    log_time_tolerance: float


@config_table
class Random(StudyConfig):
    """The ``[random]`` table."""

    n: int = bounded(1)
    betas: list[float]
    chains: int = bounded(1)
    horizon: int
    min_events: int


@config_table
class Containment(StudyConfig):
    """The ``[containment]`` table."""

    eps: float
    angle: float
    per_cap: int
    betas: list[float]
    chains: int = bounded(1)
    max_steps: int = bounded(1)


@config_table
class Energy(StudyConfig):
    """The ``[energy]`` table."""

    n: int = bounded(1)
    betas: list[float]
    steps: int = bounded(1)
    records: int


@config_table
class Checks(StudyConfig):
    """The ``[checks]`` table."""

    rate_tolerance: float
    rate_tolerances: list[float]
    wrong_rate_factor: float
    random_tolerance: float
    confidence_level: float


@config_table
class Power(StudyConfig):
    """The ``[power]`` table: the wrong predictions that the claims' checks must reject."""

    rate_factor: float = bounded(0.0)  # the rate claims: the exponent this × β(1 − cos Δθ)


@config_table
class Config(StudyConfig):
    """The keys of ``config.toml`` (its ``[quick]`` table overrides some; ``[about]`` is not
    passed to the study)."""

    seed: int
    delta: float
    dt: float
    prepared: Prepared
    control: Control
    random: Random
    containment: Containment
    energy: Energy
    checks: Checks
    power: Power
