"""The typed configuration of the causal-parking study (``config.toml``; its comments say what
each key means)."""

from __future__ import annotations

from metastab.studies.study import StudyConfig, bounded, config_table


@config_table
class Power(StudyConfig):
    """The ``[power]`` table: the wrong predictions that the claims' checks must reject."""

    count_shifts: list[int]  # count: the strong-centre count + s, s of this list
    bracket_shifts: list[int]  # count/bracketed: the bracket moved by s clusters
    capture_shift: float  # location: the predicted centres moved by this × δ
    lifetime_exponents: list[float]  # lifetime: these exponents of β instead of the predicted one


@config_table
class Config(StudyConfig):
    """The keys of ``config.toml`` (its ``[quick]`` table overrides some; ``[about]`` is not
    passed to the study)."""

    seed: int
    n: int = bounded(2)
    betas: list[float]
    delta_factor: float
    chains: int = bounded(2)
    dt: float
    horizon: float
    horizons: list[float]
    frame_every: float
    cluster_delta: float
    reading_time: float
    reading_times: list[float]
    min_fraction: float
    min_fractions: list[float]
    confidence_level: float
    resolution: float
    bracket_required: float
    capture_factor: float
    capture_factors: list[float]
    capture_required: float
    lifetime_exponent: float
    exponent_tolerance: float
    control_level: float
    power: Power
