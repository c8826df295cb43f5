"""Checks of the noisy-transition study, from ``sweeps.parquet`` only.

The mean-field picture ([MR-d], [MR-2]; :mod:`metastab.theory.noisy`): for β ≤ β_* the
stationary order parameter leaves 0 continuously at K_# and a quasi-static sweep retraces itself;
for β > β_* the uniform state is a local minimiser up to K_#, the clustered state exists down to
the fold K_fold, and the free energies cross at K_c (K_fold < K_c < K_#), so the up sweep jumps
in [K_c, K_#] and the down sweep in [K_fold, K_c] (the metastable branch is left by a large
deviation, earlier the smaller N ΔF is). Each sweep's jumps are the K at which its m_1 crosses
``level`` (linear between grid K); the loop width is the up crossing minus the down one, in
units of K_#, with a Student t interval over the independent sweeps.

Claims: no loop below β_* (power: the widest loop measured above); an open loop at every β above
(power: none), with the finite-N correction that it is open where N ΔF(K_c) >= ``open_barrier``;
the jumps inside the mean-field ranges (power: both at K_#); the clustered branch's m_1 on the
mean-field branch (power: the branch at a coupling 10 % low), with the dt correction of the
scheme's noise rate; β_* bracketed by the β where the loop opens (power: β_* of d = 3), with the
finite-N correction; β_* within ±0.1 (not testable when the bracket is wider). Context: the
mean-field numbers and the measured loop per β, the sweep-rate and N effects, and the power
analysis of locating β_* by the crossing of the ratio U_N(β) at K_# (:mod:`.binder`): the
predicted crossing per pair of N and the time it needs against the budget.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from metastab.results import read_table
from metastab.studies.compare import AllOf, Bound, Within, declare
from metastab.studies.verdict import check, checks_frame
from metastab.theory.noisy import (
    critical_coupling,
    critical_coupling_linear,
    fold_coupling,
    free_energy_barrier,
    stationary_branch,
    tricritical_beta,
)

from . import binder
from .config import Config

SOURCE = "Mun, Rosenzweig (arXiv 2606.05140; d = 2: arXiv 2604.16288)"
KEYS = ["set", "beta", "n", "stage_time"]


def crossing(factors: np.ndarray, m: np.ndarray, level: float, rising: bool) -> tuple[float, bool]:
    """The first f along ``factors`` (in sweep order) where ``m`` reaches ``level`` (``rising``:
    m >= level, else m < level), linear between the two grid points around it, and whether it
    is censored: a crossing outside the grid is reported as the grid's end it lies beyond (the
    last point if ``m`` never reaches ``level``, the first if it already does there).

    >>> crossing(np.array([0.9, 1.0, 1.1]), np.array([0.1, 0.3, 0.7]), 0.5, rising=True)
    (1.05, False)
    >>> crossing(np.array([1.1, 1.0, 0.9]), np.array([0.7, 0.6, 0.2]), 0.5, rising=False)
    (0.975, False)
    >>> crossing(np.array([1.1, 1.0]), np.array([0.7, 0.6]), 0.5, rising=False)
    (1.0, True)
    """
    reached = m >= level if rising else m < level
    hits = np.flatnonzero(reached)
    if hits.size == 0:
        return float(factors[-1]), True
    k = int(hits[0])
    if k == 0:
        return float(factors[0]), True
    f0, f1, m0, m1 = factors[k - 1], factors[k], m[k - 1], m[k]
    return round(float(f0 + (level - m0) * (f1 - f0) / (m1 - m0)), 12), False


def jumps(sweeps: pd.DataFrame, level: float) -> pd.DataFrame:
    """Per sweep (set, β, N, stage time, chain): the up crossing (from the uniform side, up the
    grid), the down crossing (from the top of the grid down) and the loop width up − down, in
    K / K_#."""
    rows = []
    for key, g in sweeps.groupby([*KEYS, "chain"], sort=False):
        g = g.sort_values("stage")
        up = g[g["direction"] == "up"]
        down = pd.concat([up.iloc[-1:], g[g["direction"] == "down"]])
        k_up, c_up = crossing(up["factor"].to_numpy(), up["m1"].to_numpy(), level, rising=True)
        k_down, c_down = crossing(
            down["factor"].to_numpy(), down["m1"].to_numpy(), level, rising=False
        )
        rows.append(
            {**dict(zip([*KEYS, "chain"], key)), "up": k_up, "down": k_down,
             "censored": c_up or c_down}
        )  # fmt: skip
    out = pd.DataFrame(rows)
    return out.assign(width=out["up"] - out["down"])


