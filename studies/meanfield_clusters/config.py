"""The typed configuration of the meanfield-clusters study (``config.toml``; its comments say
what each key means)."""

from __future__ import annotations

from metastab.studies.study import StudyConfig, bounded, config_table


@config_table
class Power(StudyConfig):
    """The ``[power]`` table: the wrong predictions that the claims' checks must reject."""

    k_shifts: list[int]  # k_star: the counts k* + s, s of this list; each must be rejected
    within_one_shifts: list[int]  # k_star/within_one: k* + s within ±1, each must be rejected


@config_table
class Config(StudyConfig):
    """The keys of ``config.toml`` (its ``[quick]`` table overrides some; ``[about]`` is not
    passed to the study)."""

    seed: int
    delta: float
    betas: list[float]
    tokens: list[int]
    chains: int = bounded(1)
    dt_growth: float
    multiples: list[float]
    claim_multiple: float
    min_fraction: float
    min_fractions: list[float]
    confidence_level: float
    resolution: float
    within_one: float
    tolerances: list[float]
    power: Power
