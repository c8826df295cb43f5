"""The typed configuration of the collapse study (``config.toml``; its comments say
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
class Flow(StudyConfig):
    """The ``[...]`` table Flow."""

    betas: list[float]
    max_steps: int = bounded(1)
    record_cap: int


@dataclass(frozen=True)
class Chain(StudyConfig):
    """The ``[...]`` table Chain."""

    betas: list[float]
    chains: int = bounded(1)
    max_steps: int = bounded(1)


@dataclass(frozen=True)
class Curves(StudyConfig):
    """The ``[...]`` table Curves."""

    betas: list[float]
    steps: int = bounded(1)
    fine: int = bounded(1)
    record_every: int = bounded(1)
    chains: int = bounded(1)


@dataclass(frozen=True)
class Config(StudyConfig):
    seed: int
    gamma: float
    tokens: int
    ratio: float
    contraction_roundoff: float
    informative_margin: float
    polytope: Polytope
    flow: Flow
    chain: Chain
    curves: Curves
