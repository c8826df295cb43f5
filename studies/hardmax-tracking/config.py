"""The typed configuration of the hardmax-tracking study (``config.toml``; its comments say
what each key means)."""

from __future__ import annotations

from dataclasses import dataclass

from metastab.studies.study import StudyConfig, bounded


@dataclass(frozen=True)
class OverTime(StudyConfig):
    """The ``[over_time]`` table."""

    betas: list[float]
    steps: int = bounded(1)
    fine: int = bounded(1)
    record_every: int = bounded(1)
    chains: int = bounded(1)


@dataclass(frozen=True)
class AgainstBeta(StudyConfig):
    """The ``[against_beta]`` table."""

    chain_betas: list[float]
    chains: int = bounded(1)
    chain_max_steps: int = bounded(1)
    flow_betas: list[float]
    flow_max_steps: int = bounded(1)


@dataclass(frozen=True)
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
