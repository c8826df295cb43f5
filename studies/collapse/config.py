"""The typed configuration of the collapse study (``config.toml``; its comments say
what each key means)."""

from __future__ import annotations

from metastab.studies.study import StudyConfig, bounded, config_table


@config_table
class Flow(StudyConfig):
    """The ``[flow]`` table."""

    betas: list[float]
    max_steps: int = bounded(1)
    record_cap: int


@config_table
class Chain(StudyConfig):
    """The ``[chain]`` table."""

    betas: list[float]
    chains: int = bounded(1)
    max_steps: int = bounded(1)


@config_table
class Curves(StudyConfig):
    """The ``[curves]`` table."""

    betas: list[float]
    steps: int = bounded(1)
    fine: int = bounded(1)
    record_every: int = bounded(1)
    chains: int = bounded(1)


@config_table
class Power(StudyConfig):
    """The ``[power]`` table: the wrong predictions that the claims' checks must reject."""

    contraction_speed: float = bounded(
        0.0
    )  # the guaranteed rate c predicted this many times larger


@config_table
class Config(StudyConfig):
    """The keys of ``config.toml`` (its ``[quick]`` table overrides some; ``[about]`` is not
    passed to the study)."""

    seed: int
    gamma: float
    tokens: int
    ratio: float
    contraction_roundoff: float
    informative_margin: float
    polytope: dict  # a spec of metastab.registry.POLYTOPES, checked when built
    flow: Flow
    chain: Chain
    curves: Curves
    power: Power
