"""Metastability, [FW] Thm 5.4: the exit time T2 of SA_P against β.

Setup (``config.toml``): the regular triangle K on the unit circle (equinorm, acute cones,
c0 > 0, B = I), a token on every vertex and ``per_vertex`` more tokens per vertex at distance
``offset`` from it, γ and ε = 2 γ d(K). Two first-passage times per chain, with common random
numbers (chain k draws the same uniforms in both runs at one β, so T_ball <= T2 path by path):

- ``hull``: T2, the first step at which some token leaves conv{x_j^0 : σ(j) = σ(i)} + B(0, ε)
  (:class:`metastab.LeaveHull`), the exit time of Thm 5.4;
- ``ball``: the first step at which some token leaves B(v_σ(i), ε) (:class:`metastab.LeaveBall`).

Two engines run the same chain:

- ``direct``: ``first_passage(..., mode="exact")`` takes every step. Its β ladder climbs from
  ``beta_start`` while it is affordable: the step budget of each β is extrapolated from the
  previous ones (log E[T2] linear in β between the last two), a β runs ``min_chains`` to
  ``max_chains`` chains within ``max_chain_steps`` expected chain-steps, and the ladder stops
  when the next β is too costly (stepping through E[T2] steps per chain); far beyond lies the
  underflow wall (:func:`uniform_wall`), where the kernels' exp flushes every cross-group weight
  to 0.
- ``accelerated``: ``first_passage(..., mode="accelerated", merge_tol=merge_tol)`` draws the
  waiting time of every frozen stretch from its exact geometric law
  (:mod:`metastab.engine.accelerated`), so its cost grows with the number of events, not of steps.
  It runs ``accelerated_chains`` chains at every β of ``accelerated_beta_start`` …
  ``accelerated_beta_stop`` (step ``accelerated_beta_step``) with the budget
  ``accelerated_max_steps`` (float64 step counts): the grid is fixed by the config, never by the
  wall clock, so the tables are the same on any machine. Its streams come from
  ``accelerated_seed``, so its samples are independent of the direct ones where both exist, and
  the two are compared there (:func:`crosscheck`).
  :func:`merge_tol_effect` reruns one β at several ``merge_tols``.

Every β has its own root of streams, derived from the engine's seed
(:func:`~metastab.studies.measurement.streams`), so the samples of different β are independent,
as the scaling fits across β assume.

Everything is a pure function of the configuration and its seeds, so the tables are reproducible
bit for bit; only wall times vary.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from metastab import stats, theory
from metastab.engine import simulate, underflow_exponent
from metastab.events import LeaveBall, LeaveHull
from metastab.models import SoftmaxChain
from metastab.results import provenance, read_table, write_table
from metastab.setups.polytopes import regular_polygon
from metastab.studies.measurement import (
    POISSON_LIMIT_RATE,
    logrank_p,
    poisson_limit_intervals,
    quiet,
    run_point,
    streams,
)

from .config import Config

EVENTS = ("hull", "ball")
ENGINES = ("direct", "accelerated")
# The kernels' exp flushes weights e^z with z below this (≈ -708.74) to 0.
UNDERFLOW_EXPONENT = underflow_exponent()


# --------------------------------------------------------------------------- setup


def near_vertex_tokens(polytope, per_vertex: int, offset: float, rng) -> np.ndarray:
    """The clustered start of [FW] Thm 5.4: every token near its vertex.

    Tokens 0..κ−1 sit on the vertices; token κ(r + 1) + a (r < per_vertex) sits at
    v_a + offset·u with u a random unit direction into K at v_a (a Dirichlet combination of the
    edge directions v_b − v_a), so it lies in K and, for small offsets, in the cell of v_a.

    Parameters
    ----------
    polytope : metastab.Polytope
    per_vertex : int
        Tokens per vertex besides the vertex token.
    offset : float
        Their distance to the vertex.
    rng : int or Generator

    Returns
    -------
    ndarray, shape (κ (per_vertex + 1), d)

    Raises
    ------
    ValueError
        If a token falls outside K or outside the cell of its vertex.
    """
    V = polytope.vertices
    k = len(V)
    gen = np.random.default_rng(rng)
    rows = [V.copy()]
    for _ in range(per_vertex):
        block = np.empty_like(V)
        for a in range(k):
            edges = np.delete(V, a, axis=0) - V[a]
            edges /= np.linalg.norm(edges, axis=1)[:, None]
            u = gen.dirichlet(np.ones(k - 1)) @ edges
            block[a] = V[a] + offset * u / np.linalg.norm(u)
        rows.append(block)
    x0 = np.vstack(rows)
    expected = np.tile(np.arange(k), per_vertex + 1)
    if not (polytope.contains(x0).all() and np.array_equal(polytope.assign(x0), expected)):
        raise ValueError(f"offset={offset} puts tokens outside K or outside their cells")
    return x0


def uniform_wall(polytope, multiplicity: int) -> float:
    """The β beyond which every cross-group pick's weight underflows to 0 in the kernels.

    In the clustered state of Thm 5.4 (``multiplicity`` tokens on every vertex) a token at v_a
    picks a token at v_b with weight e^{β(<v_a, v_b> - <v_a, v_a>)} (B = I, unit vertices). The
    kernel draws every pick of positive weight with its probability, but its exp flushes
    exponents below ``engine.underflow_exponent()`` (≈ -708.74) to 0: past this β no token
    can leave its vertex by direct stepping. The weights do not depend on ``multiplicity``.

    Parameters
    ----------
    polytope : metastab.Polytope
    multiplicity : int
        Tokens per vertex.

    Returns
    -------
    float
        The β at which the largest cross-group exponent equals the underflow exponent.
    """
    V = polytope.vertices
    G = V @ V.T
    off = ~np.eye(len(V), dtype=bool)
    gap = float((G - np.diag(G)[:, None])[off].max())  # the largest cross exponent is β gap
    return UNDERFLOW_EXPONENT / gap


def setup(config: Config) -> dict:
    """Polytope, initial configuration, events and the theorem's quantities."""
    polytope = regular_polygon(int(config.polygon_vertices))
    gamma = float(config.gamma)
    eps = float(config.eps_over_gamma_diameter) * gamma * polytope.diameter
    x0 = near_vertex_tokens(
        polytope, int(config.per_vertex), float(config.offset), int(config.config_seed)
    )
    groups = polytope.assign(x0)
    phase = theory.clustering_phase(polytope, x0, gamma)
    spread = float(np.linalg.norm(x0 - polytope.vertices[groups], axis=1).max())
    events = {
        "hull": LeaveHull(groups=groups, radius=eps),
        "ball": LeaveBall(eps, centers=polytope.vertices[groups]),
    }
    facts = {
        "polytope": polytope.name,
        "vertices": polytope.vertices.tolist(),
        "n": int(len(x0)),
        "d": int(polytope.dim),
        "gamma": gamma,
        "eps": eps,
        "eps_over_gamma": eps / gamma,
        "diameter": polytope.diameter,
        "c0": polytope.c0,
        "tau": phase.tau,
        "m": phase.m,
        "C_needed": spread / phase.tau,
        "hypotheses": {
            **phase.hypotheses,
            "eps_over_gamma_ge_2d": bool(eps / gamma >= 2 * polytope.diameter * (1 - 1e-12)),
        },
        "theorem_exponent": theory.metastability_exponent(polytope.c0, eps, gamma),
        "uniform_wall_beta": uniform_wall(polytope, int(config.per_vertex) + 1),
        "x0": x0.tolist(),
        "groups": groups.tolist(),
    }
    return {"polytope": polytope, "x0": x0, "events": events, "facts": facts}


