"""The typed configuration of the geometry study (``config.toml``; its comments say
what each key means)."""

from __future__ import annotations

from metastab.studies.study import StudyConfig, bounded, config_table


@config_table
class Cells(StudyConfig):
    """The ``[cells]`` table."""

    k: int = bounded(1)
    radial_range: list[float]
    grid: int
    stored_grid: int
    draws: int = bounded(1)


@config_table
class Dominance(StudyConfig):
    """The ``[dominance]`` table."""

    k: int = bounded(1)
    target: int
    eta: float
    erosion: float
    grid: int
    stored_grid: int


@config_table
class Quadratic(StudyConfig):
    """The ``[quadratic]`` table."""

    k: int = bounded(1)
    B: list[list[list[float]]]
    grid: int


@config_table
class Voronoi(StudyConfig):
    """The ``[voronoi]`` table."""

    ks: list[int]
    draws: int = bounded(1)
    grid: int
    B: list[list[list[float]]]


@config_table
class Power(StudyConfig):
    """The ``[power]`` table: the wrong predictions that the claims' checks must reject."""

    voronoi_vertices: str  # the Voronoi claim asserted for these polygons: its hypothesis dropped
    area_error: float = bounded(0.0)  # the cone's and the erosion's exact area this much too large


@config_table
class Config(StudyConfig):
    """The keys of ``config.toml`` (its ``[quick]`` table overrides some; ``[about]`` is not
    passed to the study)."""

    seed: int
    cells: Cells
    dominance: Dominance
    quadratic: Quadratic
    voronoi: Voronoi
    power: Power
