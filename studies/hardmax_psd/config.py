"""The typed configuration of the hardmax-psd study (``config.toml``; its comments say
what each key means)."""

from __future__ import annotations

from metastab.studies.study import StudyConfig, bounded, config_table


@config_table
class Lines(StudyConfig):
    """The ``[lines]`` table."""

    n: int = bounded(1)
    steps: int = bounded(1)
    polytopes: list[dict]
    schedules: list[dict]
    floor: float


@config_table
class Ode(StudyConfig):
    """The ``[ode]`` table."""

    k: int = bounded(1)
    n: int = bounded(1)
    horizon: float
    record_dt: float
    dts: list[float]


@config_table
class Gaussian(StudyConfig):
    """The ``[gaussian]`` table."""

    ks: list[int]
    ds: list[int]
    draws: int = bounded(1)


@config_table
class Power(StudyConfig):
    """The ``[power]`` table: the wrong predictions that the claims' checks must reject."""

    law_shift: int = bounded(1)  # the straight-line law's product this many steps late
    euler_constant_error: float = bounded(0.0)  # the Euler error constant 1/(2e) this much off
    gaussian_d: float = bounded(1.0)  # the Gaussian vertices' ownership claimed already at this d


@config_table
class Config(StudyConfig):
    """The keys of ``config.toml`` (its ``[quick]`` table overrides some; ``[about]`` is not
    passed to the study)."""

    seed: int
    roundoff: float
    gaussian_miss: float
    lines: Lines
    ode: Ode
    gaussian: Gaussian
    power: Power