# --------------------------------------------------------------------------- β ladder


def predicted_mean(history: list[tuple[float, float]], beta: float, c0: float) -> float:
    """E[T2] at ``beta`` extrapolated from (β, mean) pairs already measured.

    Log-linear through the last two points; from a single point, with slope c0 (the score gap of
    one cross-group pick from the clustered state).
    """
    (b1, m1) = history[-1]
    if len(history) == 1:
        slope = c0
    else:
        (b0, m0) = history[-2]
        slope = max((math.log(m1) - math.log(m0)) / (b1 - b0), 0.0)
    return m1 * math.exp(slope * (beta - b1))


def climb(config: Config, state: dict, log=print) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Run the direct-stepping β ladder of the study (module docstring).

    Returns
    -------
    chains : DataFrame
        One row per chain, event and β: chain, steps, censored, max_steps, beta, event, engine.
    costs : DataFrame
        Per (engine, event, β): chains, max_steps, predicted_mean, escapes, wall_s,
        steps_simulated (chain-steps), token_steps, jumps.
    stop : dict
        Why and at which β the ladder stopped.
    """
    facts = state["facts"]
    x0, gamma = state["x0"], facts["gamma"]
    budget = float(config.max_chain_steps)
    factor = float(config.budget_factor)
    lo, hi = int(config.min_chains), int(config.max_chains)
    frames, costs = [], []
    history: list[tuple[float, float]] = []  # (β, mean steps to escape)
    stop: dict[str, Any] = {"reason": "beta_stop reached", "beta": None}
    beta = float(config.beta_start)
    while beta <= float(config.beta_stop) + 1e-9:
        if beta >= facts["uniform_wall_beta"]:
            stop = {"reason": "uniform wall", "beta": beta}
            break
        mean = (
            float(config.first_max_steps) / factor
            if not history
            else predicted_mean(history, beta, facts["c0"])
        )
        chains = min(hi, int(budget // mean))
        if chains < lo:
            stop = {
                "reason": "compute budget",
                "beta": beta,
                "predicted_mean": mean,
                "predicted_chain_steps": lo * mean,
            }
            break
        max_steps = int(math.ceil(factor * mean))
        model = SoftmaxChain(beta=beta, gamma=gamma)
        for name in EVENTS:
            frame, cost = run_point(
                model,
                x0,
                state["events"][name],
                chains=chains,
                max_steps=max_steps,
                seed=int(config.seed),
            )
            frames.append(frame.assign(event=name, engine="direct"))
            escapes = int((~frame["censored"]).sum())
            costs.append(
                {
                    "engine": "direct",
                    "event": name,
                    "beta": beta,
                    "chains": chains,
                    "max_steps": max_steps,
                    "predicted_mean": mean,
                    "escapes": escapes,
                    **cost,
                }
            )
            log(
                f"  beta={beta:g} {name}: {escapes}/{chains} escaped, max_steps={max_steps}, "
                f"{cost['wall_s']:.1f} s"
            )
        hull = frames[-2]
        escaped = int((~hull["censored"]).sum())
        if escaped < int(config.min_escapes):
            stop = {"reason": "too few escapes", "beta": beta}
            break
        history.append((beta, float(hull["steps"].sum()) / escaped))
        beta += float(config.beta_step)
    return pd.concat(frames, ignore_index=True), pd.DataFrame(costs), stop


def accelerated_betas(config: Config) -> np.ndarray:
    """The β grid of the accelerated engine: start, start + step, ... <= stop."""
    start, stop = float(config.accelerated_beta_start), float(config.accelerated_beta_stop)
    step = float(config.accelerated_beta_step)
    count = int(math.floor((stop - start) / step + 1e-9)) + 1
    return start + step * np.arange(count)


def climb_accelerated(config: Config, state: dict, log=print):
    """Run the accelerated engine at every β of :func:`accelerated_betas` (module docstring).

    Every chain runs to its escape or to ``accelerated_max_steps``, at every β of the grid.

    Returns
    -------
    chains, costs, stop : as :func:`climb`, with ``engine`` = "accelerated".
    """
    facts = state["facts"]
    x0, gamma = state["x0"], facts["gamma"]
    chains = int(config.accelerated_chains)
    budget = float(config.accelerated_max_steps)
    options = {"mode": "accelerated", "merge_tol": float(config.merge_tol)}
    seed = int(config.accelerated_seed)
    frames, costs = [], []
    stop = {"reason": "accelerated_beta_stop reached", "beta": None}
    for beta in accelerated_betas(config):
        model = SoftmaxChain(beta=float(beta), gamma=gamma)
        for name in EVENTS:
            frame, cost = run_point(
                model,
                x0,
                state["events"][name],
                chains=chains,
                max_steps=budget,
                seed=seed,
                **options,
            )
            frames.append(frame.assign(event=name, engine="accelerated"))
            escapes = int((~frame["censored"]).sum())
            costs.append(
                {
                    "engine": "accelerated",
                    "event": name,
                    "beta": float(beta),
                    "chains": chains,
                    "max_steps": budget,
                    "predicted_mean": math.nan,
                    "escapes": escapes,
                    **cost,
                }
            )
            log(
                f"  beta={beta:g} {name} (accelerated): {escapes}/{chains} escaped, "
                f"mean {frame['steps'].sum() / max(escapes, 1):.3g} steps, "
                f"{cost['wall_s']:.2f} s"
            )
    return pd.concat(frames, ignore_index=True), pd.DataFrame(costs), stop


def merge_tol_effect(config: Config, state: dict, log=print) -> pd.DataFrame:
    """T2 at one β (``merge_tol_beta``) with the accelerated engine at every ``merge_tols``.

    Same chains (root ``streams(accelerated_seed + 1, merge_tol_beta)``) at every tolerance.
    Per tolerance: escapes, mean T2 with its exact 95 % interval, events drawn per escape
    (jumps), wall seconds, and the log-rank p-value of the T2 sample against the one at the
    study's ``merge_tol``.
    """
    facts = state["facts"]
    beta = float(config.merge_tol_beta)
    model = SoftmaxChain(beta=beta, gamma=facts["gamma"])
    samples, rows = {}, []
    tols = sorted({float(t) for t in config.merge_tols} | {float(config.merge_tol)}, reverse=True)
    for tol in tols:
        frame, cost = run_point(
            model,
            state["x0"],
            state["events"]["hull"],
            chains=int(config.merge_tol_chains),
            max_steps=float(config.accelerated_max_steps),
            seed=int(config.accelerated_seed) + 1,
            mode="accelerated",
            merge_tol=tol,
        )
        rate, _ = quiet(stats.escape_rate, frame["steps"].to_numpy(), frame["censored"].to_numpy())
        low, high = (
            rate.confidence_interval()
            if rate.rate >= POISSON_LIMIT_RATE
            else stats.garwood_interval(rate.events, rate.exposure)
        )
        escapes = int((~frame["censored"]).sum())
        samples[tol] = frame
        rows.append(
            {
                "beta": beta,
                "merge_tol": tol,
                "chains": len(frame),
                "escapes": escapes,
                "mean": rate.mean,
                "mean_low": 1.0 / high,
                "mean_high": 1.0 / low,
                "jumps_per_escape": cost["jumps"] / max(escapes, 1),
                "wall_s": cost["wall_s"],
            }
        )
        log(
            f"  merge_tol={tol:g} at beta={beta:g}: mean T2 {rate.mean:.3g}, {cost['wall_s']:.2f} s"
        )
    ref = samples[float(config.merge_tol)]
    for row in rows:
        row["logrank_p"] = logrank_p(samples[row["merge_tol"]], ref)
    return pd.DataFrame(rows)


def per_beta_table(chains: pd.DataFrame, config: Config) -> pd.DataFrame:
    """Per (engine, event, β): escapes, mean and median with exact intervals, memorylessness.

    ``memoryless_p`` and ``memoryless_D`` come from :func:`metastab.stats.exponentiality_test`
    (geometric law, each chain censored at its own budget), seeded per (engine, event, β) from
    ``stats_seed``; ``sample_median`` is the Kaplan–Meier median (no law assumed) and ``cv``
    the coefficient of variation of min(T, max_steps) (a lower bound on that of T where chains
    are censored).
    """
    rows = []
    for e, engine in enumerate(ENGINES):
        for k, name in enumerate(EVENTS):
            frame = select(chains, engine, name)
            if frame.empty:
                continue
            (per, _), _ = quiet(stats.fit_report, frame, memoryless=False)
            per = poisson_limit_intervals(per)
            per.insert(0, "event", name)
            per.insert(0, "engine", engine)
            tests, medians = {}, {}
            for j, (beta, g) in enumerate(frame.groupby("beta")):
                steps, censored = g["steps"].to_numpy(), g["censored"].to_numpy()
                tests[beta] = quiet(
                    stats.exponentiality_test,
                    steps,
                    censored,
                    max_steps=g["max_steps"].to_numpy(),
                    n_resamples=int(config.n_resamples),
                    rng=[int(config.stats_seed), k, j, e],
                )[0]
                medians[beta] = quiet(stats.survival, steps, censored)[0].median
            per["memoryless_p"] = per["beta"].map({b: t.pvalue for b, t in tests.items()})
            per["memoryless_D"] = per["beta"].map({b: t.statistic for b, t in tests.items()})
            per["sample_median"] = per["beta"].map(medians)
            per["cv"] = per["beta"].map(
                frame.groupby("beta")["steps"].agg(lambda s: float(s.std(ddof=1) / s.mean()))
            )
            rows.append(per)
    return pd.concat(rows, ignore_index=True)


def at_beta(frame: pd.DataFrame, beta: float) -> pd.DataFrame:
    """The rows of ``frame`` at ``beta``."""
    return frame[np.isclose(frame["beta"], beta, rtol=0, atol=1e-9)]


def select(chains: pd.DataFrame, engine: str, event: str) -> pd.DataFrame:
    """The chains of one engine and one event, without those two columns."""
    keep = (chains["engine"] == engine) & (chains["event"] == event)
    return chains[keep].drop(columns=["engine", "event"])


def fit_ranges(chains: pd.DataFrame, config: Config) -> list[tuple[str, str, float, float]]:
    """(label, engine, β_min, β_max) of the Arrhenius fits: the direct range from
    ``fit_from_beta``, the accelerated engine on the same β, on every β from ``fit_from_beta``
    (the extended range) and on its tail from ``tail_from_beta``."""
    lo = float(config.fit_from_beta)
    direct = chains.loc[chains["engine"] == "direct", "beta"]
    fast = chains.loc[chains["engine"] == "accelerated", "beta"]
    out = []
    if not direct.empty:
        out.append(("direct", "direct", lo, float(direct.max())))
        if not fast.empty:
            out.append(("accelerated, direct range", "accelerated", lo, float(direct.max())))
    if not fast.empty:
        out.append(("accelerated, extended", "accelerated", lo, float(fast.max())))
        tail = float(config.tail_from_beta)
        if (fast >= tail - 1e-9).any() and fast.max() > tail:
            out.append(("accelerated, tail", "accelerated", tail, float(fast.max())))
    return out


def exponent_fits(chains: pd.DataFrame, facts: dict, config: Config) -> pd.DataFrame:
    """Joint censored Arrhenius fits log E[T] = a + bβ per fit range (:func:`fit_ranges`) and
    event, with the profile interval of b, a nonparametric bootstrap interval (chains resampled
    within β: the geometric likelihood's interval assumes Var T = E[T]², which the data need not
    meet), the fit on the same β with a c·log β prefactor (and its own profile interval of b),
    and the theorem's exponent beside them."""
    gen = np.random.default_rng(int(config.stats_seed))
    rows = []
    for label, engine, lo, hi in fit_ranges(chains, config):
        for name in EVENTS:
            frame = select(chains, engine, name)
            used = frame[(frame["beta"] >= lo - 1e-9) & (frame["beta"] <= hi + 1e-9)]
            if used["beta"].nunique() < 2:
                continue
            fit, notes = quiet(stats.fit_scaling, used)
            low, high = fit.confidence_interval("slope")
            boot = []
            groups = [g for _, g in used.groupby("beta")]
            for _ in range(int(config.n_bootstrap)):
                sample = pd.concat([g.iloc[gen.integers(0, len(g), len(g))] for g in groups])
                boot.append(quiet(stats.fit_scaling, sample)[0].slope)
            wide = None
            if used["beta"].nunique() >= 3:  # a c·log β term needs three β values
                wide, wide_notes = quiet(stats.fit_scaling, used, prefactor=True)
                w_low, w_high = wide.confidence_interval("slope")
            else:
                wide_notes, w_low, w_high = [], math.nan, math.nan
            rows.append(
                {
                    "range": label,
                    "engine": engine,
                    "event": name,
                    "beta_min": float(used["beta"].min()),
                    "beta_max": float(used["beta"].max()),
                    "betas": int(used["beta"].nunique()),
                    "chains": len(used),
                    "b": fit.slope,
                    "b_low": low,
                    "b_high": high,
                    "b_boot_low": float(np.quantile(boot, 0.025)),
                    "b_boot_high": float(np.quantile(boot, 0.975)),
                    "a": fit.intercept,
                    "deviance": fit.deviance,
                    "df": fit.df,
                    "b_with_prefactor": wide.slope if wide else math.nan,
                    "b_with_prefactor_low": w_low,
                    "b_with_prefactor_high": w_high,
                    "c_prefactor": wide.prefactor if wide else math.nan,
                    "prefactor_lrt_p": wide.lrt_pvalue if wide else math.nan,
                    "deviance_with_prefactor": wide.deviance if wide else math.nan,
                    "theorem_exponent": facts["theorem_exponent"],
                    "c0": facts["c0"],
                    "ratio_b_to_theorem": fit.slope / facts["theorem_exponent"],
                    "warnings": " | ".join(notes + wide_notes),
                }
            )
    return pd.DataFrame(rows)


