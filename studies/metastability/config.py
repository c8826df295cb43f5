"""The typed configuration of the metastability study (``config.toml``; its comments say
what each key means)."""

from __future__ import annotations

from metastab.studies.study import ConfigError, StudyConfig, bounded, config_table


@config_table
class Power(StudyConfig):
    """The ``[power]`` table: the wrong predictions that the claims' checks must reject."""

    exponent_over_c0: float = bounded(0.0)  # bound, exponent: the rate this × c0 in place of b_thm


@config_table
class Config(StudyConfig):
    """The keys of ``config.toml`` (its ``[quick]`` table overrides some; ``[about]`` is not
    passed to the study)."""

    polygon_vertices: int
    gamma: float = bounded(0.0, 1.0)
    eps_over_gamma_diameter: float
    per_vertex: int = bounded(1)
    offset: float
    config_seed: int
    beta_start: float
    beta_step: float = bounded(1e-9)
    beta_stop: float
    first_max_steps: int = bounded(1)
    budget_factor: float
    max_chain_steps: float
    min_chains: int = bounded(1)
    max_chains: int = bounded(1)
    min_escapes: int = bounded(1)
    seed: int
    accelerated_beta_start: float
    accelerated_beta_stop: float
    accelerated_beta_step: float = bounded(1e-9)
    accelerated_chains: int = bounded(1)
    accelerated_max_steps: float
    accelerated_seed: int
    merge_tol: float = bounded(0.0)
    merge_tol_beta: float
    merge_tols: list[float] = bounded(0.0)
    merge_tol_chains: int = bounded(1)
    fit_from_beta: float
    tail_from_beta: float
    fit_starts: list[float]
    n_resamples: int = bounded(1)
    n_bootstrap: int = bounded(1)
    stats_seed: int
    agreement_p: float = bounded(0.0, 1.0)
    memoryless_level: float = bounded(0.0, 1.0)
    fit_level: float = bounded(0.0, 1.0)
    merge_steps: int = bounded(1)
    merge_chains: int = bounded(1)

    def check(self) -> None:
        if self.min_chains > self.max_chains:
            raise ConfigError(
                f"key 'min_chains' ({self.min_chains}) must not exceed 'max_chains' "
                f"({self.max_chains})"
            )

    power: Power
