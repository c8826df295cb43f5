"""Metastability, [FW] lem. metastab.1 / Thm 5.4: the exit time T2 of SA_P against β.

Setup (``config.toml``): the regular triangle K on the unit circle (equinorm, acute cones,
c0 > 0, B = I), a token on every vertex and ``per_vertex`` more tokens per vertex at distance
``offset`` from it, γ and ε = 2 γ d(K). Two first-passage times per chain, with common random
numbers (chain k draws the same uniforms in both runs, so T_ball <= T2 path by path):

- ``hull``: T2, the first step at which some token leaves conv{x_j^0 : σ(j) = σ(i)} + B(0, ε)
  (:class:`metastab.LeaveHull`), the exit time of Thm 5.4;
- ``ball``: the first step at which some token leaves B(v_σ(i), ε) (:class:`metastab.LeaveBall`).

The β ladder climbs from ``beta_start`` while it is affordable: the step budget of each β is
extrapolated from the previous ones (log E[T2] linear in β between the last two), a β runs
``min_chains`` to ``max_chains`` chains within ``max_chain_steps`` expected chain-steps, and the
ladder stops before the wall of the 53-bit uniform (:func:`uniform_wall`), where the kernel can no
longer draw a cross-group pick with its true probability. Everything is a pure function of the
configuration and its seeds, so the tables are reproducible bit for bit; only wall times vary.
"""

from __future__ import annotations

import math
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import optimize
from scipy.special import logsumexp

import metastab as ms
from metastab import stats, theory
from metastab.results import provenance, write_table

EVENTS = ("hull", "ball")
# Probabilities below 2**-53 are not representable as the gap between two 53-bit uniforms.
UNIFORM_RESOLUTION = 2.0 ** -53


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
    """The β beyond which one cross-group pick has probability below 2^-53.

    In the clustered state of Thm 5.4 (``multiplicity`` tokens on every vertex) a token at v_a
    picks a given token at v_b with probability e^{β<v_a, v_b>} / Σ_c m_c e^{β<v_a, v_c>}.
    The kernel draws picks by inverting a 53-bit uniform, so a probability below 2^-53 is drawn
    as 0 or 2^-53, never as itself: past this β the simulated chain is no longer SA_P.

    Parameters
    ----------
    polytope : metastab.Polytope
    multiplicity : int
        Tokens per vertex.

    Returns
    -------
    float
        The β at which the smallest such probability equals 2^-53 (B = I).
    """
    V = polytope.vertices
    G = V @ V.T
    k = len(V)

    def log_smallest_pick(beta):
        logw = beta * G + math.log(multiplicity)          # per vertex: m_b e^{β<v_a, v_b>}
        log_total = logsumexp(logw, axis=1)
        off = ~np.eye(k, dtype=bool)
        return float((beta * G - log_total[:, None])[off].min())

    target = math.log(UNIFORM_RESOLUTION)
    return float(optimize.brentq(lambda b: log_smallest_pick(b) - target, 0.0, 1e4))