def exponent_by_start(chains: pd.DataFrame, facts: dict, config: Config) -> pd.DataFrame:
    """The exponent of T2 against the start of the fitted range (its sensitivity table).

    For every start β_0 of ``fit_starts`` (with at least three β of the engine that reached
    furthest from there on), both models on β_0 … β_max: log E[T2] = a + bβ and, with a
    prefactor, E[T2] ≈ A β^k e^{bβ} (``stats.fit_scaling(prefactor=True)``, whose c is k). Each
    with its profile-likelihood interval (geometric law) and a nonparametric bootstrap interval:
    ``n_bootstrap`` resamples of the chains within each β, seeded by ``stats_seed`` and the
    start's index. The geometric likelihood assumes Var T = E[T]², which a rejected
    memorylessness test contradicts, so the two intervals can differ either way; the checks use
    the wider.
    """
    engine = "accelerated" if (chains["engine"] == "accelerated").any() else "direct"
    frame = select(chains, engine, "hull")
    top = float(frame["beta"].max())
    rows = []
    for j, start in enumerate(float(v) for v in config.fit_starts):
        used = frame[frame["beta"] >= start - 1e-9]
        if used["beta"].nunique() < 3:
            continue
        gen = np.random.default_rng([int(config.stats_seed), 1, j])
        groups = [g for _, g in used.groupby("beta")]
        plain, _ = quiet(stats.fit_scaling, used)
        wide, _ = quiet(stats.fit_scaling, used, prefactor=True)
        draws = []
        for _ in range(int(config.n_bootstrap)):
            sample = pd.concat([g.iloc[gen.integers(0, len(g), len(g))] for g in groups])
            with_k = quiet(stats.fit_scaling, sample, prefactor=True)[0]
            draws.append(
                (quiet(stats.fit_scaling, sample)[0].slope, with_k.slope, with_k.prefactor)
            )
        boot = np.asarray(draws)
        low, high = np.quantile(boot, 0.025, axis=0), np.quantile(boot, 0.975, axis=0)
        b_lo, b_hi = plain.confidence_interval("slope")
        w_lo, w_hi = wide.confidence_interval("slope")
        k_lo, k_hi = wide.confidence_interval("prefactor")
        rows.append(
            {
                "engine": engine,
                "event": "hull",
                "beta_start": start,
                "beta_max": top,
                "betas": int(used["beta"].nunique()),
                "chains": len(used),
                "b": plain.slope,
                "b_low": b_lo,
                "b_high": b_hi,
                "b_boot_low": low[0],
                "b_boot_high": high[0],
                "deviance": plain.deviance,
                "df": plain.df,
                "bk": wide.slope,
                "bk_low": w_lo,
                "bk_high": w_hi,
                "bk_boot_low": low[1],
                "bk_boot_high": high[1],
                "k": wide.prefactor,
                "k_low": k_lo,
                "k_high": k_hi,
                "k_boot_low": low[2],
                "k_boot_high": high[2],
                "k_lrt_p": wide.lrt_pvalue,
                "deviance_k": wide.deviance,
                "df_k": wide.df,
                "n_bootstrap": int(config.n_bootstrap),
                "c0": facts["c0"],
                "theorem_exponent": facts["theorem_exponent"],
            }
        )
    return pd.DataFrame(rows)


