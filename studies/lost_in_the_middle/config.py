"""The typed configuration of the lost-in-the-middle study (``config.toml``; its comments say
what each key means)."""

from __future__ import annotations

from metastab.studies.study import StudyConfig, bounded, config_table


@config_table
class Particles(StudyConfig):
    """The ``[particles]`` table: the authors' particle run."""

    tokens: int = bounded(2)
    beta: float = bounded(0.0)
    alibi: float = bounded(0.0)
    dt: float
    horizon: float
    every: float
    tolerance: float


@config_table
class Profile(StudyConfig):
    """The ``[profile]`` table: the closed-form retrieval profile and its threshold."""

    alibi: float
    width: float
    modes: int = bounded(1)
    betas: list[float]
    slope_step: float
    root_tolerance: float
    beta_profile: float
    times: list[float]
    margins: list[float]
    grid: int = bounded(3)


@config_table
class Simulation(StudyConfig):
    """The ``[simulation]`` table: S_t(s) estimated from the particle system."""

    seed: int
    tokens: list[int] = bounded(2)
    bases: list[int] = bounded(2)
    grid: int = bounded(2)
    sources: list[int] = bounded(1)
    points: int = bounded(2)
    dt: float = bounded(0.0)
    times: list[float] = bounded(0.0)
    batch: int = bounded(1)
    half_bases: int = bounded(1)
    step_tolerance: float = bounded(0.0)
    extrapolate: list[int] = bounded(2)
    below: list[float] = bounded(0.0)
    above: list[float] = bounded(0.0)
    z: float = bounded(0.0)
    shape_times: list[float] = bounded(0.0)
    shape_z: float = bounded(0.0)
    bootstrap: int = bounded(10)
    bootstrap_seed: int


@config_table
class Power(StudyConfig):
    """The ``[power]`` table: the wrong predictions that the claims' checks must reject."""

    usa: bool
    limit_factor: float
    late: float
    profile_alibi: float = bounded(0.0)


@config_table
class Config(StudyConfig):
    """The keys of ``config.toml`` (its ``[quick]`` table overrides some; ``[about]`` is not
    passed to the study)."""

    seed: int
    particles: Particles
    profile: Profile
    simulation: Simulation
    power: Power