def _mean(x: np.ndarray, confidence: float) -> tuple[float, float, int]:
    """(mean, half-width of the Student t interval, count) of the finite values of ``x``."""
    from scipy.stats import t

    x = x[np.isfinite(x)]
    if x.size < 2:
        return (float(x.mean()) if x.size else math.nan), math.nan, int(x.size)
    half = float(t.ppf(0.5 + confidence / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    return float(x.mean()), half, int(x.size)


@lru_cache(maxsize=64)
def theory(beta: float, d: int, n: int) -> dict:
    """The mean-field numbers at β (K / K_#): K_c, K_fold, and above β_* the barrier at the
    Maxwell point times N."""
    ks = critical_coupling_linear(beta, d)
    above = beta > tricritical_beta(d)
    kc = _critical(beta, d)
    return {
        "k_sharp": ks,
        "kc": kc / ks,
        "fold": fold_coupling(beta, d) / ks,
        "barrier_n": n * free_energy_barrier(kc, beta, d) if above else 0.0,
        "above": above,
    }


def loops(sweeps: pd.DataFrame, config: Config) -> pd.DataFrame:
    """Per (set, β, N, stage time): the mean up and down crossings and loop width with their
    interval half-widths, the number of sweeps that crossed both ways, and the theory."""
    conf = float(config.checks.confidence)
    rows = []
    for key, g in jumps(sweeps, float(config.level)).groupby(KEYS, sort=False):
        row = dict(zip(KEYS, key))
        for col in ("up", "down", "width"):
            row[col], row[f"{col}_half"], row[f"{col}_count"] = _mean(g[col].to_numpy(), conf)
        row["sweeps"] = len(g)
        row["censored"] = int(g["censored"].sum())
        rows.append(row | theory(float(row["beta"]), int(config.d), int(row["n"])))
    return pd.DataFrame(rows)


def branches(sweeps: pd.DataFrame, config: Config) -> pd.DataFrame:
    """Per (set, β, N, stage time, direction, K/K_#): m_1 averaged over the sweeps with its
    interval half-width, beside the stable mean-field branch's m_1 at K, at K / (1 − (d + 2) dt)
    (the scheme's weaker noise) and at ``coupling_shift`` K (the power row's wrong branch)."""
    conf, d = float(config.checks.confidence), int(config.d)
    shift = float(config.power.coupling_shift)
    rows = []
    for key, g in sweeps.groupby([*KEYS, "direction", "factor"], sort=False):
        row = dict(zip([*KEYS, "direction", "factor"], key))
        row["m1"], row["m1_half"], _ = _mean(g["m1"].to_numpy(), conf)
        row["clustered"] = float(g["clustered"].mean())
        beta, f, dt = float(row["beta"]), float(row["factor"]), float(g["dt"].iloc[0])
        row["mean_field"] = stable_order(beta, d, f)
        row["mean_field_dt"] = stable_order(beta, d, f / (1 - (d + 2) * dt))
        row["mean_field_shifted"] = stable_order(beta, d, shift * f)
        rows.append(row)
    return pd.DataFrame(rows)


@lru_cache(maxsize=16)
def _branch(beta: float, d: int):
    return stationary_branch(beta, d)


@lru_cache(maxsize=16)
def _critical(beta: float, d: int) -> float:
    return critical_coupling(beta, d)


def stable_order(beta: float, d: int, factor: float) -> float:
    """m_1 of the globally stable mean-field state at K = factor K_#: 0 up to K_c, then the
    clustered (index-0) part of the single-cluster branch."""
    ks = critical_coupling_linear(beta, d)
    if factor * ks <= _critical(beta, d):
        return 0.0
    br = _branch(beta, d)
    stable = br.index == 0
    return float(np.interp(factor * ks, br.coupling[stable], br.order[stable]))


def _t(config: Config) -> str:
    return f"{float(config.checks.confidence):.0%}"


def _loop_text(g: pd.DataFrame) -> str:
    return ", ".join(
        f"β = {r.beta:g}: {r.width:.4f} ± {r.width_half:.4f} (up {r.up:.4f}, down {r.down:.4f})"
        for r in g.itertuples()
    )


def _continuous(lp: pd.DataFrame, config: Config, widest: float) -> list[dict]:
    tol = float(config.checks.width_tolerance)
    below = lp[~lp["above"]]

    def compare(width: float) -> Bound:
        # the largest excess over β of abs(W − width) over its allowance: at most 0 at every β
        excess = (below["width"] - width).abs() - below["width_half"] - tol
        return Bound(
            f"at every β < β_*: abs(W − {width:.4g})",
            _largest(excess),
            "≤",
            0.0,
            than=f"the {_t(config)} interval's half-width + {tol:g}",
            tail=" (W the loop width in K / K_#); " + _loop_text(below),
            measured=float(below["width"].abs().max()) if len(below) else math.nan,
            shown_threshold=width,
            testable=not below.empty and math.isfinite(width),
        )

    return declare(
        compare,
        0.0,
        widest,
        f"a loop as wide as the widest measured above β_* (W = {widest:.4g})",
        criterion="continuous_below",
        role="claim",
        statement="for β ≤ β_* the transition is continuous (K_c = K_#): a quasi-static sweep up "
        "and down retraces itself, no hysteresis loop",
        source=f"{SOURCE}, abstract: continuous for β ≤ β_*",
    )


def _largest(excess: pd.Series) -> float:
    """The largest of ``excess`` (NaN if any is NaN or there is none), for a test 'at most 0 at
    every point'."""
    return float(np.max(excess.to_numpy())) if len(excess) else math.nan


def _open(g: pd.DataFrame, tol: float) -> np.ndarray:
    return (g["width"] - g["width_half"] > tol).to_numpy()


def _closed(g: pd.DataFrame, tol: float) -> np.ndarray:
    return (g["width"].abs() <= g["width_half"] + tol).to_numpy()


def _loop(lp: pd.DataFrame, config: Config, criterion: str, where: pd.Series, what: str):
    tol = float(config.checks.width_tolerance)
    g = lp[where]

    narrowest = float(g["width"].min()) if len(g) else math.nan
    tail, testable = "; " + _loop_text(g), not g.empty

    def compare(prediction: str) -> Bound:
        if prediction == "open":  # the interval's lower end above tol at every β
            return Bound(
                f"at every such β the {_t(config)} interval of W",
                -_largest(g["width_half"] - g["width"]),
                ">",
                tol,
                tail=tail,
                measured=narrowest,
                template="{what} lies above {than}{tail}",
                testable=testable,
            )
        return Bound(  # abs(W) within its allowance at every β
            "at every such β abs(W)",
            _largest(g["width"].abs() - g["width_half"] - tol),
            "≤",
            0.0,
            than=f"the interval's half-width + {tol:g}",
            tail=tail,
            measured=narrowest,
            shown_threshold=tol,
            testable=testable,
        )

    return declare(
        compare,
        "open",
        "closed",
        "no loop (a continuous transition)",
        criterion=criterion,
        role="claim" if "/" not in criterion else "correction",
        statement=what,
        source=f"{SOURCE}, abstract: discontinuous for β > β_*; metastab.theory.noisy",
    )


def _jumps(lp: pd.DataFrame, config: Config) -> list[dict]:
    c = config.checks
    tol, budget = float(c.width_tolerance), float(c.dt_budget)
    g = lp[lp["above"] & _open(lp, tol).astype(bool)] if len(lp) else lp

    def compare(continuous: bool) -> Bound:
        a_up = g["up_half"] + tol + budget
        a_down = g["down_half"] + tol + budget
        if continuous:
            ok_up = (g["up"] - 1).abs() <= a_up
            ok_down = (g["down"] - 1).abs() <= a_down
        else:
            ok_up = (g["up"] >= g["kc"] - a_up) & (g["up"] <= 1 + a_up)
            ok_down = (g["down"] >= g["fold"] - a_down) & (g["down"] <= g["kc"] + a_down)
        where = "both at K_#" if continuous else "up in [K_c, K_#], down in [K_fold, K_c]"
        # the β at which a jump lies outside its range: none
        return Bound(
            where,
            int((~(ok_up & ok_down)).sum()),
            "=",
            0,
            tail=f", each within its {_t(config)} half-width + {tol:g} + the dt budget "
            f"{budget:g} (K / K_#), at every β > β_* with an open loop; "
            + ", ".join(
                f"β = {r.beta:g}: up {r.up:.4f} ± {r.up_half:.4f}, down {r.down:.4f} ± "
                f"{r.down_half:.4f} (K_fold {r.fold:.4f}, K_c {r.kc:.4f}, K_# 1)"
                for r in g.itertuples()
            ),
            measured=float((g["up"] - g["down"]).max()) if len(g) else math.nan,
            shown_threshold=math.nan,
            template="{what}{tail}",
            testable=not g.empty,
        )

    return declare(
        compare,
        False,
        True,
        "a continuous transition: both jumps at K_#",
        criterion="jumps",
        role="claim",
        statement="for β > β_* the up sweep leaves the uniform state between K_c (free energy) "
        "and K_# (linear instability) and the down sweep leaves the clustered state between the "
        "fold K_fold and K_c",
        source=f"{SOURCE}, abstract; metastab.theory.noisy.critical_coupling, fold_coupling",
    )


def _levels(br: pd.DataFrame, config: Config) -> list[dict]:
    c = config.checks
    g = br[(br["set"] == "main") & (br["factor"] >= float(c.level_from) - 1e-9)]
    tol = float(c.level_tolerance)

    def rows(criterion: str, column: str, what: str) -> list[dict]:
        def compare(col: str) -> Bound:
            largest = float((g["m1"] - g[col]).abs().max())
            return Bound(
                "abs(m̄_1 − m_1^MF)",
                _largest((g["m1"] - g[col]).abs() - g["m1_half"] - tol),
                "≤",
                0.0,
                than=f"the {_t(config)} half-width + {tol:g}",
                tail=f" at every β, both directions and K ≥ {float(c.level_from):g} K_#; "
                f"largest abs(m̄_1 − m_1^MF) {largest:.4f}",
                measured=largest,
                shown_threshold=tol,
                testable=len(g) > 0,
            )

        shift = float(config.power.coupling_shift)
        return declare(
            compare,
            column,
            "mean_field_shifted",
            f"the branch at {shift:g} K",
            criterion=criterion,
            role="claim" if "/" not in criterion else "correction",
            statement=what,
            source=f"{SOURCE}; metastab.theory.noisy.stationary_branch",
        )

    return rows(
        "cluster_level",
        "mean_field",
        "above K_c the stationary m_1 is that of the clustered mean-field state "
        "(the Kirkwood–Monroe branch)",
    ) + rows(
        "cluster_level/dt",
        "mean_field_dt",
        "the same at the coupling K / (1 − (d + 2) dt) that the scheme's noise rate gives",
    )


def opening_beta(d: int, n: int, barrier: float) -> float:
    """The β > β_* at which N ΔF(K_c(β), β) = ``barrier`` (Brent's method on [β_* + 0.25, 12];
    NaN without a root there)."""
    from scipy.optimize import brentq

    def gap(beta: float) -> float:
        return n * free_energy_barrier(critical_coupling(beta, d), beta, d) - barrier

    lo, hi = tricritical_beta(d) + 0.25, 12.0
    if gap(lo) > 0 or gap(hi) < 0:
        return math.nan
    return float(brentq(gap, lo, hi, xtol=1e-4))


def bracket(lp: pd.DataFrame, tol: float) -> tuple[float, float]:
    """(β_lo, β_hi): β_hi the smallest β of the grid from which on every loop is open, β_lo the
    grid β below it (0 if none; (NaN, NaN) if no loop is open at the largest β)."""
    g = lp.sort_values("beta")
    open_ = _open(g, tol)
    if not open_.size or not open_[-1]:
        return math.nan, math.nan
    k = int(np.flatnonzero(~open_)[-1]) + 1 if (~open_).any() else 0
    betas = g["beta"].to_numpy()
    return (float(betas[k - 1]) if k else 0.0), float(betas[k])


def _beta_star(lp: pd.DataFrame, config: Config) -> list[dict]:
    c, d = config.checks, int(config.d)
    tol = float(c.width_tolerance)
    lo, hi = bracket(lp, tol)
    n = int(lp["n"].iloc[0])
    star, other = tricritical_beta(d), tricritical_beta(3 if d == 2 else 2)
    grid = sorted(lp["beta"])
    b_open = opening_beta(d, n, float(c.open_barrier))

    def bracketed(value: float) -> AllOf:
        # β_lo < value ≤ β_hi: the grid β at which the loop was last closed, and the next
        return AllOf(
            (
                Bound("β_lo", lo, "<", value, than=f"{value:.4f}", measured=value, high=hi,
                      low=lo, shown_threshold=math.nan),
                Bound("", value, "≤", hi, than="β_hi", template="{op} {than}"),
            ),
            sep=" ",
            tail=f", the loop closed at β_lo and open from β_hi on (β grid {grid}, N = {n})",
            testable=not (math.isnan(hi) or math.isnan(value)),
        )  # fmt: skip

    source = f"{SOURCE}, abstract; metastab.theory.noisy.tricritical_beta"
    out = declare(
        bracketed,
        star,
        other,
        f"β_* of d = {3 if d == 2 else 2} ({other:.4f})",
        criterion="beta_star_bracket",
        role="claim",
        statement=f"the loop opens at β_* = {star:.4f} (d = {d})",
        source=source,
    )
    out += declare(
        bracketed,
        b_open,
        star,
        f"the mean-field β_* = {star:.4f}",
        criterion="beta_star_bracket/finite_n",
        role="correction",
        statement=f"at N = {n} the loop opens where the barrier at the Maxwell point N ΔF(K_c) "
        f"reaches {float(c.open_barrier):g}: β = {b_open:.4f}",
        source=source,
    )
    half, mid = (hi - lo) / 2, (hi + lo) / 2
    target = float(c.beta_star_tolerance)

    def resolve(value: float) -> Within:
        return Within(
            "β_mid",
            mid,
            value,
            target,
            tail=f", testable when the bracket's half-width {half:.4g} ≤ {target:g} (the "
            f"resolution reached: β_* in ({lo:g}, {hi:g}])",
            low=lo,
            high=hi,
            template="abs({what} − β_*) {op} {than}{tail}",
            testable=half <= target,
        )

    return out + declare(
        resolve,
        star,
        other,
        f"β_* of d = {3 if d == 2 else 2}",
        criterion="beta_star_resolution",
        role="claim",
        statement=f"β_* = {star:.4f} located by simulation within ±{target:g}",
        source=f"{SOURCE}, abstract",
    )


def _context(lp: pd.DataFrame, config: Config) -> list[dict]:
    out = []
    for r in lp.itertuples():
        out.append(
            check(
                f"loop_{r.set}_beta{r.beta:g}",
                "context",
                f"the loop at β = {r.beta:g}, N = {r.n}, stage time {r.stage_time:g} "
                f"({'above' if r.above else 'below'} β_*)",
                measured=r.width,
                low=r.width - r.width_half,
                high=r.width + r.width_half,
                rule=f"W (K / K_#) over {r.sweeps} sweeps ({r.censored} with a crossing beyond "
                f"the grid, counted at its end); up {r.up:.4f} ± "
                f"{r.up_half:.4f}, down {r.down:.4f} ± {r.down_half:.4f}; mean field: K_fold "
                f"{r.fold:.4f}, K_c {r.kc:.4f}, K_# 1, bistable width {1 - r.fold:.4f}, "
                f"N ΔF(K_c) = {r.barrier_n:.3g}",
                source="this study; metastab.theory.noisy",
            )
        )
    main = lp[lp["set"] == "main"].set_index("beta")
    for name, what in (("slow", "the sweep twice as slow"), ("size", "fewer tokens")):
        for r in lp[lp["set"] == name].itertuples():
            if r.beta not in main.index:
                continue
            m = main.loc[r.beta]
            diff = r.width - m["width"]
            half = math.hypot(r.width_half, m["width_half"])
            out.append(
                check(
                    f"{name}_effect_beta{r.beta:g}",
                    "context",
                    f"{what} at β = {r.beta:g}: N = {r.n}, stage time {r.stage_time:g} against "
                    f"N = {int(m['n'])}, stage time {m['stage_time']:g}",
                    measured=diff,
                    low=diff - half,
                    high=diff + half,
                    rule=f"W − W_main = {r.width:.4f} − {m['width']:.4f} (interval: the "
                    "half-widths added in quadrature)",
                    source="this study",
                )
            )
    return out


def speed(sweeps: pd.DataFrame, seconds: float) -> float:
    """Token pairs × steps per second of the sweeps (N^2 pairs a step: the kernel's cost), from
    the table and the run's wall time ``seconds``."""
    steps = sweeps["stage_time"] / sweeps["dt"]
    return float((steps * sweeps["n"] ** 2).sum() / seconds)


def binder_pairs(config: Config) -> list[tuple[int, int]]:
    """The ``[binder]`` pairs as (N_1, N_2), checked: two integers 2 <= N_1 < N_2."""
    out = []
    for p in config.binder.pairs:
        if len(p) != 2 or not all(isinstance(k, int) for k in p) or not 2 <= p[0] < p[1]:
            raise ValueError(
                f"binder.pairs: each pair must be [N_1, N_2], 2 <= N_1 < N_2, got {p!r}"
            )
        out.append((int(p[0]), int(p[1])))
    return out


def stage_seconds(
    time_per_point: float, pair: tuple[int, int], config: Config, rate: float
) -> float:
    """The one-thread seconds of ``binder.points`` (β, N) points, half at each N, each over a
    chain time ``time_per_point`` at the step ``binder.dt``, at ``rate`` pair-steps per second."""
    b = config.binder
    pairs_steps = time_per_point / float(b.dt) * (pair[0] ** 2 + pair[1] ** 2)
    return float(int(b.points) / 2 * pairs_steps / rate)


def _binder(config: Config, rate: float) -> list[dict]:
    """Context rows: per N pair the mean-field crossing of U_N(β) at K_# and the chain time
    that resolves it at β_* ± the tolerance (:mod:`.binder`); the fewest one-thread seconds
    over the pairs whose crossing meets the target, against the budget (d = 2 only)."""
    from scipy.stats import norm

    c, b = config.checks, config.binder
    if int(config.d) != 2:
        return []
    star, tol = tricritical_beta(2), float(c.beta_star_tolerance)
    z = float(norm.ppf(0.5 + float(c.confidence) / 2))
    lo, hi = float(b.low), float(b.high)
    out, costs = [], []  # costs: of the pairs whose mean-field crossing meets the target
    for pair in binder_pairs(config):
        cross = binder.predicted_crossing(pair, lo, hi)
        need = binder.required_time(star - tol, star + tol, pair, z)
        cost = stage_seconds(need, pair, config, rate)
        if abs(cross - star) <= tol:
            costs.append(cost)
        u = {k: [binder.predicted_binder(x, k)[0] for x in (lo, star - tol, star + tol, hi)]
             for k in pair}  # fmt: skip
        out.append(
            check(
                f"binder_crossing_n{pair[0]}_{pair[1]}",
                "context",
                f"the mean-field ratio U_N = E[m_1^4]/E[m_1^2]^2 at K_#: where the curves of "
                f"N = {pair[0]} and {pair[1]} cross, and the time that locates it within ±{tol:g}",
                measured=cross,
                threshold=need,
                rule=f"the β in [{lo:g}, {hi:g}] where U_{pair[1]} = U_{pair[0]} (law ∝ m e^(−N "
                f"F_K(m)), F_K minimised at fixed m_1); U at β = {lo:g}, {star - tol:.4f}, "
                f"{star + tol:.4f}, {hi:g}: "
                + "; ".join(f"N = {k}: " + ", ".join(f"{x:.4f}" for x in u[k]) for k in pair)
                + f" (limits π/2 = {binder.QUARTIC:.4f}, {binder.SEXTIC:.4f}, 1); the difference "
                f"at β_* ± {tol:g} {z:.3g} standard errors from 0 needs a chain time of "
                f"{need:.3g} per (β, N) point (threshold), {int(b.points)} points {cost:.3g} s on "
                "one thread",
                source="Mun, Rosenzweig (arXiv 2604.16288), the quartic coefficient; binder.py",
            )
        )
    # inf: no pair can meet the target; NaN: the speed is unknown (no recorded run time)
    best = math.nan if not math.isfinite(rate) else min(costs) if costs else math.inf
    fits = (
        "unknown (no run time)"
        if not math.isfinite(rate)
        else "yes"
        if best <= float(b.budget)
        else "no"
    )
    out.append(
        check(
            "binder_power",
            "context",
            f"power analysis: can the crossing of U_N(β) at K_# locate β_* within ±{tol:g} in "
            f"{float(b.budget):g} s on one thread?",
            measured=best,
            threshold=float(b.budget),
            rule="the fewest seconds over the N pairs whose mean-field crossing lies within "
            f"±{tol:g} of β_* = {star:.4f} (binder_crossing_*; a pair outside misses the target "
            "at any run length) against the budget, at the speed of these sweeps, "
            f"{rate:.3g} token pairs × steps per second: fits: {fits}"
            + ("; the stage is not run" if fits != "yes" else ""),
            source="binder.py; this study's sweeps and run time",
        )
    )
    return out


def run_seconds(out: Path) -> float:
    """The sweeps' wall time recorded in ``out/run.json`` (the runner records it after the
    simulation, before the checks; NaN where there is no record)."""
    record = Path(out) / "run.json"
    if not record.is_file():
        return math.nan
    return float(json.loads(record.read_text())["seconds"]["run"])


def load(out: Path) -> pd.DataFrame:
    return read_table(Path(out) / "sweeps.parquet")[0]


def rows(sweeps: pd.DataFrame, config: Config, seconds: float = math.nan) -> list[dict]:
    """The checks rows, from the sweeps."""
    lp = loops(sweeps, config)
    br = branches(sweeps, config)
    main = lp[lp["set"] == "main"].reset_index(drop=True)
    above = main[main["above"]]
    widest = float(above["width"].max()) if len(above) else math.nan
    barrier = float(config.checks.open_barrier)
    out = _continuous(main, config, widest)
    out += _loop(
        main,
        config,
        "loop_above",
        main["above"],
        "for β > β_* the transition is discontinuous: a jump and a hysteresis loop",
    )
    out += _loop(
        main,
        config,
        "loop_above/finite_n",
        main["above"] & (main["barrier_n"] >= barrier),
        f"at N tokens the loop is open where the barrier at the Maxwell point N ΔF(K_c) is at "
        f"least {barrier:g} (the escape time e^(N ΔF) beyond the stage time)",
    )
    out += _jumps(main, config)
    out += _levels(br, config)
    out += _beta_star(main, config)
    return out + _context(lp, config) + _binder(config, speed(sweeps, seconds))


def checks(out: Path, config: Config) -> pd.DataFrame:
    """The checks table of the study (columns of :mod:`metastab.studies.verdict`)."""
    return checks_frame(rows(load(out), config, run_seconds(out)))