def crosscheck(per: pd.DataFrame, chains: pd.DataFrame) -> pd.DataFrame:
    """Direct against accelerated stepping at every (event, β) both engines ran.

    Mean escape times with their exact 95 % intervals side by side, their ratio, whether the
    intervals overlap, and the log-rank p-value of the two samples (independent seeds).
    """
    rows = []
    cols = ["events", "mean", "mean_low", "mean_high"]
    for name in EVENTS:
        a = per[(per["engine"] == "direct") & (per["event"] == name)].set_index("beta")
        b = per[(per["engine"] == "accelerated") & (per["event"] == name)].set_index("beta")
        for beta in sorted(set(a.index) & set(b.index)):
            d, f = a.loc[beta, cols], b.loc[beta, cols]
            rows.append(
                {
                    "event": name,
                    "beta": beta,
                    **{f"direct_{c}": float(d[c]) for c in cols},
                    **{f"accelerated_{c}": float(f[c]) for c in cols},
                    "ratio": float(f["mean"] / d["mean"]),
                    "overlap": bool(
                        f["mean_low"] <= d["mean_high"] and d["mean_low"] <= f["mean_high"]
                    ),
                    "logrank_p": logrank_p(
                        at_beta(select(chains, "direct", name), beta),
                        at_beta(select(chains, "accelerated", name), beta),
                    ),
                }
            )
    return pd.DataFrame(rows)


