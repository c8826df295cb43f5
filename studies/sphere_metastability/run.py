"""Metastability of the chain on the sphere (docs: models#sphere-statements (7)): escape times of
``SphereChain`` (V = I) from clustered configurations against β.

Setup (``config.toml``): κ = d + 1 clusters at the points u_a of the regular simplex on S^{d−1}
(d = 2: the equilateral triangle of the R^d study), ``per_point`` tokens on every point, step γ.
Every pick of a token of the own point is an exact no-op, so the configuration is frozen until
the first step in which some token picks a token of another point; that step is geometric with
p = 1 − Π_a q_a^{m_a} (:func:`metastab.theory.sphere_frozen_law`), and log E[T] approaches
βΔ − log N with Δ = 1 − cos θ_min (:func:`metastab.theory.frozen_asymptote`). Two escape times
per chain, both :class:`metastab.LeaveBall` around each token's starting point, with common random
numbers (the same seed gives the same path, so T_jump <= T_cap path by path):

- ``jump``: radius ``jump_fraction`` × the smallest chord a single pick moves a token
  (:func:`metastab.theory.sphere_jumps`): T_jump is the first moving pick, with the exact law;
- ``cap``: radius ε = ``cap_over_gamma_diameter`` × γ d(K), the R^d study's ε. One pick moves a
  token by less than that, and on the sphere the moved token is a cluster of its own (its
  self-score 1 is the largest), so leaving the cap takes further picks: a true escape, with no
  exact law.

Two engines run the same chain: ``direct`` (``mode="exact"``, every step) at the small β of
``direct_jump_betas`` and ``direct_cap_betas``, and ``accelerated`` (``mode="accelerated"``: the
waiting time of every frozen stretch drawn from its geometric law) on the β grid to
E[T_jump] >= ``target_mean``; the two have independent seeds and every β its own streams
(:func:`~metastab.studies.measurement.streams`). The law of T_jump is tested at every β by a
KS test of the randomised probability integral transform
(:func:`~metastab.studies.measurement.pit`, exact for a discrete law); the negative control is
the same sample against the law of a chain whose tokens never pick themselves. The streams and
the escape-rate helpers are those of the R^d study (:mod:`metastab.studies.measurement`), whose
committed tables (``rd_study``) are copied into ``rd.csv`` for the comparison.

Everything is a pure function of the configuration and its seeds; only wall times vary.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import logsumexp
from scipy.stats import kstest

from metastab import stats, theory
from metastab.events import LeaveBall
from metastab.models.sphere import SphereChain
from metastab.results import provenance, read_table, write_table
from metastab.setups.polytopes import simplex
from metastab.studies import measurement
from metastab.studies.measurement import logrank_p, pit, poisson_limit_intervals, quiet

from .config import Config

EVENTS = ("jump", "cap")
ENGINES = ("direct", "accelerated")
ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- setup


def setup(config: Config) -> dict:
    """Points, initial configuration, events and the exact law's quantities."""
    K = simplex(int(config.simplex_dim))
    points, m = K.vertices, int(config.per_point)
    gamma = float(config.gamma)
    x0 = np.repeat(points, m, axis=0)
    groups = np.repeat(np.arange(len(points)), m)
    jumps = theory.sphere_jumps(points, gamma)
    moving = jumps[jumps > 0]
    eps_jump = float(config.jump_fraction) * float(moving.min())
    eps_cap = float(config.cap_over_gamma_diameter) * gamma * K.diameter
    if not (0 < eps_jump < moving.min() <= moving.max() < eps_cap):
        raise ValueError(
            f"the jump radius {eps_jump:g} must lie below every single-pick move "
            f"({moving.min():g}…{moving.max():g}) and those below the cap radius {eps_cap:g}"
        )
    mult = np.full(len(points), m)
    asym = theory.frozen_asymptote(points, mult, gamma=gamma)
    centers = points[groups]
    events = {
        "jump": LeaveBall(eps_jump, centers=centers),
        "cap": LeaveBall(eps_cap, centers=centers),
    }
    facts = {
        "points": points.tolist(),
        "kappa": len(points),
        "per_point": m,
        "n": int(len(x0)),
        "d": int(points.shape[1]),
        "gamma": gamma,
        "diameter": K.diameter,
        "cos_min": float(1 - asym.exponent),
        "delta": asym.exponent,
        "log_prefactor": asym.log_prefactor,
        "jump_chord_min": float(moving.min()),
        "jump_chord_max": float(moving.max()),
        "eps_jump": eps_jump,
        "eps_cap": eps_cap,
    }
    return {"points": points, "mult": mult, "x0": x0, "events": events, "facts": facts}


