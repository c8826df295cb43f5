"""The typed configuration of the sphere-orthogonal study (``config.toml``; its comments say
what each key means)."""

from __future__ import annotations

from metastab.studies.study import StudyConfig, bounded, config_table


@config_table
class Orthogonal(StudyConfig):
    """The ``[orthogonal]`` table."""

    ns: list[int]
    betas: list[float]
    rk4_dts: list[float]
    post_ln_dts: list[float]
    usa_betas: list[float]
    usa_dts: list[float]
    grid: float
    usa_grid: float
    horizon: float
    window: float


@config_table
class Random(StudyConfig):
    """The ``[random]`` table."""

    n: int = bounded(1)
    ds: list[int]
    betas: list[float]
    realisations: int = bounded(1)
    dt: float
    t_max: float
    grid: float
    t_ref: float
    check_d: int
    check_realisations: int = bounded(1)


@config_table
class Checks(StudyConfig):
    """The ``[checks]`` table."""

    equal_tolerance: float
    cosine_tolerance: float
    time_tolerance: float
    rk4_order: list[float]
    post_ln_order: list[float]
    roundoff_floor: float
    reduction_tolerance: float
    rate_slack: float
    moved: list[float]


@config_table
class Power(StudyConfig):
    """The ``[power]`` table: the wrong predictions that the claims' checks must reject."""

    t_star_scale: float = bounded(0.0)  # thm68_t_star: the crossing at this × t*(β)
    d_rate_exponent: float = bounded(0.0)  # thm69_d_rate: the deviation falls like d^(−this)
    bound_c_exponent: float  # thm69_bound: c(β) = e^(this × max(1, β)) in place of e^(10 max(1, β))


@config_table
class Config(StudyConfig):
    """The keys of ``config.toml`` (its ``[quick]`` table overrides some; ``[about]`` is not
    passed to the study)."""

    seed: int
    delta: float
    orthogonal: Orthogonal
    random: Random
    checks: Checks
    power: Power