def local_slopes(per: pd.DataFrame) -> pd.DataFrame:
    """Finite-difference exponents Δ log E[T] / Δβ between consecutive β, per engine, event."""
    rows = []
    for (engine, name), g in per.groupby(["engine", "event"], sort=False):
        g = g.sort_values("beta")
        b, m = g["beta"].to_numpy(), np.log(g["mean"].to_numpy())
        for k in range(1, len(b)):
            rows.append(
                {
                    "engine": engine,
                    "event": name,
                    "beta_low": b[k - 1],
                    "beta_high": b[k],
                    "beta_mid": (b[k] + b[k - 1]) / 2,
                    "slope": (m[k] - m[k - 1]) / (b[k] - b[k - 1]),
                }
            )
    return pd.DataFrame(rows)


def merge_points(state: dict, steps: dict, *, chains: int, seed: int) -> pd.DataFrame:
    """Where each group has merged after ``steps[β]`` steps, and the score gap there, per β.

    At finite β a vertex token also picks the other tokens of its group, so a group merges at a
    point inside K short of its vertex; the cost of a cross-group pick from there is the gap
    <u_a, u_a> − <u_a, u_b> between merge points u_a, u_b, smaller than c0. Medians over chains
    of the group centroids' norm, of the largest distance of a token to its centroid, and of the
    smallest gap. Streams: ``streams(seed, β)``, a root per β.
    """
    x0 = state["x0"]
    groups = np.asarray(state["facts"]["groups"])
    labels = np.unique(groups)
    rows = []
    for beta, count in steps.items():
        run = simulate(
            SoftmaxChain(beta=beta, gamma=state["facts"]["gamma"]),
            x0,
            steps=count,
            chains=chains,
            rng=streams(seed, beta),
        )
        centroids = np.stack([run.final[:, groups == a].mean(axis=1) for a in labels], axis=1)
        spread = np.max(
            [
                np.linalg.norm(run.final[:, groups == a] - centroids[:, [k]], axis=-1).max(axis=1)
                for k, a in enumerate(labels)
            ],
            axis=0,
        )
        G = np.einsum("cak,cbk->cab", centroids, centroids)
        gaps = np.diagonal(G, axis1=1, axis2=2)[:, :, None] - G
        off = ~np.eye(len(labels), dtype=bool)
        rows.append(
            {
                "beta": beta,
                "steps": count,
                "centroid_norm": float(np.median(np.linalg.norm(centroids, axis=-1))),
                "spread": float(np.median(spread)),
                "gap": float(np.median(gaps[:, off].min(axis=1))),
            }
        )
    return pd.DataFrame(rows)


