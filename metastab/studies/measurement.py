"""What the studies measure with, shared by all of them: runs and their streams, and the
statistics of their samples.

- Runs: :func:`streams` (one root of streams per β), :func:`run_point` (one first passage and
  its cost), :func:`beta_scan` (a measurement at every β of a grid), :func:`recorded` and
  :func:`quantile_band` (recorded runs and their quantiles).
- Statistics: :func:`quiet` (a fit with its diagnostics kept as notes), :func:`logrank_p` (two
  censored samples compared), :func:`poisson_limit_intervals` (exact intervals where the rate per
  step is tiny), :func:`pit` (the randomised probability integral transform of a geometric
  sample).

The censored statistics are those of :mod:`metastab.stats` (docs: statistics).
"""

from __future__ import annotations

import math
import time
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from ..engine.chains import EventSpec, Model
    from ..rng import SeedLike

__all__ = [
    "streams",
    "run_point",
    "beta_scan",
    "recorded",
    "quantile_band",
    "quiet",
    "logrank_p",
    "POISSON_LIMIT_RATE",
    "poisson_limit_intervals",
    "pit",
]

# --------------------------------------------------------------------------- runs


def streams(seed: int, beta: float) -> np.random.SeedSequence:
    """The root of the chains' streams at ``beta``: SeedSequence([seed, round(1000 β)]).

    One root per β makes the samples of different β independent, as the joint scaling fit and
    its intervals assume (with one root for all β, chain c would draw the same uniforms at every
    β, and the accelerated engine the same Exp(1) variates scaled by 1/p). Every event run at
    one β shares its root, so each chain follows one path for all of them (T_ball <= T2).
    Distinct β of a grid must differ in round(1000 β).

    >>> streams(20260101, 5.0).entropy
    [20260101, 5000]
    """
    return np.random.SeedSequence([int(seed), int(round(1000 * beta))])


