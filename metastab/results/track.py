"""The result of :func:`metastab.track`: cluster counts, merge times and plateau durations per
chain, and the cluster observables along the run (for the sphere models, on request, the order
parameters m_1, m_2 too), as tidy tables with provenance.

Plateaus are read from the *levels* that the kernel records on-line: L_c(k), the first step at
which chain c has at most k clusters (docs: models#observables: k(t) is the number of connected
components of the graph <x_i, x_j> >= 1 − δ). The running minimum of k(t) is a staircase; chain
c sits on the plateau at k from L_c(k) until L_c(k − 1), the merge that ends it, and a plateau
still open at the horizon is right-censored there. A count that drops by several clusters at once
skips the levels in between (they have no plateau). For the deterministic flows k(t) rarely goes
back up; for a chain, or a pair that drifts out of the threshold, the count may rise for a while:
the levels, like any first-passage time, ignore that, and :meth:`Track.observables_frame` shows
k(t) itself at the recording times.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..kernels.cpu.clustering import OBSERVABLES
from ..kernels.cpu.order import ORDER_PARAMETERS
from .io import describe, scalar_params, seed_entropy
from .protocol import Result

__all__ = ["Track", "plateau_durations"]


def plateau_durations(frame: pd.DataFrame, k: int) -> pd.DataFrame:
    """The plateaus at ``k`` clusters of a plateau table as a first-passage table of durations.

    The table is :meth:`Track.to_frame`'s, concatenated over runs. Each of its plateaus at ``k``
    becomes a row with steps = end − start and the censoring budget max_steps − start, the
    columns k, start and end dropped: what :func:`metastab.stats.fit_scaling` and
    ``metastab fit`` read. A table written before the plateau's end had its own name holds it in
    ``steps``: read as ``end``.

    Parameters
    ----------
    frame : pandas.DataFrame
        A plateau table: the columns k, start, end (or ``steps``), censored and max_steps, and
        any others (chain, the model's parameters), which are kept.
    k : int
        The number of clusters of the plateaus to keep.

    Returns
    -------
    durations : pandas.DataFrame
        One row per plateau at ``k``: its duration in ``steps``, ``censored`` (True where the
        plateau was still open at the horizon), the budget ``max_steps`` it was censored at, and
        the other columns of ``frame``.

    Raises
    ------
    ValueError
        When a column is missing or the table has no plateau at ``k``.

    Examples
    --------
    >>> import pandas as pd
    >>> from metastab.results.track import plateau_durations
    >>> table = pd.DataFrame({"chain": [0, 0], "k": [3, 2], "start": [0, 5], "end": [5, 9],
    ...                       "censored": [False, True], "max_steps": 9, "beta": 1.0})
    >>> plateau_durations(table, 2)
       chain  steps  censored  max_steps  beta
    0      0      4      True          4   1.0
    """
    if "end" not in frame and "steps" in frame:  # the column's former name
        frame = frame.rename(columns={"steps": "end"})
    missing = [c for c in ("k", "start", "end", "censored", "max_steps") if c not in frame]
    if missing:
        raise ValueError(f"a plateau table needs the columns {missing} (has {list(frame.columns)})")
    rows = frame[frame["k"] == k]
    if rows.empty:
        found = sorted(int(v) for v in frame["k"].unique())
        raise ValueError(f"no plateau at k={k} in the table (plateaus at k in {found})")
    out = rows.drop(columns=["k", "start"]).rename(columns={"end": "steps"}).reset_index(drop=True)
    out["steps"] = rows["end"].to_numpy() - rows["start"].to_numpy()
    out["max_steps"] = rows["max_steps"].to_numpy() - rows["start"].to_numpy()
    return out


@dataclass(frozen=True, eq=False)
class Track(Result):
    """Cluster counts of many chains over a number of steps: the result of :func:`metastab.track`.

    ``levels[c, k - 1]`` is the first step at which chain c had at most k clusters (NaN: not
    within ``steps``; None when run with ``merges=False``); ``observables[c, r]`` is the row of
    :data:`COLUMNS` of chain c at step ``times[r]``, and ``order[c, r]`` its order parameters
    (m_1, m_2) there (:data:`ORDER_COLUMNS`; :func:`metastab.order_parameters`) when run with
    ``order_parameters=True`` (None otherwise). Chains are numbered from ``first_chain``.
    ``x0`` and ``arguments`` (the other keyword arguments of :func:`metastab.track`) are what
    :meth:`replay` reruns it from.

    Attributes
    ----------
    levels : ndarray, shape (chains, n), or None
        ``levels[c, k - 1]``: the first step at which chain c had at most k clusters (NaN: not
        within ``steps``); None when run with ``merges=False``.
    times : ndarray of int64, shape (recordings,)
        The recording times, in steps.
    observables : ndarray, shape (chains, recordings, len(COLUMNS))
        The observables of :data:`COLUMNS` of each chain at each recording time.
    steps : int
        The number of steps of every chain (the horizon of the plateaus' censoring).
    delta : float
        A pair is clustered when its cosine is at least 1 − delta.
    energy_beta : float
        The β of the recorded energy E_β (NaN: none recorded).
    model : dict
        The model's ``to_dict``.
    seed : dict
        The root seed's ``to_dict`` (:class:`~metastab.Seed`).
    first_chain : int
        The index of the first chain (default 0).
    provenance : dict
        Versions, thread count and backend (:func:`metastab.results.provenance`).
    x0 : ndarray or None
        The initial configuration, (n, d) or (chains, n, d); None when not recorded.
    arguments : dict
        The other keyword arguments of the call, for :meth:`replay`.
    order : ndarray, shape (chains, recordings, 2), or None
        The order parameters (m_1, m_2) at the recording times, or None (default) when not
        recorded.

    See Also
    --------
    metastab.track : the function that returns it.
    plateau_durations : the durations of the plateaus at k clusters, for a fit.

    Examples
    --------
    >>> import numpy as np
    >>> import metastab as ms
    >>> x0 = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    >>> tr = ms.track(ms.SoftmaxFlow(beta=1.0, gamma=0.5), x0, steps=40, rng=0)
    >>> tr  # doctest: +NORMALIZE_WHITESPACE
    Track(model=softmax-flow(beta=1, gamma=0.5), delta=0.001, chains=1, steps=40, recorded=2,
          seed=0)
    >>> tr.levels.tolist()  # at most 3 clusters at step 0, 1 (and so 2) from step 8
    [[8.0, 8.0, 0.0]]
    >>> tr.observables_frame()[["chain", "step", "clusters"]]
       chain  step  clusters
    0      0     0         3
    1      0    40         1
    """

    KIND = "plateaus"
    REPLAY = "metastab.engine:track"

    levels: np.ndarray | None = field(repr=False)
    times: np.ndarray = field(repr=False)
    observables: np.ndarray = field(repr=False)
    steps: int
    delta: float
    energy_beta: float
    model: dict
    seed: dict
    first_chain: int = 0
    provenance: dict = field(default_factory=dict, repr=False)
    x0: np.ndarray | None = field(default=None, repr=False)
    arguments: dict = field(default_factory=dict, repr=False)
    order: np.ndarray | None = field(default=None, repr=False)

    COLUMNS = OBSERVABLES
    ORDER_COLUMNS = ORDER_PARAMETERS

    @property
    def chains(self) -> int:
        return self.observables.shape[0]

    def __repr__(self) -> str:
        merges = "" if self.levels is not None else ", merges=False"
        return (
            f"Track(model={describe(self.model)}, delta={self.delta:g}, chains={self.chains}, "
            f"steps={self.steps}, recorded={self.times.size}{merges}, "
            f"seed={seed_entropy(self.seed)})"
        )

    def _params(self) -> dict:
        return {**scalar_params(self.model, {}), "delta": self.delta}

    def to_frame(self) -> pd.DataFrame:
        """The plateaus, one row per chain and plateau of its staircase (see the module notes):
        chain, k (the number of clusters), start (the step at which the count first reached
        k or less), end (the merge that ended the plateau: the first step with fewer than k
        clusters; or ``max_steps``, the horizon, with censored True), censored, max_steps, delta
        and the model's scalar parameters. The duration is end − start; the plateau at k = 1 is
        censored (no merge can end it). The uncensored ``end`` are the merge times. (The column
        ``end`` was called ``steps`` before; :func:`plateau_durations` reads both.)

        ``metastab.stats.fit_scaling(plateau_durations(frame, K))`` fits the durations of the
        plateau at K clusters against β (``metastab fit TABLE --plateau K``).
        """
        if self.levels is None:
            raise ValueError("no plateaus: this run did not count clusters (merges=False)")
        C, n = self.levels.shape
        rows = []
        for k in range(n, 0, -1):
            start = self.levels[:, k - 1]
            after = self.levels[:, k - 2] if k > 1 else np.full(C, np.nan)
            ended = ~np.isnan(after)
            on = ~np.isnan(start) & (~ended | (after > start))
            chain = np.flatnonzero(on)
            rows.append(
                pd.DataFrame(
                    {
                        "chain": chain + self.first_chain,
                        "k": k,
                        "start": start[on].astype(np.int64),
                        "end": np.where(ended[on], after[on], self.steps).astype(np.int64),
                        "censored": ~ended[on],
                    }
                )
            )
        frame = pd.concat(rows, ignore_index=True).sort_values(["chain", "start"], kind="stable")
        frame = frame.reset_index(drop=True)
        frame["max_steps"] = self.steps
        for key, value in self._params().items():
            frame[key] = value
        return frame

    def observables_frame(self) -> pd.DataFrame:
        """One row per chain and recording time: chain, step (and time = step · dt for a model
        with a time step dt), clusters, pair_fraction (the
        fraction of clustered pairs), pair12 (tokens 1 and 2 clustered: GLPR Fig. 3's statistic),
        cos12, mean_cos (over pairs i < j), log_energy and energy (E_β at ``energy_beta``),
        when recorded (``order_parameters=True``) m1 and m2 (the order parameters
        m_1 = ‖(1/n) Σ_i x_i‖ and m_2 = ‖(1/n) Σ_i x_i x_iᵀ − I/d‖_F / √((d − 1)/d): 0 at the
        uniform state, 1 at one cluster; :func:`metastab.order_parameters`), delta, energy_beta
        and the model's scalar parameters."""
        C, R = self.observables.shape[:2]
        chain, step = np.meshgrid(
            np.arange(self.first_chain, self.first_chain + C), self.times, indexing="ij"
        )
        frame = pd.DataFrame({"chain": chain.ravel(), "step": step.ravel()})
        dt = self.model.get("dt")
        if isinstance(dt, float):  # a flow with a time step: the time t = step · dt too
            frame["time"] = frame["step"] * dt
        for q, name in enumerate(self.COLUMNS):
            frame[name] = self.observables[:, :, q].ravel()
        frame["clusters"] = frame["clusters"].astype(np.int64)
        frame.insert(frame.columns.get_loc("cos12"), "pair12", frame["cos12"] >= 1.0 - self.delta)
        if self.order is not None:
            for q, name in enumerate(self.ORDER_COLUMNS):
                frame[name] = self.order[:, :, q].ravel()
        for key, value in {**self._params(), "energy_beta": self.energy_beta}.items():
            frame[key] = value
        return frame

    def _extras(self) -> dict:
        return {"max_steps": self.steps, "chains": self.chains}

    def save_observables(self, path: str | Path) -> Path:
        """Write :meth:`observables_frame` to ``.csv`` or ``.parquet`` with its sidecar (kind
        ``"observables"``) and the arrays: :meth:`load` reads the Track back from either file."""
        return self._write(self.observables_frame(), path, "observables")