def bound_check(chains: pd.DataFrame, per: pd.DataFrame, facts: dict) -> pd.DataFrame:
    """Empirical P[T2 >= t] against the Thm 5.4 bound, per engine and β.

    Over every integer t in [2, t_max] (t_max the largest observed time) the bound
    1 − exp(k log(γt/ε) + k log n − β c0 ε/(2γ)), k = 1 + ε/γ, must lie below the upper 95 %
    Kaplan–Meier band of P[T2 >= t] = P[T2 > t − 1]; ``violation`` is the largest excess (<= 0:
    the bound holds), computed as (1 − band) − e^X with the bound = 1 − e^X, so that it stays
    accurate where the bound rounds to 1; ``one_minus_bound_at_t2`` is e^X at t = 2. The band is
    constant between t = 2 and the step after each observed time u (t = u + 1) and the bound
    decreases in t, so the largest excess on every such stretch is at its first t: the check
    evaluates exactly those t, which keeps it exact at any time scale.
    ``t_star`` is the last integer t <= t_max at which the bound is positive. Looseness: the
    measured median and mean over the time the bound guarantees with probability 1/2 and over
    its lower bound on E[T2] (:func:`metastab.theory.exit_time_bound`).
    """
    kw = dict(
        c0=facts["c0"],
        eps=facts["eps"],
        gamma=facts["gamma"],
        n=facts["n"],
        diameter=facts["diameter"],
    )
    k = 1 + facts["eps"] / facts["gamma"]

    def log_miss(t, beta):
        """X = k log(γt/ε) + k log n − β c0 ε/(2γ): the bound is 1 − e^X."""
        return (
            k * np.log(facts["gamma"] * np.asarray(t, dtype=np.float64) / facts["eps"])
            + k * math.log(facts["n"])
            - beta * facts["c0"] * facts["eps"] / (2 * facts["gamma"])
        )

    theory.metastability_bound(2.0, 1.0, **kw)  # checks the theorem's hypotheses
    rows = []
    for engine in ENGINES:
        hull = select(chains, engine, "hull")
        for beta, g in hull.groupby("beta"):
            km, _ = quiet(stats.survival, g["steps"].to_numpy(), g["censored"].to_numpy())
            t_max = float(g["steps"].max())
            _, high = km.confidence_interval()
            high = np.where(np.isnan(high), 1.0, high)
            # first t of every stretch on which the band is constant: 2, and u + 1
            after = (km.time + 1 >= 2) & (km.time + 1 <= t_max)
            t = np.r_[2.0, km.time[after] + 1]
            first = np.searchsorted(km.time, 1.0, side="right") - 1
            upper = np.r_[high[first] if first >= 0 else 1.0, high[after]]
            keep = t <= max(t_max, 2.0)
            # bound − upper = (1 − upper) − e^X with X the exponent of the bound: both terms
            # accurate where the bound rounds to 1 (X = −50 at large β)
            miss = np.exp(log_miss(t[keep], beta))
            # the bound is positive iff log t < log(ε/(γn)) + β c0 ε/(2γk)
            log_zero = math.log(facts["eps"] / (facts["gamma"] * facts["n"])) + beta * facts[
                "c0"
            ] * facts["eps"] / (2 * facts["gamma"] * k)
            zero = math.exp(log_zero)
            last = float(math.ceil(zero) - 1) if zero < 2.0**52 else zero
            t_star = min(last, math.floor(t_max)) if last >= 2 else math.nan
            row = per[
                (per["engine"] == engine) & (per["event"] == "hull") & (per["beta"] == beta)
            ].iloc[0]
            log_half = float(theory.exit_time_bound(beta, prob=0.5, **kw))
            log_mean = float(theory.exit_time_bound(beta, **kw))
            escaped = g.loc[~g["censored"], "steps"]
            rows.append(
                {
                    "engine": engine,
                    "beta": beta,
                    "bound_at_t2": float(theory.metastability_bound(2.0, beta, **kw)),
                    "one_minus_bound_at_t2": float(np.exp(log_miss(2.0, beta))),
                    "t_star": t_star,
                    "first_escape": float(escaped.min()) if len(escaped) else math.nan,
                    "violation": float(((1 - upper[keep]) - miss).max())
                    if miss.size
                    else -math.inf,
                    "bound_t_half": math.exp(log_half),
                    "median": float(row["sample_median"]),
                    "median_ratio": float(row["sample_median"]) / math.exp(log_half),
                    "bound_mean": math.exp(log_mean),
                    "mean": float(row["mean"]),
                    "mean_ratio": float(row["mean"]) / math.exp(log_mean),
                }
            )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- entry point