def exact_law(state: dict, beta: float) -> theory.FrozenLaw:
    """The law of T_jump at ``beta``."""
    return theory.sphere_frozen_law(state["points"], state["mult"], beta, state["facts"]["gamma"])


def no_self_log_stay(state: dict, beta: float) -> float:
    """log(1 − p) of the negative control: tokens that never pick themselves.

    A token at u_a then stays with probability (m_a − 1) e^{β} / ((m_a − 1) e^{β} +
    Σ_{b≠a} m_b e^{β<u_a, u_b>}): the law a reader gets by dropping the self-pick (which the
    chain keeps, docs: models#models-rd). With m_a = 3 every r_a is 3/2 times the true one.
    """
    U, m = state["points"], state["mult"].astype(np.float64)
    S = U @ U.T
    off = np.log(m)[None, :] + beta * (S - np.diag(S)[:, None])
    np.fill_diagonal(off, -np.inf)
    log_r = logsumexp(off, axis=1) - np.log(m - 1)
    return float(-(m * np.logaddexp(0.0, log_r)).sum())


# --------------------------------------------------------------------------- runs


def run_point(model, x0, event, *, chains: int, max_steps, seed: int, **options):
    """The R^d study's run point (streams(seed, β), float64 step counts), with the wall seconds
    and the events drawn as its cost."""
    frame, cost = measurement.run_point(
        model, x0, event, chains=chains, max_steps=max_steps, seed=seed, **options
    )
    return frame, {"wall_s": cost["wall_s"], "jumps": cost["jumps"]}


def accelerated_betas(config: Config) -> np.ndarray:
    """The β grid of the accelerated engine: start, start + step, ... <= stop."""
    start, stop = float(config.accelerated_beta_start), float(config.accelerated_beta_stop)
    step = float(config.accelerated_beta_step)
    return start + step * np.arange(int(math.floor((stop - start) / step + 1e-9)) + 1)


