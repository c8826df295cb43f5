"""Checks of the lost-in-the-middle study (Duerinckx, Geshkovski, Rossi), from its tables only.

Claims: (a) the package's RK4 with the paper's options follows the authors' particle run within
the declared tolerance (the wrong prediction: plain causal (USA), Z = n and j <= i); (b) the
formula t_crit(β) is where the slope of the truncated profile S_t at s = 1 changes sign (the
wrong prediction: 2 Σ ω a / Σ ω a², without the factor 1 − e^{−λ}); (c) S_t has a unique
interior minimum (U shape) exactly when t < t_crit (the wrong prediction: a threshold 20 % late);
(d) the particle system's N·(correlation) profile, extrapolated in 1/N, is S_t(s) below and above
t_crit, has an interior minimum exactly when t < t_crit, where the closed form has it (the wrong
prediction of each: the closed form without the ALiBi factor, λ = 0).
Controls: the package's run at dt/2 agrees with it within the tolerance; token 0 does not move;
the simulated profile at dt/2 agrees with it at dt.
Context: t_crit at each β, the position of each profile's minimum, the simulated profile's ratio
to S_t, the 1/N fit's χ², the time where each N's simulated profile loses its recency.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from metastab.results import read_table
from metastab.studies.compare import PASS_IF, PASS_IF_EQUAL, Bound, declare
from metastab.studies.verdict import check, checks_frame

from .config import Config, Profile
from .run import profile as closed_profile

SOURCE = "Duerinckx, Geshkovski, Rossi arXiv 2605.09213 and their scripts"


def deviation(out: Path, source: str, against: str = "script") -> float:
    """Largest |θ_source − θ_against| over snapshots and tokens, wrapped to (−π, π]."""
    frame = read_table(Path(out) / "trajectories.csv")[0]
    a = frame[frame["source"] == source]["theta"].to_numpy()
    b = frame[frame["source"] == against]["theta"].to_numpy()
    return float(np.abs(np.angle(np.exp(1j * (a - b)))).max())


def shape(out: Path) -> pd.DataFrame:
    """Per profile time: the number of strict interior local minima of S_t on the grid, whether
    the global minimum is interior (both ends higher) and where it lies."""
    frame = read_table(Path(out) / "profiles.csv")[0]
    rows = []
    for (t, label), g in frame.groupby(["time", "label"], sort=True):
        v, s = g["value"].to_numpy(), g["s"].to_numpy()
        local = int(((v[1:-1] < v[:-2]) & (v[1:-1] < v[2:])).sum())
        i = int(np.argmin(v))
        rows.append(
            {"time": t, "label": label, "local_minima": local, "interior": 0 < i < len(v) - 1,
             "argmin": float(s[i]), "depth": float(min(v[0], v[-1]) - v[i])}
        )  # fmt: skip
    return pd.DataFrame(rows)


def checks(out: Path, config: Config) -> pd.DataFrame:
    """The checks table of the study (columns of :mod:`metastab.studies.verdict`)."""
    out = Path(out)
    p, prof = config.particles, config.profile
    tol = float(p.tolerance)
    where = (
        f"n = {p.tokens}, β = {p.beta:g}, λ = {p.alibi:g}, dt = {p.dt:g}, t <= {p.horizon:g}, "
        f"seed {config.seed}: largest |Δθ| (wrapped) over the snapshots every {p.every:g} "
        "and the tokens"
    )

    def particles(source: str) -> Bound:
        return Bound(
            f"{where}, against the script's RK4 in the angle",
            deviation(out, source),
            "<=",
            tol,
            than="threshold",
            template=PASS_IF,
        )

    rows = declare(
        particles,
        "package",
        "usa" if config.power.usa else "package",
        "plain causal (USA): Z = n, j <= i (off by βn/j per token)",
        criterion="particles",
        role="claim",
        statement="SphereFlow(rk4, causal, strict_causal, unnormalized, positional_norm, alibi=λ) "
        "follows the authors' particle run from the same initial angles",
        source=SOURCE,
    )
    rows.append(
        Bound(
            "largest |Δθ| between the package at dt and at dt/2",
            deviation(out, "package_half", "package"),
            "<=",
            tol,
            than="threshold",
            template=PASS_IF,
        ).row(
            "package_converged",
            "control",
            "the package's own discretisation error is below the tolerance",
            source="this study",
        )
    )
    frame = read_table(out / "trajectories.csv")[0]
    zero = frame[(frame["source"] == "package") & (frame["token"] == 0)]["theta"].to_numpy()
    moved = float(np.abs(zero - zero[0]).max())
    rows.append(
        Bound(
            "largest |θ_0(t) − θ_0(0)| of the package's run",
            moved,
            "<=",
            1e-12,
            than="threshold",
            template=PASS_IF,
        ).row(
            "token_zero_fixed",
            "control",
            "token 0 attends to none under the strict mask and stays put (the script's θ̇_0 = 0)",
            source=SOURCE,
        )
    )
    table = read_table(out / "thresholds.csv")[0]
    rtol = float(prof.root_tolerance)
    scale = -float(np.expm1(-prof.alibi))

    def threshold(lead: float) -> Bound:
        # the prediction 2 · lead · Σ ω a / Σ ω a²: the formula's lead is 1 − e^{−λ}
        predicted = table["t_crit"] * (lead / scale)
        return Bound(
            f"λ = {prof.alibi:g}, M = {prof.width:g}, n_max = {prof.modes}, β in "
            f"{min(table['beta']):g}–{max(table['beta']):g}: largest |t_root / t_crit − 1|, "
            f"t_root the root of (S_t(1) − S_t(1 − {prof.slope_step:g})) / {prof.slope_step:g}",
            float((table["t_root"] / predicted - 1).abs().max()),
            "<=",
            rtol,
            than="threshold",
            template=PASS_IF,
        )

    rows += declare(
        threshold,
        scale,
        float(config.power.limit_factor),
        "2 Σ ω_n a_n / Σ ω_n a_n² (the factor 1 − e^{−λ} dropped)",
        criterion="t_crit",
        role="claim",
        statement="t_crit(β) = 2(1 − e^{−λ}) Σ ω_n a_n / Σ ω_n a_n² is where the slope of S_t at "
        "s = 1 changes sign",
        source=SOURCE,
    )
    shapes = shape(out)
    tc = float(table.loc[np.isclose(table["beta"], prof.beta_profile), "t_crit"].iloc[0])

    def u_shape(late: float) -> Bound:
        predicted = shapes["time"] < late * tc
        u = (shapes["local_minima"] == 1) & shapes["interior"]
        return Bound(
            f"β = {prof.beta_profile:g}, t_crit = {tc:.6g}, times "
            + ", ".join(f"{t:.4g}" for t in shapes["time"])
            + f"; s on the script's grid of {prof.grid} and s = 1: times where 'one strict local "
            "minimum and both ends higher' differs from 't < t_crit'",
            float((predicted != u).sum()),
            "=",
            0.0,
            template=PASS_IF_EQUAL,
        )

    rows += declare(
        u_shape,
        1.0,
        float(config.power.late),
        "a threshold 20 % late, 1.2 t_crit",
        criterion="u_shape",
        role="claim",
        statement="the profile is U-shaped (primacy, recency, a unique interior minimum) exactly "
        "when t < t_crit",
        source=SOURCE,
    )
    for r in table.itertuples():
        rows.append(
            check(
                f"t_crit_beta_{r.beta:g}",
                "context",
                f"t_crit at β = {r.beta:g}",
                measured=r.t_crit,
                threshold=r.t_root,
                rule="the formula's value; threshold column: the slope's root",
                source=SOURCE,
            )
        )
    for r in shapes.itertuples():
        rows.append(
            check(
                f"minimum_t_{r.time:.4g}",
                "context",
                f"where S_t is smallest at t = {r.time:.4g} ({r.label})",
                measured=r.argmin,
                threshold=r.depth,
                rule=f"argmin over s; {r.local_minima} strict local minima; threshold column: "
                "the smaller end's height above the minimum",
                source=SOURCE,
            )
        )
    rows += simulation_checks(out, config, tc)
    return checks_frame(rows)


# --- (d): the profile from the particle system -------------------------------------------------


def closed(frame: pd.DataFrame, prof: Profile, lam: float) -> np.ndarray:
    """S_t(s) at each row's (time, s), at λ = ``lam``."""
    beta = float(prof.beta_profile)
    return np.array(
        [closed_profile(s, beta, t, lam, prof.width, prof.modes)
         for t, s in zip(frame["time"], frame["s"])]
    )  # fmt: skip


