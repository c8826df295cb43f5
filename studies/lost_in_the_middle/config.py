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
class Power(StudyConfig):
    """The ``[power]`` table: the wrong predictions that the claims' checks must reject."""

    usa: bool
    limit_factor: float
    late: float


@config_table
class Config(StudyConfig):
    """The keys of ``config.toml`` (its ``[quick]`` table overrides some; ``[about]`` is not
    passed to the study)."""

    seed: int
    particles: Particles
    profile: Profile
    power: Power
