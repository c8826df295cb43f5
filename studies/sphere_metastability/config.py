"""The typed configuration of the sphere-metastability study (``config.toml``; its comments say
what each key means)."""

from __future__ import annotations

from metastab.studies.study import StudyConfig, bounded, config_table


@config_table
class Power(StudyConfig):
    """The ``[power]`` table: the wrong predictions that the claims' checks must reject."""

    exponent_error: float = bounded(0.0)  # exponent: the slope (1 + this) Δ
    prefactor_factor: float = bounded(0.0)  # prefactor: N this many times larger


@config_table
class Config(StudyConfig):
    """The keys of ``config.toml`` (its ``[quick]`` table overrides some; ``[about]`` is not
    passed to the study)."""

    simplex_dim: int
    per_point: int
    gamma: float
    jump_fraction: float
    cap_over_gamma_diameter: float
    direct_jump_betas: list[float]
    direct_cap_betas: list[float]
    direct_jump_chains: int = bounded(1)
    direct_cap_chains: int = bounded(1)
    direct_max_steps: int = bounded(1)
    seed: int
    accelerated_beta_start: float
    accelerated_beta_stop: float
    accelerated_beta_step: float
    accelerated_jump_chains: int = bounded(1)
    accelerated_cap_chains: int = bounded(1)
    accelerated_max_steps: float
    accelerated_seed: int
    merge_tol: float
    merge_tol_beta: float
    merge_tols: list[float]
    target_mean: float
    ks_level: float
    control_level: float
    fit_from_beta: float
    fit_starts: list[float]
    n_bootstrap: int = bounded(1)
    garwood_below_rate: float
    min_escapes: int
    agreement_p: float
    memoryless_level: float
    n_resamples: int = bounded(1)
    stats_seed: int
    rd_study: str
    power: Power