def extrapolation(out: Path, config: Config) -> pd.DataFrame:
    """Per time and s: the weighted least-squares fit Ŝ_N = A + B/N over the N of
    ``simulation.extrapolate`` (weights 1/se²), A's standard error, the fit's χ², and the largest
    N's mean."""
    table = read_table(Path(out) / "simulation.csv")[0]
    use = table[table["tokens"].isin(config.simulation.extrapolate)]
    rows = []
    for (t, s), g in use.groupby(["time", "s"], sort=True):
        x = np.column_stack([np.ones(len(g)), 1.0 / g["tokens"].to_numpy(float)])
        w = 1.0 / g["se"].to_numpy() ** 2
        y = g["mean"].to_numpy()
        cov = np.linalg.inv(x.T @ (w[:, None] * x))
        a, b = cov @ (x.T @ (w * y))
        chi2 = float((w * (y - a - b / g["tokens"].to_numpy(float)) ** 2).sum())
        top = g.loc[g["tokens"].idxmax()]
        rows.append(
            {"time": t, "s": s, "A": a, "se_A": math.sqrt(cov[0, 0]), "B": b, "chi2": chi2,
             "largest": top["mean"], "se_largest": top["se"]}
        )  # fmt: skip
    return pd.DataFrame(rows)


def shapes_simulated(out: Path, config: Config) -> pd.DataFrame:
    """At the largest N, per time: the interior minimum of the mean profile, how far each end
    lies above it in standard errors of the per-base differences, and the argmin's bootstrap 95 %
    interval over the bases (fixed seed)."""
    sim = config.simulation
    frame = read_table(Path(out) / "simulation_bases.csv")[0]
    rng = np.random.default_rng(int(sim.bootstrap_seed))
    rows = []
    for t, g in frame.groupby("time", sort=True):
        wide = g.pivot(index="base", columns="s", values="value")
        v, s = wide.to_numpy(), wide.columns.to_numpy(float)
        mean = v.mean(0)
        i = 1 + int(np.argmin(mean[1:-1]))
        z = []
        for end in (0, len(s) - 1):
            d = v[:, end] - v[:, i]
            z.append(float(d.mean() / (d.std(ddof=1) / math.sqrt(len(d)))))
        picks = rng.integers(0, len(v), size=(int(sim.bootstrap), len(v)))
        boot = s[np.argmin(v[picks].mean(axis=1), axis=1)]
        rows.append(
            {"time": t, "argmin": float(s[int(np.argmin(mean))]), "interior": float(s[i]),
             "z_first": z[0], "z_last": z[1], "low": float(np.quantile(boot, 0.025)),
             "high": float(np.quantile(boot, 0.975)), "bases": len(v)}
        )  # fmt: skip
    return pd.DataFrame(rows)


