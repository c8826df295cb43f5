"""The typed configuration of the clustering study (``config.toml``; its comments say
what each key means)."""

from __future__ import annotations

from metastab.studies.study import StudyConfig, bounded, config_table


@config_table
class Power(StudyConfig):
    """The ``[power]`` table: the wrong predictions that the claims' checks must reject."""

    C_exponent: float  # the supported C predicted to grow like β^C_exponent
    M_variant_C_factor: float = bounded(0.0)  # C = this/(1 − γ) claimed to suffice with M


@config_table
class Config(StudyConfig):
    """The keys of ``config.toml`` (its ``[quick]`` table overrides some; ``[about]`` is not
    passed to the study)."""

    seed: int
    gammas: list[float]
    tokens_per_vertex: int = bounded(1)
    betas: list[float]
    draws: int = bounded(1)
    chains: int = bounded(1)
    steps: int = bounded(1)
    C_event: float
    margin: float
    c_roundoff: float
    ratio_tol: float
    polytopes: list[dict]
    power: Power
