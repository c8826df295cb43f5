"""The results of :func:`metastab.first_passage` and :func:`metastab.simulate`: frozen objects with
bulk arrays, tidy frames, and the provenance that travels with them."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .io import describe, scalar_params, seed_entropy
from .protocol import Result

__all__ = ["FirstPassage", "Run"]


@dataclass(frozen=True, eq=False)
class FirstPassage(Result):
    """First-passage times of many independent chains.

    ``times[c]`` is the first step t >= 0 at which chain c met the event, or ``max_steps`` with
    ``censored[c]`` True when it had not by then (right-censored: never an event time), or, with
    ``absorbed[c]`` True, the first step at which the event was out of reach (a configuration
    from which it can never hold, :mod:`metastab.engine.absorption`: an outcome of its own, a
    competing risk, neither an event nor censored).
    ``final[c]`` is chain c's configuration when it stopped. Chains are numbered from
    ``first_chain``; chain k's path depends only on the seed and k. ``times`` is int64, or
    float64 from ``first_passage(..., mode="accelerated")`` (``max_steps`` may then be a float;
    ``provenance["mode"]`` says which). Like ``Run.times`` and ``Track.times``, ``times`` counts
    steps; for a flow with a time step dt the time is ``times * dt``. ``x0`` and ``arguments``
    (the other keyword arguments of :func:`metastab.first_passage`) are what :meth:`replay`
    reruns it from. ``steps``, the former name of ``times``, is a deprecated alias.

    Attributes
    ----------
    times : ndarray, shape (chains,)
        Each chain's first-passage time in steps (int64; float64 in the accelerated mode), or
        ``max_steps`` where censored, or the step of absorption where absorbed.
    censored : ndarray of bool, shape (chains,)
        True where the chain had not met the event within ``max_steps``.
    final : ndarray, shape (chains, n, d)
        Each chain's configuration when it stopped.
    max_steps : int or float
        The step budget of every chain.
    model, event : dict
        The model's and the event's ``to_dict``.
    seed : dict
        The root seed's ``to_dict`` (:class:`~metastab.Seed`).
    first_chain : int
        The index of the first chain (default 0): chain k is the same in every run of the seed.
    provenance : dict
        Versions, thread count, backend and mode (:func:`metastab.results.provenance`).
    x0 : ndarray or None
        The initial configuration, (n, d) or (chains, n, d); None when not recorded.
    arguments : dict
        The other keyword arguments of the call, for :meth:`replay`.
    absorbed : ndarray of bool, shape (chains,)
        True where the event became out of reach (all False when the model cannot absorb).

    See Also
    --------
    metastab.first_passage : the function that returns it.
    metastab.stats.escape_rate : the escape rate of its times.

    Examples
    --------
    >>> import metastab as ms
    >>> x0 = ms.regular_polygon(5).vertices
    >>> fp = ms.first_passage(ms.SoftmaxChain(beta=2.0, gamma=0.5), x0, ms.LeaveBall(0.1),
    ...                       chains=4, max_steps=50, rng=1)
    >>> fp  # doctest: +NORMALIZE_WHITESPACE
    FirstPassage(model=softmax-chain(beta=2, gamma=0.5), event=leave-ball(radius=0.1), chains=4,
                 events=4, absorbed=0, censored=0, max_steps=50, seed=1)
    >>> fp.times.tolist(), fp.censored.tolist()
    ([1, 1, 1, 2], [False, False, False, False])
    >>> fp.to_frame()[["chain", "steps", "censored", "absorbed"]]
       chain  steps  censored  absorbed
    0      0      1     False     False
    1      1      1     False     False
    2      2      1     False     False
    3      3      2     False     False
    """

    KIND = "first-passage"
    REPLAY = "metastab.engine:first_passage"

    times: np.ndarray = field(repr=False)
    censored: np.ndarray = field(repr=False)
    final: np.ndarray = field(repr=False)
    max_steps: int | float
    model: dict
    event: dict
    seed: dict
    first_chain: int = 0
    provenance: dict = field(default_factory=dict, repr=False)
    x0: np.ndarray | None = field(default=None, repr=False)
    arguments: dict = field(default_factory=dict, repr=False)
    # empty by default: no chain absorbed (so load the results saved before it was recorded)
    absorbed: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool), repr=False)

    def __post_init__(self) -> None:
        flags = np.asarray(self.absorbed, dtype=bool)
        if flags.size == 0:
            flags = np.zeros(self.times.shape, dtype=bool)
        object.__setattr__(self, "absorbed", flags)

    @property
    def steps(self) -> np.ndarray:
        """Deprecated alias of :attr:`times` (kept for one release); warns."""
        warnings.warn(
            "FirstPassage.steps is deprecated: use FirstPassage.times",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.times

    @property
    def chains(self) -> int:
        return self.times.size

    def __repr__(self) -> str:
        return (
            f"FirstPassage(model={describe(self.model)}, event={describe(self.event)}, "
            f"chains={self.chains}, events={self.events}, absorbed={self.absorptions}, "
            f"censored={int(self.censored.sum())}, max_steps={self.max_steps:g}, "
            f"seed={seed_entropy(self.seed)})"
        )

    @property
    def events(self) -> int:
        """Number of chains that met the event (neither censored nor absorbed)."""
        return int((~self.censored & ~self.absorbed).sum())

    @property
    def absorptions(self) -> int:
        """Number of absorbed chains (their event out of reach)."""
        return int(self.absorbed.sum())

    def to_frame(self) -> pd.DataFrame:
        """Tidy table: one row per chain (chain, steps, censored, absorbed) plus the scalar
        parameters."""
        frame = pd.DataFrame(
            {
                "chain": np.arange(
                    self.first_chain, self.first_chain + self.chains, dtype=np.int64
                ),
                "steps": self.times,
                "censored": self.censored,
                "absorbed": self.absorbed,
            }
        )
        for key, value in scalar_params(self.model, self.event).items():
            frame[key] = value
        frame["max_steps"] = self.max_steps
        return frame

    def _extras(self) -> dict:
        return {
            "chains": self.chains,
            "events": self.events,
            "absorbed": self.absorptions,
            "censored": int(self.censored.sum()),
        }


@dataclass(frozen=True, eq=False)
class Run(Result):
    """States of many chains after ``steps`` steps, and, when recorded, a thinned trajectory.

    ``trajectory[c, r]`` is chain c's configuration at step ``times[r]`` (times 0, k, 2k, ... for
    ``record_every=k``, the last step always included). With ``record_neighbours=True`` (Hardmax,
    Localmax), ``neighbours[c, r, i, j]`` says whether j is in token i's neighbour set N_i (the
    leader set L_i for Hardmax) used by the step from ``times[r]``. ``x0`` and ``arguments``
    (the other keyword arguments of :func:`metastab.simulate`) are what :meth:`replay` reruns
    it from.

    Attributes
    ----------
    final : ndarray, shape (chains, n, d)
        Each chain's configuration after ``steps`` steps.
    steps : int
        The number of steps run.
    model : dict
        The model's ``to_dict``.
    seed : dict
        The root seed's ``to_dict`` (:class:`~metastab.Seed`).
    trajectory : ndarray, shape (chains, len(times), n, d), or None
        The configurations at ``times``; None unless recorded (``record_every``).
    times : ndarray of int, or None
        The steps of the recorded configurations; None unless recorded.
    first_chain : int
        The index of the first chain (default 0): chain k is the same in every run of the seed.
    provenance : dict
        Versions, thread count and backend (:func:`metastab.results.provenance`).
    neighbours : ndarray of bool, shape (chains, len(times), n, n), or None
        The neighbour sets used by the step from each recorded time; None unless recorded.
    x0 : ndarray or None
        The initial configuration, (n, d) or (chains, n, d); None when not recorded.
    arguments : dict
        The other keyword arguments of the call, for :meth:`replay`.

    See Also
    --------
    metastab.simulate : the function that returns it.

    Examples
    --------
    >>> import metastab as ms
    >>> x0 = ms.regular_polygon(5).vertices
    >>> run = ms.simulate(ms.SoftmaxChain(beta=5.0, gamma=0.5), x0, steps=10, chains=4,
    ...                   record_every=5, rng=1)
    >>> run  # doctest: +NORMALIZE_WHITESPACE
    Run(model=softmax-chain(beta=5, gamma=0.5), chains=4, n=5, d=2, steps=10, states_kept=3,
        seed=1)
    >>> run.times.tolist(), run.trajectory.shape
    ([0, 5, 10], (4, 3, 5, 2))
    >>> run.to_frame().iloc[:2, :5]
       chain  step  token    coord0    coord1
    0      0     0      0  1.000000  0.000000
    1      0     0      1  0.309017  0.951057
    """

    KIND = "run"
    REPLAY = "metastab.engine:simulate"

    final: np.ndarray = field(repr=False)
    steps: int
    model: dict
    seed: dict
    trajectory: np.ndarray | None = field(default=None, repr=False)
    times: np.ndarray | None = field(default=None, repr=False)
    first_chain: int = 0
    provenance: dict = field(default_factory=dict, repr=False)
    neighbours: np.ndarray | None = field(default=None, repr=False)
    x0: np.ndarray | None = field(default=None, repr=False)
    arguments: dict = field(default_factory=dict, repr=False)

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

    def _extras(self) -> dict:
        return {"chains": self.chains}
