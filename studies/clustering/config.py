"""The typed configuration of the clustering study (``config.toml``; its comments say
what each key means)."""

from __future__ import annotations

from dataclasses import dataclass

from metastab.studies.study import StudyConfig, bounded


@dataclass(frozen=True)
class Config(StudyConfig):
    """The keys of ``config.toml`` (its ``[quick]`` table overrides some; ``[about]`` is not
    passed to the study)."""

    seed: int
    gammas: list[float]
    tokens_per_vertex: int = bounded(1)
    betas: list[float]
    draws: int = bounded(1)
    chains: int = bounded(1)
    steps: int = bounded(1)
    C_event: float
    margin: float
    c_roundoff: float
    ratio_tol: float
    polytopes: list[dict]