def closed_shape(s: np.ndarray, t: float, prof: Profile, lam: float) -> tuple[bool, float]:
    """Whether the closed form at λ = ``lam`` on the source grid has an interior minimum below
    both ends, and its argmin there."""
    beta = float(prof.beta_profile)
    v = np.array([closed_profile(x, beta, t, lam, prof.width, prof.modes) for x in s])
    i = int(np.argmin(v))
    return bool(0 < i < len(v) - 1), float(s[i])


def simulation_checks(out: Path, config: Config, tc: float) -> list[dict]:
    """The rows of (d), from simulation.csv, simulation_bases.csv and step_control.csv."""
    sim, prof = config.simulation, config.profile
    lam, wrong = float(prof.alibi), float(config.power.profile_alibi)
    ext = extrapolation(out, config)
    ns = ", ".join(str(n) for n in sim.extrapolate)
    where = (
        f"β = {prof.beta_profile:g}, λ = {lam:g}, M = {prof.width:g}, n_max = {prof.modes}; "
        f"s = k/{sim.grid}, k in {list(sim.sources)}; A ± SE(A) the weighted fit Ŝ_N = A + B/N "
        f"over N = {ns}"
    )
    source = SOURCE + "; the estimator: this study"
    rows = []

    def profile_check(name: str, times: list[float], side: str) -> list[dict]:
        sel = ext[ext["time"].isin(times)]

        def make(alibi: float) -> Bound:
            z = np.abs(sel["A"].to_numpy() - closed(sel, prof, alibi)) / sel["se_A"].to_numpy()
            return Bound(
                f"{where}; t in {', '.join(f'{t:g}' for t in times)} (t_crit = {tc:.4g}): "
                "largest |A − S_t(s)| / SE(A)",
                float(z.max()),
                "<=",
                float(sim.z),
                than="threshold",
                template=PASS_IF,
            )

        return declare(
            make,
            lam,
            wrong,
            f"the closed form without the ALiBi factor (λ = {wrong:g}: coefficient 1, "
            "Y = log(1/s))",
            criterion=name,
            role="claim",
            statement=f"N·corr(θ_last(t), θ_s(0)) of the particle system tends to the closed form "
            f"S_t(s) as N → ∞, {side} t_crit",
            source=source,
        )

    rows += profile_check("simulated_profile", list(sim.below), "below")
    rows += profile_check("simulated_profile_above", list(sim.above), "above")
    shapes = shapes_simulated(out, config)
    shapes = shapes[shapes["time"].isin(sim.shape_times)]
    grid = np.asarray(sim.sources, dtype=float) / sim.grid
    big = max(sim.tokens)
    zs = float(sim.shape_z)
    present = ((shapes["z_first"] > zs) & (shapes["z_last"] > zs)).to_numpy()

    def u_check(alibi: float) -> Bound:
        if alibi == lam:
            predicted = (shapes["time"] < tc).to_numpy()
        else:
            predicted = np.array([closed_shape(grid, t, prof, alibi)[0] for t in shapes["time"]])
        return Bound(
            f"N = {big}, {int(shapes['bases'].iloc[0])} bases, t in "
            + ", ".join(f"{t:g}" for t in shapes["time"])
            + f" (t_crit = {tc:.4g}), s = k/{sim.grid}: 'both ends above the smallest interior "
            f"mean by more than {zs:g} standard errors of the per-base differences' against the "
            "prediction",
            float((predicted != present).sum()),
            "=",
            0.0,
            template="{what}; pass if no time differs",
        )

    rows += declare(
        u_check,
        lam,
        wrong,
        f"the closed form at λ = {wrong:g} on the same grid (no recency: its minimum at the "
        "right end)",
        criterion="simulated_u_shape",
        role="claim",
        statement="the particle system's profile has an interior minimum (primacy and recency) "
        "exactly when t < t_crit",
        source=source,
    )
    early = shapes[shapes["time"] < tc]

    def place(alibi: float) -> Bound:
        at = np.array([closed_shape(grid, t, prof, alibi)[1] for t in early["time"]])
        outside = int(((at < early["low"].to_numpy()) | (at > early["high"].to_numpy())).sum())
        return Bound(
            f"N = {big}, t in {', '.join(f'{t:g}' for t in early['time'])}: the closed "
            f"form's argmin over s = k/{sim.grid} against the 95 % interval of the simulated "
            f"argmin ({sim.bootstrap} bootstrap resamples of the bases, seed "
            f"{sim.bootstrap_seed})",
            float(outside),
            "=",
            0.0,
            template="{what}; pass if no time falls outside",
        )

    rows += declare(
        place,
        lam,
        wrong,
        f"the argmin of the closed form at λ = {wrong:g}",
        criterion="minimum_place",
        role="claim",
        statement="the particle system's profile is smallest where the closed form S_t is "
        "(t < t_crit)",
        source=source,
    )
    step = read_table(Path(out) / "step_control.csv")[0]
    diff = float((step["dt"] - step["half"]).abs().max())
    rows.append(
        Bound(
            f"N = {int(step['tokens'].iloc[0])}, {step['base'].nunique()} bases: largest "
            f"|Ŝ(dt) − Ŝ(dt/2)|, dt = {sim.dt:g}",
            diff,
            "<=",
            float(sim.step_tolerance),
            than="threshold",
            template=PASS_IF,
        ).row(
            "step_control",
            "control",
            "the simulated profile does not depend on the RK4 step",
            source="this study",
        )
    )
    table = read_table(Path(out) / "simulation.csv")[0]
    table = table.assign(closed=closed(table, prof, lam))
    for (n, t), g in table.groupby(["tokens", "time"], sort=True):
        r = (g["mean"] / g["closed"]).to_numpy()
        rows.append(
            check(
                f"ratio_N{n}_t{t:g}",
                "context",
                f"the simulated profile over S_t at N = {n}, t = {t:g}",
                measured=float(r.mean()),
                low=float(r.min()),
                high=float(r.max()),
                rule=f"mean of Ŝ_N(s) / S_t(s) over s = k/{sim.grid} (low, high: smallest, "
                "largest); largest standard error "
                f"{float((g['se'] / g['closed']).max()):.2g} of S_t",
                source=source,
            )
        )
    ext = ext.assign(closed=closed(ext, prof, lam))
    for t, g in ext.groupby("time", sort=True):
        r = (g["A"] / g["closed"]).to_numpy()
        rows.append(
            check(
                f"extrapolated_t{t:g}",
                "context",
                f"the 1/N extrapolation A over S_t at t = {t:g}",
                measured=float(r.mean()),
                low=float(r.min()),
                high=float(r.max()),
                threshold=float(g["chi2"].sum()),
                rule=f"mean of A(s)/S_t(s) over s (low, high: smallest, largest); threshold "
                f"column: the fits' χ² summed over s ({len(g)} fits, "
                f"{len(g) * (len(sim.extrapolate) - 2)} degrees of freedom)",
                source=source,
            )
        )
    for n, lost in recency(table).items():
        rows.append(
            check(
                f"recency_lost_N{n}",
                "context",
                f"when the simulated profile at N = {n} loses its recency",
                measured=lost[0],
                low=lost[1],
                high=lost[2],
                threshold=tc,
                rule="the right end's height above the smallest interior mean, interpolated "
                "linearly to 0 between the recorded times (low, high) where it changes sign "
                "(NaN if it does not); threshold column: t_crit",
                source=source,
            )
        )
    return rows


def recency(table: pd.DataFrame) -> dict[int, tuple[float, float, float]]:
    """Per N: the time where the right end's height above the smallest interior mean first
    crosses 0 (linear interpolation) and the recorded times around it."""
    out = {}
    for n, g in table.groupby("tokens", sort=True):
        times, rise = [], []
        for t, h in g.groupby("time", sort=True):
            v = h.sort_values("s")["mean"].to_numpy()
            times.append(float(t))
            rise.append(float(v[-1] - v[1:-1].min()))
        found = (math.nan, math.nan, math.nan)
        for i in range(1, len(times)):
            if rise[i - 1] > 0 >= rise[i]:
                t0, t1 = times[i - 1], times[i]
                found = (t0 + (t1 - t0) * rise[i - 1] / (rise[i - 1] - rise[i]), t0, t1)
                break
        out[int(n)] = found
    return out