def run_point(
    model: Model,
    x0: np.ndarray,
    event: EventSpec,
    *,
    chains: int,
    max_steps: int | float,
    seed: int,
    **options: Any,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """One first-passage run: the per-chain frame and its cost (wall seconds, steps simulated).

    The chains' streams come from ``streams(seed, model.beta)``. ``options`` go to
    :func:`metastab.first_passage` (``mode``, ``merge_tol``). Step counts are float64 (the
    accelerated engine's are; the direct engine's are integers below 2^53). ``jumps`` is the
    number of events the accelerated engine drew (0 for direct stepping).
    """
    from ..engine import first_passage

    tic = time.perf_counter()
    fp = first_passage(
        model,
        x0,
        event,
        max_steps=max_steps,
        chains=chains,
        rng=streams(seed, model.beta),
        **options,
    )
    wall = time.perf_counter() - tic
    frame = fp.to_frame()[["chain", "steps", "censored", "max_steps", "beta"]]
    frame = frame.astype({"steps": np.float64, "max_steps": np.float64})
    simulated = float(np.sum(fp.times, dtype=np.float64))
    return frame, {
        "wall_s": wall,
        "steps_simulated": simulated,
        "token_steps": simulated * x0.shape[0],
        "jumps": int(fp.provenance.get("jumps", 0)),
    }


def beta_scan(
    betas: Iterable[float],
    measure: Callable[[float, int], pd.DataFrame | Iterable[pd.DataFrame]],
) -> pd.DataFrame:
    """The frames of ``measure(beta, index)`` at every β of ``betas``, concatenated in order;
    ``index`` is β's place in the scan (the spawn key of its streams).

    >>> beta_scan([1, 2.5], lambda b, i: pd.DataFrame({"beta": [b], "i": [i]}))
       beta  i
    0   1.0  0
    1   2.5  1
    """
    frames: list[pd.DataFrame] = []
    for index, beta in enumerate(betas):
        got = measure(float(beta), index)
        frames.extend([got] if isinstance(got, pd.DataFrame) else got)
    return pd.concat(frames, ignore_index=True)


def recorded(
    model: Model, x0: np.ndarray, steps: int, every: int, fine: int, chains: int, rng: SeedLike
) -> tuple[np.ndarray, np.ndarray]:
    """(times, trajectories) of ``chains`` chains: every step up to ``fine``, every ``every``
    steps after, up to ``steps``. Two runs from the same seed, whose paths agree step for step
    (chain k's stream depends only on the seed and k), so the start is seen in full without
    recording the whole run."""
    from ..engine import simulate

    head = simulate(model, x0, steps=fine, chains=chains, record_every=1, rng=rng)
    tail = simulate(model, x0, steps=steps, chains=chains, record_every=every, rng=rng)
    assert head.times is not None and tail.times is not None  # recorded runs
    assert head.trajectory is not None and tail.trajectory is not None
    later = tail.times > fine
    return (
        np.concatenate([head.times, tail.times[later]]),
        np.concatenate([head.trajectory, tail.trajectory[:, later]], axis=1),
    )


def quantile_band(
    values: np.ndarray, model: str, beta: float, times: np.ndarray, chains: int
) -> pd.DataFrame:
    """The 10%, 50% and 90% quantiles over the chains (axis 0) of ``values`` at each of
    ``times``: columns model, beta, step, q10, median, q90, chains."""
    q = np.quantile(values, [0.1, 0.5, 0.9], axis=0)
    return pd.DataFrame(
        {
            "model": model,
            "beta": beta,
            "step": times,
            "q10": q[0],
            "median": q[1],
            "q90": q[2],
            "chains": chains,
        }
    )


# --------------------------------------------------------------------------- statistics


def quiet(func: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, list[str]]:
    """Call ``func``; return (result, the DiagnosticWarning messages it raised).

    Diagnostics are kept for the tables and the report; any other warning is raised again.

    >>> quiet(lambda: 1)
    (1, [])
    """
    from .. import stats

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = func(*args, **kwargs)
    notes = []
    for w in caught:
        if issubclass(w.category, stats.DiagnosticWarning):
            notes.append(str(w.message))
        else:
            warnings.warn(w.message, w.category, stacklevel=2)
    return result, notes


def logrank_p(a: pd.DataFrame, b: pd.DataFrame) -> float:
    """Two-sample log-rank p-value of two censored samples (``scipy.stats.logrank``; columns
    ``steps`` and ``censored``), 1 for two identical samples."""
    from scipy.stats import CensoredData, logrank

    def data(g: pd.DataFrame) -> CensoredData:
        steps, censored = g["steps"].to_numpy(np.float64), g["censored"].to_numpy(bool)
        return CensoredData(uncensored=steps[~censored], right=steps[censored])

    if a["steps"].equals(b["steps"]) and a["censored"].equals(b["censored"]):
        return 1.0
    return float(logrank(data(a), data(b)).pvalue)


# Below this escape rate per step the geometric law's exact (Clopper–Pearson) interval and the
# exponential law's (Garwood) interval differ by less than about this much, relatively.
POISSON_LIMIT_RATE = 1e-12


def poisson_limit_intervals(per: pd.DataFrame, limit: float = POISSON_LIMIT_RATE) -> pd.DataFrame:
    """Rate, mean and median intervals from Garwood's formula where the rate is below ``limit``
    per step (column ``interval`` says which formula each row uses).

    There the geometric law is the exponential one up to a relative 1e-12, and so are their
    exact intervals, but the Clopper–Pearson quantiles ``scipy.stats.beta.ppf(q, d, E − d + 1)``
    are wrong for E between about 3e18 and 6e18 (SciPy 1.17: near 2^62 they return 2^-56
    whatever d), where the accelerated engine's exposures fall at β ≈ 29; the chi-square
    quantiles have no such range. Medians: log 2 / rate (⌈log 2 / −log(1 − p)⌉ to 1e-12).
    """
    from .. import stats

    per = per.copy()
    per["interval"] = "clopper-pearson"
    tiny = (per["events"] > 0) & (per["rate"] < limit)
    for idx in per.index[tiny]:
        low, high = stats.garwood_interval(
            int(per.at[idx, "events"]), float(per.at[idx, "exposure"])
        )
        per.loc[
            idx,
            [
                "rate_low",
                "rate_high",
                "mean_low",
                "mean_high",
                "median_low",
                "median_high",
                "interval",
            ],
        ] = [
            low,
            high,
            1 / high,
            1 / low,
            math.log(2) / high,
            math.log(2) / low,
            f"garwood (rate < {limit:g})",
        ]
    return per


def pit(steps: Any, log_stay: float, v: Any) -> np.ndarray:
    """Randomised probability integral transform of a sample of Geometric(p), log_stay = log(1−p).

    U = F(T − 1) + V (F(T) − F(T − 1)) with V uniform on (0, 1) (``v``, one per step count) and
    F(t) = 1 − (1 − p)^t: exactly uniform when T has that law, whatever p, so a KS test of U is
    exact for the discrete law.

    >>> float(pit([1.0], math.log(0.5), [0.5])[0])        # F(0) = 0, F(1) = 1/2
    0.25
    """
    t = np.asarray(steps, dtype=np.float64)
    before = np.exp((t - 1) * log_stay)  # P[T > t − 1]
    return -np.expm1((t - 1) * log_stay) + np.asarray(v) * before * -math.expm1(log_stay)
