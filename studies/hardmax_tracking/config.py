"""The typed configuration of the hardmax-tracking study (``config.toml``; its comments say
what each key means)."""

from __future__ import annotations

from metastab.studies.study import StudyConfig, bounded, config_table


@config_table
class OverTime(StudyConfig):
    """The ``[over_time]`` table."""

    betas: list[float]
    steps: int = bounded(1)
    fine: int = bounded(1)
    record_every: int = bounded(1)
    chains: int = bounded(1)


@config_table
class AgainstBeta(StudyConfig):
    """The ``[against_beta]`` table."""

    chain_betas: list[float]
    chains: int = bounded(1)
    chain_max_steps: int = bounded(1)
    flow_betas: list[float]
    flow_max_steps: int = bounded(1)


@config_table
class Power(StudyConfig):
    """The ``[power]`` table: the wrong predictions that the claims' checks must reject."""

    rate_excess: float = bounded(0.0)  # tracking time exponential at rate ≥ (1 + this) c0
    pathwise_distance: float = bounded(0.0)  # the paths coincide up to this distance at t0
    offset_slope: float = bounded(None, 0.0)  # the offset falls at least like β^offset_slope


@config_table
class Config(StudyConfig):
    """The keys of ``config.toml`` (its ``[quick]`` table overrides some; ``[about]`` is not
    passed to the study)."""

    seed: int
    gamma: float
    tokens: int
    cone_margin: float
    eps: float
    settle: float
    polytope: dict  # a spec of metastab.registry.POLYTOPES, checked when built
    over_time: OverTime
    against_beta: AgainstBeta
    power: Power