def setup(config: dict) -> dict:
    """Polytope, initial configuration, events and the theorem's quantities."""
    polytope = ms.regular_polygon(int(config["polygon_vertices"]))
    gamma = float(config["gamma"])
    eps = float(config["eps_over_gamma_diameter"]) * gamma * polytope.diameter
    x0 = near_vertex_tokens(polytope, int(config["per_vertex"]), float(config["offset"]),
                            int(config["config_seed"]))
    groups = polytope.assign(x0)
    phase = theory.clustering_phase(polytope, x0, gamma)
    spread = float(np.linalg.norm(x0 - polytope.vertices[groups], axis=1).max())
    events = {"hull": ms.LeaveHull(groups=groups, radius=eps),
              "ball": ms.LeaveBall(eps, centers=polytope.vertices[groups])}
    facts = {
        "polytope": polytope.name, "vertices": polytope.vertices.tolist(), "n": int(len(x0)),
        "d": int(polytope.dim), "gamma": gamma, "eps": eps, "eps_over_gamma": eps / gamma,
        "diameter": polytope.diameter, "c0": polytope.c0, "tau": phase.tau, "m": phase.m,
        "C_needed": spread / phase.tau, "hypotheses": {**phase.hypotheses,
                                                       "eps_over_gamma_ge_2d": bool(
                                                           eps / gamma >= 2 * polytope.diameter
                                                           * (1 - 1e-12))},
        "theorem_exponent": theory.metastability_exponent(polytope.c0, eps, gamma),
        "uniform_wall_beta": uniform_wall(polytope, int(config["per_vertex"]) + 1),
        "x0": x0.tolist(), "groups": groups.tolist(),
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


def run_point(model, x0, event, *, chains: int, max_steps: int, seed: int):
    """One first-passage run: the per-chain frame and its cost (wall seconds, steps simulated)."""
    tic = time.perf_counter()
    fp = ms.first_passage(model, x0, event, max_steps=max_steps, chains=chains, rng=seed)
    wall = time.perf_counter() - tic
    frame = fp.to_frame()[["chain", "steps", "censored", "max_steps", "beta"]]
    return frame, {"wall_s": wall, "steps_simulated": int(fp.steps.sum()),
                   "token_steps": int(fp.steps.sum()) * x0.shape[0]}


def climb(config: dict, state: dict, log=print) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Run the β ladder of the study (module docstring).

    Returns
    -------
    chains : DataFrame
        One row per chain, event and β: chain, steps, censored, max_steps, beta, event.
    costs : DataFrame
        Per (event, β): chains, max_steps, predicted_mean, escapes, wall_s, steps_simulated
        (chain-steps), token_steps.
    stop : dict
        Why and at which β the ladder stopped.
    """
    facts = state["facts"]
    x0, gamma = state["x0"], facts["gamma"]
    budget = float(config["max_chain_steps"])
    factor = float(config["budget_factor"])
    lo, hi = int(config["min_chains"]), int(config["max_chains"])
    frames, costs, history = [], [], []
    stop = {"reason": "beta_stop reached", "beta": None}
    beta = float(config["beta_start"])
    while beta <= float(config["beta_stop"]) + 1e-9:
        if beta >= facts["uniform_wall_beta"]:
            stop = {"reason": "uniform wall", "beta": beta}
            break
        mean = (float(config["first_max_steps"]) / factor if not history
                else predicted_mean(history, beta, facts["c0"]))
        chains = min(hi, int(budget // mean))
        if chains < lo:
            stop = {"reason": "compute budget", "beta": beta, "predicted_mean": mean,
                    "predicted_chain_steps": lo * mean}
            break
        max_steps = int(math.ceil(factor * mean))
        model = ms.SoftmaxChain(beta=beta, gamma=gamma)
        for name in EVENTS:
            frame, cost = run_point(model, x0, state["events"][name], chains=chains,
                                    max_steps=max_steps, seed=int(config["seed"]))
            frames.append(frame.assign(event=name))
            escapes = int((~frame["censored"]).sum())
            costs.append({"event": name, "beta": beta, "chains": chains, "max_steps": max_steps,
                          "predicted_mean": mean, "escapes": escapes, **cost})
            log(f"  beta={beta:g} {name}: {escapes}/{chains} escaped, max_steps={max_steps}, "
                f"{cost['wall_s']:.1f} s")
        hull = frames[-2]
        escaped = int((~hull["censored"]).sum())
        if escaped < int(config["min_escapes"]):
            stop = {"reason": "too few escapes", "beta": beta}
            break
        history.append((beta, float(hull["steps"].sum()) / escaped))
        beta += float(config["beta_step"])
    return pd.concat(frames, ignore_index=True), pd.DataFrame(costs), stop


# --------------------------------------------------------------------------- statistics


def quiet(func, *args, **kwargs):
    """Call ``func``; return (result, the DiagnosticWarning messages it raised).

    Diagnostics are kept for the tables and the report; any other warning is raised again.
    """
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


def per_beta_table(chains: pd.DataFrame, config: dict) -> pd.DataFrame:
    """Per (event, β): escapes, mean and median with exact intervals, memorylessness.

    ``memoryless_p`` and ``memoryless_D`` come from :func:`metastab.stats.exponentiality_test`
    (geometric law, each chain censored at its own budget), seeded per (event, β) from
    ``stats_seed``; ``sample_median`` is the Kaplan–Meier median (no law assumed) and ``cv``
    the coefficient of variation of min(T, max_steps) (a lower bound on that of T where chains
    are censored).
    """
    rows = []
    for k, name in enumerate(EVENTS):
        frame = chains[chains["event"] == name].drop(columns="event")
        (per, _), _ = quiet(stats.fit_report, frame, memoryless=False)
        per.insert(0, "event", name)
        tests, medians = {}, {}
        for j, (beta, g) in enumerate(frame.groupby("beta")):
            steps, censored = g["steps"].to_numpy(), g["censored"].to_numpy()
            tests[beta] = quiet(stats.exponentiality_test, steps, censored,
                                max_steps=g["max_steps"].to_numpy(),
                                n_resamples=int(config["n_resamples"]),
                                rng=[int(config["stats_seed"]), k, j])[0]
            medians[beta] = quiet(stats.survival, steps, censored)[0].median()
        per["memoryless_p"] = per["beta"].map({b: t.pvalue for b, t in tests.items()})
        per["memoryless_D"] = per["beta"].map({b: t.statistic for b, t in tests.items()})
        per["sample_median"] = per["beta"].map(medians)
        per["cv"] = per["beta"].map(frame.groupby("beta")["steps"].agg(
            lambda s: float(s.std(ddof=1) / s.mean())))
        rows.append(per)
    return pd.concat(rows, ignore_index=True)


def exponent_fits(chains: pd.DataFrame, facts: dict, config: dict) -> pd.DataFrame:
    """Joint censored Arrhenius fits log E[T] = a + bβ per event (β >= fit_from_beta), with the
    profile interval of b, a nonparametric bootstrap interval (chains resampled within β: the
    geometric likelihood's interval assumes Var T = E[T]², which the data need not meet), the
    fit over every β with a c·log β prefactor, and the theorem's exponent beside them."""
    gen = np.random.default_rng(int(config["stats_seed"]))
    rows = []
    for name in EVENTS:
        frame = chains[chains["event"] == name].drop(columns="event")
        used = frame[frame["beta"] >= float(config["fit_from_beta"]) - 1e-9]
        fit, notes = quiet(stats.fit_scaling, used)
        low, high = fit.confidence_interval("slope")
        boot = []
        groups = [g for _, g in used.groupby("beta")]
        for _ in range(int(config["n_bootstrap"])):
            sample = pd.concat([g.iloc[gen.integers(0, len(g), len(g))] for g in groups])
            boot.append(quiet(stats.fit_scaling, sample)[0].slope)
        wide, wide_notes = quiet(stats.fit_scaling, frame, prefactor=True)
        rows.append({
            "event": name, "beta_min": float(used["beta"].min()),
            "beta_max": float(used["beta"].max()), "betas": int(used["beta"].nunique()),
            "b": fit.slope, "b_low": low, "b_high": high,
            "b_boot_low": float(np.quantile(boot, 0.025)),
            "b_boot_high": float(np.quantile(boot, 0.975)),
            "a": fit.intercept, "deviance": fit.deviance, "df": fit.df,
            "b_with_prefactor": wide.slope, "c_prefactor": wide.prefactor,
            "prefactor_lrt_p": wide.lrt_pvalue,
            "theorem_exponent": facts["theorem_exponent"], "c0": facts["c0"],
            "ratio_b_to_theorem": fit.slope / facts["theorem_exponent"],
            "warnings": " | ".join(notes + wide_notes),
        })
    return pd.DataFrame(rows)


def local_slopes(per: pd.DataFrame) -> pd.DataFrame:
    """Finite-difference exponents Δ log E[T] / Δβ between consecutive β, per event."""
    rows = []
    for name, g in per.groupby("event", sort=False):
        g = g.sort_values("beta")
        b, m = g["beta"].to_numpy(), np.log(g["mean"].to_numpy())
        for k in range(1, len(b)):
            rows.append({"event": name, "beta_low": b[k - 1], "beta_high": b[k],
                         "beta_mid": (b[k] + b[k - 1]) / 2,
                         "slope": (m[k] - m[k - 1]) / (b[k] - b[k - 1])})
    return pd.DataFrame(rows)


def merge_points(state: dict, steps: dict, *, chains: int, seed: int) -> pd.DataFrame:
    """Where each group has merged after ``steps[β]`` steps, and the score gap there, per β.

    At finite β a vertex token also picks the other tokens of its group, so a group merges at a
    point inside K short of its vertex; the cost of a cross-group pick from there is the gap
    <u_a, u_a> − <u_a, u_b> between merge points u_a, u_b, smaller than c0. Medians over chains
    of the group centroids' norm, of the largest distance of a token to its centroid, and of the
    smallest gap.
    """
    x0 = state["x0"]
    groups = np.asarray(state["facts"]["groups"])
    labels = np.unique(groups)
    rows = []
    for beta, count in steps.items():
        run = ms.simulate(ms.SoftmaxChain(beta=beta, gamma=state["facts"]["gamma"]), x0,
                          steps=count, chains=chains, rng=seed)
        centroids = np.stack([run.final[:, groups == a].mean(axis=1) for a in labels], axis=1)
        spread = np.max([np.linalg.norm(run.final[:, groups == a] - centroids[:, [k]], axis=-1)
                         .max(axis=1) for k, a in enumerate(labels)], axis=0)
        G = np.einsum("cak,cbk->cab", centroids, centroids)
        gaps = np.diagonal(G, axis1=1, axis2=2)[:, :, None] - G
        off = ~np.eye(len(labels), dtype=bool)
        rows.append({"beta": beta, "steps": count,
                     "centroid_norm": float(np.median(np.linalg.norm(centroids, axis=-1))),
                     "spread": float(np.median(spread)),
                     "gap": float(np.median(gaps[:, off].min(axis=1)))})
    return pd.DataFrame(rows)


def bound_check(chains: pd.DataFrame, per: pd.DataFrame, facts: dict) -> pd.DataFrame:
    """Empirical P[T2 >= t] against the Thm 5.4 bound, per β.

    On every integer t in [2, t_max] (t_max the largest observed time) the bound
    1 − exp(k log(γt/ε) + k log n − β c0 ε/(2γ)), k = 1 + ε/γ, must lie below the upper 95 %
    Kaplan–Meier band of P[T2 >= t] = P[T2 > t − 1]; ``violation`` is the largest excess (<= 0:
    the bound holds). Looseness: the measured median and mean over the time the bound guarantees
    with probability 1/2 and over its lower bound on E[T2] (:func:`metastab.theory.exit_time_bound`).
    """
    kw = dict(c0=facts["c0"], eps=facts["eps"], gamma=facts["gamma"], n=facts["n"],
              diameter=facts["diameter"])
    rows = []
    hull = chains[chains["event"] == "hull"]
    for beta, g in hull.groupby("beta"):
        km, _ = quiet(stats.survival, g["steps"].to_numpy(), g["censored"].to_numpy())
        t = np.arange(2, int(g["steps"].max()) + 1, dtype=np.float64)
        bound = theory.metastability_bound(t, beta, **kw)
        _, high = km.confidence_interval()
        # upper band as a right-continuous step function of time (1 before the first event)
        idx = np.searchsorted(km.time, t - 1, side="right") - 1
        upper = np.where(idx >= 0, high[np.maximum(idx, 0)], 1.0)
        upper = np.where(np.isnan(upper), 1.0, upper)
        positive = bound > 0
        t_star = float(t[positive].max()) if positive.any() else math.nan
        row = per[(per["event"] == "hull") & (per["beta"] == beta)].iloc[0]
        log_half = float(theory.exit_time_bound(beta, prob=0.5, **kw))
        log_mean = float(theory.exit_time_bound(beta, **kw))
        rows.append({
            "beta": beta, "bound_at_t2": float(bound[0]) if bound.size else math.nan,
            "t_star": t_star, "first_escape": int(g.loc[~g["censored"], "steps"].min()),
            "violation": float((bound - upper).max()) if bound.size else -math.inf,
            "bound_t_half": math.exp(log_half), "median": float(row["sample_median"]),
            "median_ratio": float(row["sample_median"]) / math.exp(log_half),
            "bound_mean": math.exp(log_mean), "mean": float(row["mean"]),
            "mean_ratio": float(row["mean"]) / math.exp(log_mean),
        })
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- entry point


def run(config: dict, out: Path) -> None:
    """Compute every table of the study into ``out`` (see the module docstring).

    Parameters
    ----------
    config : dict
        The keys of ``config.toml``.
    out : Path
        Receives chains.parquet, per_beta.csv, exponent.csv, local_slopes.csv, bound.csv and
        merge.csv, each with a JSON sidecar (configuration, seeds, setup, provenance).
    """
    state = setup(config)
    tic = time.perf_counter()
    chains, costs, stop = climb(config, state)
    analyse(chains, costs, {"stop": stop, "climb_seconds": time.perf_counter() - tic}, state,
            config, Path(out))


def analyse(chains, costs, extra: dict, state: dict, config: dict, out: Path) -> None:
    """Statistics of the ladder's exit times, written as tables with provenance sidecars."""
    facts = state["facts"]
    per = per_beta_table(chains, config)
    per = per.merge(costs.drop(columns=["chains", "escapes"]), on=["event", "beta"])
    wide = chains.pivot_table(index=["beta", "chain"], columns="event", values="steps")
    order_violations = int((wide["ball"] > wide["hull"]).sum())
    meta = {"study": "metastability", "config": config, "seeds": {
        "chains": config["seed"], "configuration": config["config_seed"],
        "statistics": config["stats_seed"]}, "setup": facts, **extra,
        "ball_after_hull_chains": order_violations, "provenance": provenance()}
    write_table(chains, out / "chains.parquet", meta)
    write_table(per, out / "per_beta.csv", meta)
    write_table(exponent_fits(chains, facts, config), out / "exponent.csv", meta)
    write_table(local_slopes(per), out / "local_slopes.csv", meta)
    write_table(bound_check(chains, per, facts), out / "bound.csv", meta)
    # look before most chains have left their balls: at half the median exit time at most
    ball = per[per["event"] == "ball"]
    steps = {float(b): max(1, min(int(config["merge_steps"]), int(m // 2)))
             for b, m in zip(ball["beta"], ball["sample_median"])}
    merged = merge_points(state, steps, chains=int(config["merge_chains"]),
                          seed=int(config["seed"]))
    write_table(merged, out / "merge.csv", meta)