def run_engines(config: Config, state: dict, log=print) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Both engines, both events (module docstring).

    Returns
    -------
    chains : DataFrame
        One row per chain, event, engine and β: chain, steps, censored, max_steps, beta, event,
        engine.
    costs : DataFrame
        Per (engine, event, β): chains, wall_s, jumps (events the accelerated engine drew).
    stop : dict
        Why and where the accelerated grid stopped.
    """
    x0, gamma = state["x0"], state["facts"]["gamma"]
    plan = [
        (
            "direct",
            sorted({float(b) for b in config.direct_jump_betas + config.direct_cap_betas}),
            {"jump": int(config.direct_jump_chains), "cap": int(config.direct_cap_chains)},
            int(config.direct_max_steps),
            int(config.seed),
            {},
        ),
        (
            "accelerated",
            [float(b) for b in accelerated_betas(config)],
            {
                "jump": int(config.accelerated_jump_chains),
                "cap": int(config.accelerated_cap_chains),
            },
            float(config.accelerated_max_steps),
            int(config.accelerated_seed),
            {"mode": "accelerated", "merge_tol": float(config.merge_tol)},
        ),
    ]
    direct_betas = {"jump": config.direct_jump_betas, "cap": config.direct_cap_betas}
    frames, costs = [], []
    stop = {"reason": "accelerated_beta_stop reached", "beta": None}
    for engine, betas, chains, budget, seed, options in plan:
        for beta in betas:
            model = SphereChain(beta=beta, gamma=gamma)
            for name in EVENTS:
                if engine == "direct" and beta not in direct_betas[name]:
                    continue
                frame, cost = run_point(
                    model,
                    x0,
                    state["events"][name],
                    chains=chains[name],
                    max_steps=budget,
                    seed=seed,
                    **options,
                )
                frames.append(frame.assign(event=name, engine=engine))
                escapes = int((~frame["censored"]).sum())
                costs.append(
                    {"engine": engine, "event": name, "beta": beta, "chains": chains[name], **cost}
                )
                log(
                    f"  {engine} beta={beta:g} {name}: {escapes}/{chains[name]} escaped, mean "
                    f"{frame['steps'].sum() / max(escapes, 1):.3g} steps, {cost['wall_s']:.2f} s"
                )
    return pd.concat(frames, ignore_index=True), pd.DataFrame(costs), stop


def merge_tol_effect(config: Config, state: dict, log=print) -> pd.DataFrame:
    """T_cap at ``merge_tol_beta`` with the accelerated engine at every ``merge_tols`` and the
    study's ``merge_tol``: the one approximation of the engine (tokens this close to a point are
    merged onto it) must not move the escape from the cap, which runs through relaxations.

    Same streams at every tolerance (root ``accelerated_seed + 1``). Per tolerance: escapes, the
    mean with its exact (Garwood) 95 % interval, events drawn per escape, wall seconds, and the
    log-rank p of the sample against the one at the study's ``merge_tol``.
    """
    beta = float(config.merge_tol_beta)
    model = SphereChain(beta=beta, gamma=state["facts"]["gamma"])
    tols = sorted({float(t) for t in config.merge_tols} | {float(config.merge_tol)})
    samples, rows = {}, []
    for tol in tols:
        frame, cost = run_point(
            model,
            state["x0"],
            state["events"]["cap"],
            chains=int(config.accelerated_cap_chains),
            max_steps=float(config.accelerated_max_steps),
            seed=int(config.accelerated_seed) + 1,
            mode="accelerated",
            merge_tol=tol,
        )
        samples[tol] = frame
        escaped = int((~frame["censored"]).sum())
        exposure = float(frame["steps"].sum())
        low, high = stats.garwood_interval(escaped, exposure)
        rows.append(
            {
                "beta": beta,
                "merge_tol": tol,
                "chains": len(frame),
                "escapes": escaped,
                "mean": exposure / escaped,
                "mean_low": 1 / high,
                "mean_high": 1 / low,
                "jumps_per_escape": cost["jumps"] / escaped,
                "wall_s": cost["wall_s"],
            }
        )
        log(f"  merge_tol={tol:g} at beta={beta:g}: mean T_cap {exposure / escaped:.3g}")
    ref = samples[float(config.merge_tol)]
    for row in rows:
        row["logrank_p"] = logrank_p(samples[row["merge_tol"]], ref)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- statistics


def select(chains: pd.DataFrame, engine: str, event: str) -> pd.DataFrame:
    """The chains of one engine and one event."""
    return chains[(chains["engine"] == engine) & (chains["event"] == event)]


def law_tests(chains: pd.DataFrame, state: dict, config: Config) -> pd.DataFrame:
    """T_jump against its exact law, per (engine, β).

    Columns: the exact mean 1/p and log E[T] = −log p, the sample mean, the KS p-value of the
    randomised PIT against the exact law (``ks_p``) and against the no-self-pick law
    (``control_p``, the negative control; same uniforms V), and the censored chains (none are
    expected: a censored chain is left out of the PIT, and counted).
    """
    rows = []
    for e, engine in enumerate(ENGINES):
        for j, (beta, g) in enumerate(select(chains, engine, "jump").groupby("beta")):
            law = exact_law(state, float(beta))
            steps = g.loc[~g["censored"], "steps"].to_numpy()
            gen = np.random.default_rng([int(config.stats_seed), e, j])
            v = gen.random(steps.size)  # the same V for the law and the control
            ks = kstest(pit(steps, law.log_stay, v), "uniform")
            rows.append(
                {
                    "engine": engine,
                    "beta": float(beta),
                    "chains": len(g),
                    "censored": int(g["censored"].sum()),
                    "exact_log_mean": -law.log_p,
                    "exact_mean": law.mean,
                    "asymptote_log_mean": float(
                        beta * state["facts"]["delta"] - state["facts"]["log_prefactor"]
                    ),
                    "sample_mean": float(steps.mean()),
                    "ks_D": float(ks.statistic),
                    "ks_p": float(ks.pvalue),
                    "control_p": float(
                        kstest(
                            pit(steps, no_self_log_stay(state, float(beta)), v), "uniform"
                        ).pvalue
                    ),
                }
            )
    return pd.DataFrame(rows)


def per_beta_table(chains: pd.DataFrame, costs: pd.DataFrame, config: Config) -> pd.DataFrame:
    """Per (engine, event, β): escapes, exposure, mean with its exact 95 % interval
    (``stats.fit_report``; Garwood below a rate of 1e-12 per step), the Kaplan–Meier median,
    the coefficient of variation, the exponentiality test of the cap exit, and the cost."""
    rows = []
    for e, engine in enumerate(ENGINES):
        for k, name in enumerate(EVENTS):
            frame = select(chains, engine, name).drop(columns=["engine", "event"])
            if frame.empty:
                continue
            (per, _), _ = quiet(stats.fit_report, frame, memoryless=False)
            per = poisson_limit_intervals(per, float(config.garwood_below_rate))
            per.insert(0, "event", name)
            per.insert(0, "engine", engine)
            memoryless, medians = {}, {}
            for j, (beta, g) in enumerate(frame.groupby("beta")):
                steps, censored = g["steps"].to_numpy(), g["censored"].to_numpy()
                medians[beta] = quiet(stats.survival, steps, censored)[0].median
                if name == "cap":
                    memoryless[beta] = quiet(
                        stats.exponentiality_test,
                        steps,
                        censored,
                        max_steps=g["max_steps"].to_numpy(),
                        n_resamples=int(config.n_resamples),
                        rng=[int(config.stats_seed), 1, k, j, e],
                    )[0].pvalue
            per["sample_median"] = per["beta"].map(medians)
            per["memoryless_p"] = per["beta"].map(memoryless).astype(np.float64)
            per["cv"] = per["beta"].map(
                frame.groupby("beta")["steps"].agg(lambda s: float(s.std(ddof=1) / s.mean()))
            )
            rows.append(per)
    per = pd.concat(rows, ignore_index=True)
    return per.merge(costs.drop(columns=["chains"]), on=["engine", "event", "beta"])


def exponent_fits(chains: pd.DataFrame, config: Config) -> pd.DataFrame:
    """Censored fits log E[T] = a + bβ (and E[T] ≈ A β^k e^{bβ}) of the accelerated engine's
    chains, per event and start β_0 of ``fit_starts`` (β >= β_0, at least three β).

    Each with its profile-likelihood interval (geometric law); the fit from the declared start
    ``fit_from_beta`` also with a nonparametric bootstrap interval (``n_bootstrap`` resamples of
    the chains within each β, seeded by ``stats_seed``, the event and the start; NaN elsewhere).
    The geometric likelihood is exact for T_jump; for T_cap it assumes
    Var T = E[T]², so the checks use the wider of the two intervals.
    """
    rows = []
    for k, name in enumerate(EVENTS):
        frame = select(chains, "accelerated", name).drop(columns=["engine", "event"])
        for j, start in enumerate(float(v) for v in config.fit_starts):
            used = frame[frame["beta"] >= start - 1e-9]
            if used["beta"].nunique() < 3:
                continue
            gen = np.random.default_rng([int(config.stats_seed), 2, k, j])
            groups = [g for _, g in used.groupby("beta")]
            plain, _ = quiet(stats.fit_scaling, used)
            wide, _ = quiet(stats.fit_scaling, used, prefactor=True)
            # the bootstrap (0.06 s a resample) only where the checks read it
            resamples = int(config.n_bootstrap) if start == float(config.fit_from_beta) else 0
            boot = np.full((max(resamples, 1), 3), np.nan)
            for r in range(resamples):
                sample = pd.concat([g.iloc[gen.integers(0, len(g), len(g))] for g in groups])
                fit = quiet(stats.fit_scaling, sample)[0]
                with_k = quiet(stats.fit_scaling, sample, prefactor=True)[0]
                boot[r] = (fit.slope, fit.intercept, with_k.slope)
            low, high = np.quantile(boot, 0.025, axis=0), np.quantile(boot, 0.975, axis=0)
            rows.append(
                {
                    "event": name,
                    "beta_start": start,
                    "beta_max": float(used["beta"].max()),
                    "betas": int(used["beta"].nunique()),
                    "chains": len(used),
                    "b": plain.slope,
                    "b_low": plain.confidence_interval("slope")[0],
                    "b_high": plain.confidence_interval("slope")[1],
                    "b_boot_low": low[0],
                    "b_boot_high": high[0],
                    "a": plain.intercept,
                    "a_low": plain.confidence_interval("intercept")[0],
                    "a_high": plain.confidence_interval("intercept")[1],
                    "a_boot_low": low[1],
                    "a_boot_high": high[1],
                    "deviance": plain.deviance,
                    "df": plain.df,
                    "bk": wide.slope,
                    "bk_low": wide.confidence_interval("slope")[0],
                    "bk_high": wide.confidence_interval("slope")[1],
                    "bk_boot_low": low[2],
                    "bk_boot_high": high[2],
                    "k": wide.prefactor,
                    "k_low": wide.confidence_interval("prefactor")[0],
                    "k_high": wide.confidence_interval("prefactor")[1],
                    "k_lrt_p": wide.lrt_pvalue,
                    "n_bootstrap": resamples,
                }
            )
    return pd.DataFrame(rows)


def crosscheck(per: pd.DataFrame, chains: pd.DataFrame) -> pd.DataFrame:
    """Direct against accelerated stepping at every (event, β) both engines ran: means with
    their exact 95 % intervals, whether these overlap, and the log-rank p of the two samples."""
    rows = []
    cols = ["mean", "mean_low", "mean_high"]
    for name in EVENTS:
        a = per[(per["engine"] == "direct") & (per["event"] == name)].set_index("beta")
        b = per[(per["engine"] == "accelerated") & (per["event"] == name)].set_index("beta")
        for beta in sorted(set(a.index) & set(b.index)):
            d, f = a.loc[beta, cols], b.loc[beta, cols]

            def at(engine, beta=beta, name=name):
                g = select(chains, engine, name)
                return g[np.isclose(g["beta"], beta, rtol=0, atol=1e-9)]

            rows.append(
                {
                    "event": name,
                    "beta": beta,
                    **{f"direct_{c}": float(d[c]) for c in cols},
                    **{f"accelerated_{c}": float(f[c]) for c in cols},
                    "overlap": bool(
                        f["mean_low"] <= d["mean_high"] and d["mean_low"] <= f["mean_high"]
                    ),
                    "logrank_p": logrank_p(at("direct"), at("accelerated")),
                }
            )
    return pd.DataFrame(rows)


def path_order(chains: pd.DataFrame) -> int:
    """Chains (of either engine, at any β) whose T_cap is before their T_jump: with common random
    numbers there are none."""
    wide = chains.pivot_table(index=["engine", "beta", "chain"], columns="event", values="steps")
    return int((wide["cap"] < wide["jump"]).sum())


def rd_tables(config: Config) -> pd.DataFrame:
    """The R^d study's committed exponents and means, one tidy table.

    Rows ``kind = "exponent"``: its fits of the accelerated engine's T2 (``exponent_start.csv``)
    per start β_0, b and (with a β^k prefactor) bk with both intervals, and k; rows
    ``kind = "mean"``: its E[T] per event and β of the accelerated engine (``per_beta.csv``).
    """
    folder = ROOT / "data" / str(config.rd_study)
    starts, _ = read_table(folder / "exponent_start.csv")
    per, _ = read_table(folder / "per_beta.csv")
    keep = ["event", "beta_start", "beta_max", "b", "b_low", "b_high", "b_boot_low", "b_boot_high"]
    keep += ["bk", "bk_low", "bk_high", "bk_boot_low", "bk_boot_high", "k", "c0"]
    fits = starts[keep].assign(kind="exponent")
    fast = per[per["engine"] == "accelerated"]
    means = fast[["event", "beta", "mean", "mean_low", "mean_high"]].assign(kind="mean")
    return pd.concat([fits, means], ignore_index=True)


# --------------------------------------------------------------------------- entry point


def analyse(out: Path, config: Config) -> None:
    """The tests and fits of the simulated escape times, from ``chains.parquet`` and
    ``per_beta.csv``: law.csv, exponent.csv and crosscheck.csv, with the run's provenance."""
    out = Path(out)
    chains, meta = read_table(out / "chains.parquet")
    per = read_table(out / "per_beta.csv")[0]
    write_table(law_tests(chains, setup(config), config), out / "law.csv", meta)
    write_table(exponent_fits(chains, config), out / "exponent.csv", meta)
    write_table(crosscheck(per, chains), out / "crosscheck.csv", meta)