def run(config: Config, out: Path) -> None:
    """Simulate: the study's simulated tables into ``out`` (see the module docstring; the
    fits and tests of them: :func:`analyse`, which the runner calls next).

    Parameters
    ----------
    config : Config
        The keys of ``config.toml``, typed.
    out : Path
        Receives chains.parquet, per_beta.csv, merge.csv and merge_tol.csv, each with a JSON
        sidecar (configuration, seeds, setup, provenance).
    """
    state = setup(config)
    tic = time.perf_counter()
    direct, direct_costs, stop = climb(config, state)
    direct_seconds = time.perf_counter() - tic
    tic = time.perf_counter()
    fast, fast_costs, fast_stop = climb_accelerated(config, state)
    fast_seconds = time.perf_counter() - tic
    tolerance = merge_tol_effect(config, state)
    chains = pd.concat([direct, fast], ignore_index=True)
    costs = pd.concat([direct_costs, fast_costs], ignore_index=True)
    extra = {
        "stop": stop,
        "accelerated_stop": fast_stop,
        "climb_seconds": direct_seconds,
        "accelerated_seconds": fast_seconds,
    }
    write_statistics(chains, costs, extra, state, config, Path(out), tolerance)


def analyse(out: Path, config: Config) -> None:
    """The fits and tests of the simulated exit times, from ``chains.parquet`` and
    ``per_beta.csv``: exponent.csv, exponent_start.csv, crosscheck.csv, local_slopes.csv and
    bound.csv, with the run's provenance."""
    out = Path(out)
    chains, meta = read_table(out / "chains.parquet")
    per = read_table(out / "per_beta.csv")[0]
    facts = meta["setup"]
    write_table(exponent_fits(chains, facts, config), out / "exponent.csv", meta)
    write_table(exponent_by_start(chains, facts, config), out / "exponent_start.csv", meta)
    write_table(crosscheck(per, chains), out / "crosscheck.csv", meta)
    write_table(local_slopes(per), out / "local_slopes.csv", meta)
    write_table(bound_check(chains, per, facts), out / "bound.csv", meta)


