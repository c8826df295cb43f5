"""The typed configuration of the noisy-metastability study (``config.toml``; its comments say
what each key means)."""

from __future__ import annotations

from metastab.studies.study import StudyConfig, bounded, config_table


@config_table
class Direction(StudyConfig):
    """The ``[forward]`` and ``[reverse]`` tables: one escape direction."""

    position: float = bounded(0.0, 1.0)
    ns: list[int] = bounded(2)
    chains: list[int] = bounded(2)
    levels: list[float] = bounded(0.0, 1.0)


@config_table
class Checks(StudyConfig):
    """The ``[checks]`` table."""

    confidence: float = bounded(0.0, 1.0)
    n_bootstrap: int = bounded(1)
    stats_seed: int
    min_exits: int = bounded(1)
    fit_starts: list[int] = bounded(2)


@config_table
class Power(StudyConfig):
    """The ``[power]`` table: the wrong prediction the barrier checks must reject."""

    barrier_factor: float = bounded(0.0)


@config_table
class Config(StudyConfig):
    """The keys of ``config.toml`` (its ``[quick]`` table overrides some; ``[about]`` is not
    passed to the study)."""

    seed: int
    beta: float = bounded(0.0)
    d: int = bounded(2)
    dt: float = bounded(0.0)
    max_steps: int = bounded(1)
    forward: Direction
    reverse: Direction
    checks: Checks
    power: Power
