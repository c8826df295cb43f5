"""The typed configuration of the noisy-linear study (``config.toml``; its comments say what each
key means)."""

from __future__ import annotations

from metastab.studies.study import StudyConfig, bounded, config_table


@config_table
class Grid(StudyConfig):
    """The ``[grid]`` table."""

    factors: list[float] = bounded(0.0)
    n: int = bounded(2)
    dt: float = bounded(0.0)
    t_max: float = bounded(0.0)
    spacing: float = bounded(0.0)
    chains: int = bounded(2)
    batch: int = bounded(1)


@config_table
class DtScan(StudyConfig):
    """The ``[dt_scan]`` table."""

    d: int = bounded(2)
    factor: float = bounded(0.0)
    dts: list[float] = bounded(0.0)
    n: int = bounded(2)
    chains: int = bounded(2)


@config_table
class NScan(StudyConfig):
    """The ``[n_scan]`` table."""

    d: int = bounded(2)
    factor: float = bounded(0.0)
    ns: list[int] = bounded(2)
    dt: float = bounded(0.0)
    chains: int = bounded(2)


@config_table
class Checks(StudyConfig):
    """The ``[checks]`` table."""

    amplitude: float = bounded(1.0)
    z: float = bounded(0.0)
    rate_bias: float = bounded(0.0)
    rate_relative: float = bounded(0.0)
    kstar_tolerance: float = bounded(0.0)
    moment_tolerance: float = bounded(0.0)


@config_table
class Power(StudyConfig):
    """The ``[power]`` table (the other wrong predictions are fixed in checks.py)."""

    kstar_shift: float = bounded(0.0)


@config_table
class Config(StudyConfig):
    """The keys of ``config.toml`` (its ``[quick]`` table overrides some; ``[about]`` is not
    passed to the study)."""

    seed: int
    beta: float = bounded(0.0)
    ds: list[int] = bounded(2)
    degrees: list[int] = bounded(1, 2)
    grid: Grid
    dt_scan: DtScan
    n_scan: NScan
    checks: Checks
    power: Power