def write_statistics(
    chains, costs, extra: dict, state: dict, config: Config, out: Path, tolerance: pd.DataFrame
) -> None:
    """The simulated exit times and their per-β statistics, the merge-tolerance runs and the
    merge points, written as tables with provenance sidecars (the fits: :func:`analyse`)."""
    facts = state["facts"]
    per = per_beta_table(chains, config)
    per = per.merge(costs.drop(columns=["chains", "escapes"]), on=["engine", "event", "beta"])
    wide = chains.pivot_table(index=["engine", "beta", "chain"], columns="event", values="steps")
    order_violations = int((wide["ball"] > wide["hull"]).sum())
    meta = {
        "study": "metastability",
        "config": config.to_dict(),
        "seeds": {
            "chains": config.seed,
            "accelerated_chains": config.accelerated_seed,
            "merge_tol_chains": int(config.accelerated_seed) + 1,
            "per_beta_root": "SeedSequence([seed, round(1000 beta)])",
            "configuration": config.config_seed,
            "statistics": config.stats_seed,
        },
        "setup": facts,
        **extra,
        "ball_after_hull_chains": order_violations,
        "provenance": provenance(),
    }
    write_table(chains, out / "chains.parquet", meta)
    write_table(per, out / "per_beta.csv", meta)
    write_table(tolerance, out / "merge_tol.csv", meta)
    # look before most chains have left their balls: at half the median exit time at most
    ball = per[per["event"] == "ball"].groupby("beta")["sample_median"].min()
    steps = {float(b): max(1, min(int(config.merge_steps), int(m // 2))) for b, m in ball.items()}
    merged = merge_points(state, steps, chains=int(config.merge_chains), seed=int(config.seed))
    write_table(merged, out / "merge.csv", meta)