def run(config: Config, out: Path) -> None:
    """Simulate: chains.parquet, per_beta.csv and merge_tol.csv into ``out`` (module
    docstring), and rd.csv, the R^d study's committed exponents as they are at the run, each
    with a JSON sidecar (the tests and fits of the simulation: :func:`analyse`, which the runner
    calls next)."""
    state = setup(config)
    tic = time.perf_counter()
    chains, costs, stop = run_engines(config, state)
    tolerance = merge_tol_effect(config, state)
    seconds = time.perf_counter() - tic
    out = Path(out)
    per = per_beta_table(chains, costs, config)
    meta = {
        "study": "sphere-metastability",
        "config": config.to_dict(),
        "seeds": {
            "direct": config.seed,
            "accelerated": config.accelerated_seed,
            "merge_tol": int(config.accelerated_seed) + 1,
            "statistics": config.stats_seed,
        },
        "setup": state["facts"],
        "accelerated_stop": stop,
        "simulation_seconds": seconds,
        "cap_before_jump_chains": path_order(chains),
        "rd_source": f"data/{config.rd_study}/exponent_start.csv, per_beta.csv",
        "provenance": provenance(),
    }
    write_table(chains, out / "chains.parquet", meta)
    write_table(per, out / "per_beta.csv", meta)
    write_table(rd_tables(config), out / "rd.csv", meta)
    write_table(tolerance, out / "merge_tol.csv", meta)
