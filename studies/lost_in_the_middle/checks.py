"""Checks of the lost-in-the-middle study (Duerinckx, Geshkovski, Rossi), from its tables only.

Claims: (a) the package's RK4 with the paper's options follows the authors' particle run within
the declared tolerance (the wrong prediction: plain causal (USA), Z = n and j <= i); (b) the
formula t_crit(β) is where the slope of the truncated profile S_t at s = 1 changes sign (the
wrong prediction: 2 Σ ω a / Σ ω a², without the factor 1 − e^{−λ}); (c) S_t has a unique
interior minimum (U shape) exactly when t < t_crit (the wrong prediction: a threshold 20 % late).
Controls: the package's run at dt/2 agrees with it within the tolerance; token 0 does not move.
Context: t_crit at each β, the position of each profile's minimum.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from metastab.results import read_table
from metastab.studies.verdict import check, checks_frame, powered

from .config import Config

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

    def particles(source: str) -> dict:
        d = deviation(out, source)
        return check(
            "particles",
            "claim",
            "SphereFlow(rk4, causal, strict_causal, unnormalized, positional_norm, alibi=λ) "
            "follows the authors' particle run from the same initial angles",
            measured=d,
            threshold=tol,
            rule=f"{where}, against the script's RK4 in the angle; pass if <= threshold",
            passed=d <= tol,
            source=SOURCE,
        )

    rows = powered(
        particles,
        "package",
        "usa" if config.power.usa else "package",
        "plain causal (USA): Z = n, j <= i (off by βn/j per token)",
    )
    half = deviation(out, "package_half", "package")
    rows.append(
        check(
            "package_converged",
            "control",
            "the package's own discretisation error is below the tolerance",
            measured=half,
            threshold=tol,
            rule="largest |Δθ| between the package at dt and at dt/2; pass if <= threshold",
            passed=half <= tol,
            source="this study",
        )
    )
    frame = read_table(out / "trajectories.csv")[0]
    zero = frame[(frame["source"] == "package") & (frame["token"] == 0)]["theta"].to_numpy()
    moved = float(np.abs(zero - zero[0]).max())
    rows.append(
        check(
            "token_zero_fixed",
            "control",
            "token 0 attends to none under the strict mask and stays put (the script's θ̇_0 = 0)",
            measured=moved,
            threshold=1e-12,
            rule="largest |θ_0(t) − θ_0(0)| of the package's run; pass if <= threshold",
            passed=moved <= 1e-12,
            source=SOURCE,
        )
    )
    table = read_table(out / "thresholds.csv")[0]
    rtol = float(prof.root_tolerance)
    scale = -float(np.expm1(-prof.alibi))

    def threshold(lead: float) -> dict:
        # the prediction 2 · lead · Σ ω a / Σ ω a²: the formula's lead is 1 − e^{−λ}
        predicted = table["t_crit"] * (lead / scale)
        err = float((table["t_root"] / predicted - 1).abs().max())
        return check(
            "t_crit",
            "claim",
            "t_crit(β) = 2(1 − e^{−λ}) Σ ω_n a_n / Σ ω_n a_n² is where the slope of S_t at s = 1 "
            "changes sign",
            measured=err,
            threshold=rtol,
            rule=f"λ = {prof.alibi:g}, M = {prof.width:g}, n_max = {prof.modes}, β in "
            f"{min(table['beta']):g}–{max(table['beta']):g}: largest |t_root / t_crit − 1|, "
            f"t_root the root of (S_t(1) − S_t(1 − {prof.slope_step:g})) / "
            f"{prof.slope_step:g}; pass if <= threshold",
            passed=err <= rtol,
            source=SOURCE,
        )

    rows += powered(
        threshold,
        scale,
        float(config.power.limit_factor),
        "2 Σ ω_n a_n / Σ ω_n a_n² (the factor 1 − e^{−λ} dropped)",
    )
    shapes = shape(out)
    tc = float(table.loc[np.isclose(table["beta"], prof.beta_profile), "t_crit"].iloc[0])

    def u_shape(late: float) -> dict:
        predicted = shapes["time"] < late * tc
        u = (shapes["local_minima"] == 1) & shapes["interior"]
        wrong = int((predicted != u).sum())
        return check(
            "u_shape",
            "claim",
            "the profile is U-shaped (primacy, recency, a unique interior minimum) exactly "
            "when t < t_crit",
            measured=float(wrong),
            threshold=0.0,
            rule=f"β = {prof.beta_profile:g}, t_crit = {tc:.6g}, times "
            + ", ".join(f"{t:.4g}" for t in shapes["time"])
            + f"; s on the script's grid of {prof.grid} and s = 1: times where 'one strict local "
            "minimum and both ends higher' differs from 't < t_crit'; pass if 0",
            passed=wrong == 0,
            source=SOURCE,
        )

    rows += powered(u_shape, 1.0, float(config.power.late), "a threshold 20 % late, 1.2 t_crit")
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
    return checks_frame(rows)
