"""The typed configuration of the hardmax-tracking study (``config.toml``; its comments say
what each key means)."""

from __future__ import annotations

from dataclasses import dataclass

from metastab.studies.study import StudyConfig, bounded


@dataclass(frozen=True)
class Polytope(StudyConfig):
    """The ``[...]`` table Polytope."""

    kind: str
    k: int = bounded(1)


@dataclass(frozen=True)
class OverTime(StudyConfig):
    """The ``[...]`` table OverTime."""

    betas: list[float]
    steps: int = bounded(1)
    fine: int = bounded(1)
    record_every: int = bounded(1)
    chains: int = bounded(1)


@dataclass(frozen=True)
class AgainstBeta(StudyConfig):
    """The ``[...]`` table AgainstBeta."""

    chain_betas: list[float]
    chains: int = bounded(1)
    chain_max_steps: int = bounded(1)
    flow_betas: list[float]
    flow_max_steps: int = bounded(1)


@dataclass(frozen=True)
class Config(StudyConfig):
    seed: int
    gamma: float
    tokens: int
    cone_margin: float
    eps: float
    settle: float
    polytope: Polytope
    over_time: OverTime
    against_beta: AgainstBeta
