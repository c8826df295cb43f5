"""The results of :func:`metastab.first_passage` and :func:`metastab.simulate`: frozen objects with
bulk arrays, tidy frames, and the provenance that travels with them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .io import describe, scalar_params, seed_entropy, write_table

if TYPE_CHECKING:
    import os
    from pathlib import Path

__all__ = ["FirstPassage", "Run"]


@dataclass(frozen=True, eq=False)
class FirstPassage:
    """First-passage times of many independent chains.

    ``steps[c]`` is the first step t >= 0 at which chain c met the event, or ``max_steps`` with
    ``censored[c]`` True when it had not by then (right-censored: never an event time).
    ``final[c]`` is chain c's configuration when it stopped. Chains are numbered from
    ``first_chain``; chain k's path depends only on the seed and k. ``steps`` is int64, or
    float64 from ``first_passage(..., mode="accelerated")`` (``max_steps`` may then be a float;
    ``provenance["mode"]`` says which).
    """

    steps: np.ndarray = field(repr=False)
    censored: np.ndarray = field(repr=False)
    final: np.ndarray = field(repr=False)
    max_steps: int | float
    model: dict
    event: dict
    seed: dict
    first_chain: int = 0
    provenance: dict = field(default_factory=dict, repr=False)

    @property
    def chains(self) -> int:
        return self.steps.size

    def __repr__(self) -> str:
        return (
            f"FirstPassage(model={describe(self.model)}, event={describe(self.event)}, "
            f"chains={self.chains}, events={self.events}, "
            f"censored={self.chains - self.events}, max_steps={self.max_steps:g}, "
            f"seed={seed_entropy(self.seed)})"
        )

    @property
    def events(self) -> int:
        """Number of chains that met the event (not censored)."""
        return int((~self.censored).sum())

    def to_frame(self) -> pd.DataFrame:
        """Tidy table: one row per chain (chain, steps, censored) plus the scalar parameters."""
        frame = pd.DataFrame(
            {
                "chain": np.arange(
                    self.first_chain, self.first_chain + self.chains, dtype=np.int64
                ),
                "steps": self.steps,
                "censored": self.censored,
            }
        )
        for key, value in scalar_params(self.model, self.event).items():
            frame[key] = value
        frame["max_steps"] = self.max_steps
        return frame

    def metadata(self) -> dict:
        return {
            "kind": "first-passage",
            "model": self.model,
            "event": self.event,
            "seed": self.seed,
            "first_chain": self.first_chain,
            "max_steps": self.max_steps,
            "chains": self.chains,
            "provenance": self.provenance,
        }

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write :meth:`to_frame` to ``.csv`` or ``.parquet`` with a ``.json`` sidecar."""
        return write_table(self.to_frame(), path, self.metadata())


@dataclass(frozen=True, eq=False)
class Run:
    """States of many chains after ``steps`` steps, and, when recorded, a thinned trajectory.

    ``trajectory[c, r]`` is chain c's configuration at step ``times[r]`` (times 0, k, 2k, ... for
    ``record_every=k``, the last step always included). With ``record_neighbours=True`` (Hardmax,
    Localmax), ``neighbours[c, r, i, j]`` says whether j is in token i's neighbour set N_i (the
    leader set L_i for Hardmax) used by the step from ``times[r]``.
    """

    final: np.ndarray = field(repr=False)
    steps: int
    model: dict
    seed: dict
    trajectory: np.ndarray | None = field(default=None, repr=False)
    times: np.ndarray | None = field(default=None, repr=False)
    first_chain: int = 0
    provenance: dict = field(default_factory=dict, repr=False)
    neighbours: np.ndarray | None = field(default=None, repr=False)

    @property
    def chains(self) -> int:
        return self.final.shape[0]

    def __repr__(self) -> str:
        kept = "" if self.times is None else f", states_kept={len(self.times)}"
        return (
            f"Run(model={describe(self.model)}, chains={self.chains}, "
            f"n={self.final.shape[1]}, d={self.final.shape[2]}, steps={self.steps}{kept}, "
            f"seed={seed_entropy(self.seed)})"
        )

    @property
    def leaders(self) -> np.ndarray | None:
        """(chains, snapshots, n) bool: token i attends to itself (i in N_i) at ``times[r]``;
        None unless the neighbour sets were recorded."""
        if self.neighbours is None:
            return None
        return np.diagonal(self.neighbours, axis1=2, axis2=3)

    def to_frame(self) -> pd.DataFrame:
        """Tidy long table: chain, step, token and one column per coordinate (coord0, coord1, ...;
        not x0, the name of the initial configuration).

        Uses the trajectory when recorded, else the final states only.
        """
        if self.trajectory is None:
            states, times = self.final[:, None], np.array([self.steps])
        else:
            if self.times is None:
                raise ValueError("Run: a trajectory was recorded without its times")
            states, times = self.trajectory, self.times
        C, R, n, d = states.shape
        chain, step, token = np.meshgrid(
            np.arange(self.first_chain, self.first_chain + C), times, np.arange(n), indexing="ij"
        )
        frame = pd.DataFrame({"chain": chain.ravel(), "step": step.ravel(), "token": token.ravel()})
        for k in range(d):
            frame[f"coord{k}"] = states[..., k].ravel()
        for key, value in scalar_params(self.model, {}).items():
            frame[key] = value
        return frame

    def metadata(self) -> dict:
        return {
            "kind": "run",
            "model": self.model,
            "seed": self.seed,
            "steps": self.steps,
            "first_chain": self.first_chain,
            "chains": self.chains,
            "provenance": self.provenance,
        }

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write :meth:`to_frame` to ``.csv`` or ``.parquet`` with a ``.json`` sidecar."""
        return write_table(self.to_frame(), path, self.metadata())
