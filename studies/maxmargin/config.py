"""The typed configuration of the maxmargin study (``config.toml``; its comments say
what each key means)."""

from __future__ import annotations

from metastab.studies.study import StudyConfig, bounded, config_table


@config_table
class E1(StudyConfig):
    """The ``[e1]`` table."""

    cs: list[float]
    inits: list[float]
    steps: int = bounded(1)
    lr: float


@config_table
class E2(StudyConfig):
    """The ``[e2]`` table."""

    seed: int
    inits: list[float]
    steps: int = bounded(1)
    lr_ngd: float
    lr_gd: float


@config_table
class E3(StudyConfig):
    """The ``[e3]`` table."""

    steps: int = bounded(1)
    lr: float


@config_table
class E4(StudyConfig):
    """The ``[e4]`` table."""

    runs: int
    n: int = bounded(1)
    T: int
    d: int
    steps: int = bounded(1)
    lr: float
    reg_kq: float
    every: int = bounded(1)


@config_table
class E5(StudyConfig):
    """The ``[e5]`` table."""

    Cs: list[float]
    steps: int = bounded(1)
    lr: float


@config_table
class E6(StudyConfig):
    """The ``[e6]`` table."""

    ns: list[int]
    T: int
    ds: list[int]
    instances: int


@config_table
class Hardmax(StudyConfig):
    """The ``[hardmax]`` table."""

    scales: list[float]


@config_table
class Power(StudyConfig):
    """The ``[power]`` table: the wrong predictions that the criteria's checks must reject."""

    published_error: float = bounded(
        0.0
    )  # published values (and the bound's exponent) this far off
    direction_error_deg: float = bounded(0.0)  # correlations: a direction this many degrees off
    saturation_gap: float = bounded(1.0)  # probabilities → 1: saturating this × (1 − threshold) low
    rank_error: int = bounded(1)  # rank rules: this much below the stated rank


@config_table
class Config(StudyConfig):
    """The keys of ``config.toml`` (its ``[quick]`` table overrides some; ``[about]`` is not
    passed to the study)."""

    aligned_corr: float
    hardmax_roundoff: float
    e1: E1
    e2: E2
    e3: E3
    e4: E4
    e5: E5
    e6: E6
    hardmax: Hardmax
    published: list[dict]
    power: Power
