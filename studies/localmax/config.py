"""The typed configuration of the localmax study (``config.toml``; its comments say
what each key means)."""

from __future__ import annotations

from metastab.studies.study import StudyConfig, bounded, config_table


@config_table
class Polygons(StudyConfig):
    """The ``[polygons]`` table."""

    vertices: list[int]
    per_size: int
    n: int = bounded(1)


@config_table
class Power(StudyConfig):
    """The ``[power]`` table: the wrong predictions that the claims' checks must reject (the
    others, fixed in ``checks.py``, swap a claim for its opposite or hardmax for uniform)."""

    quiescent_step: float = bounded(0.0)  # (d): every token quiescent from this step on


@config_table
class Config(StudyConfig):
    """The keys of ``config.toml`` (its ``[quick]`` table overrides some; ``[about]`` is not
    passed to the study)."""

    seed: int
    gamma: float
    steps: int = bounded(1)
    panel_steps: list[int]
    series: int
    horizon: int
    r_values: list[float]
    r_relative: list[float]
    r_wide: list[float]
    r_large: float
    betas: list[float]
    r0_values: list[float]
    decays: list[float]
    roundoff: float
    resolution: float
    cluster_tol: float
    figure2: dict
    polygons: Polygons
    power: Power
