"""The report of the hardmax-psd study: its text, from the tables in ``out`` only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy import stats

from metastab.results import read_table
from metastab.studies.verdict import checks_config

from .checks import _line_summary
from .figures import halving_limit


def report(out: Path) -> str:
    """Markdown report: measured straight-line law, ODE and Gaussian claim beside the theorem."""
    out = Path(out)
    lines, meta = read_table(out / "lines.csv")
    floor = float(meta["config"]["lines"]["floor"])
    summary = _line_summary(lines, floor)
    ode = read_table(out / "ode.csv")[0]
    gauss = read_table(out / "gaussian.csv")[0]
    text = [
        "# Hardmax, positive definite: straight lines into the own vertex",
        "",
        "Published ([FW] thm. exp.fast.polytope): if every vertex owns its cell and every "
        "other token lies in exactly one cell, the vertices never move and "
        "x_i^t − v_σ(i) = Π_{τ<t}(1 − γ^τ)(x_i^0 − v_σ(i)).",
        "",
        f"Measured: B = I, tokens = the vertices plus uniform points of K; `rate error` is "
        f"max |ratio/Π − 1| over tokens and steps while Π ≥ {floor:g} (below, roundoff and "
        "the tie tolerance of `Hardmax` dominate); `vector error` is "
        "max |x^t − v − Π(x^0 − v)|/|x^0 − v| "
        "over all steps.",
        "",
        "| polytope | d | schedule | t | measured ratio | Π(1 − γ^τ) | rate error | "
        "vector error | vertices moved |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for _, r in summary.iterrows():
        text.append(
            f"| {r['polytope']} | {r['d']} | {r['schedule']} | {r['t']} | "
            f"{r['measured']:.4e} | {r['predicted']:.4e} | {r['rate_error']:.1e} | "
            f"{r['vector_error']:.1e} | {r['vertex_moved']:.1e} |"
        )
    halving = summary[summary["schedule"].str.startswith("γ^τ = 2")]
    straight = summary["vector_error"].max()
    resolved = summary["vector_error_resolved"].max()
    limit = halving_limit()
    text += [
        "",
        f"With γ^τ = 2^(−τ−1) the tokens stop at {halving['measured'].mean():.6f} of "
        f"their initial distance (Π_τ(1 − 2^(−τ−1)) = {limit:.6f}): "
        + (
            "they never reach their vertex"
            if halving["measured"].min() > 0
            else "some reach their vertex"
        )
        + f". The straight-line identity holds to {straight:.0e} ("
        + ("roundoff" if resolved <= checks_config(out)["roundoff"] else "above `roundoff`")
        + f", {resolved:.0e} while Π ≥ {floor:g}), but the convergence claim "
        '("at least exponential") needs inf_τ γ^τ > 0 (convergence at all needs '
        "Σ_τ γ^τ = ∞). With γ^τ = 1 − e^{−a(τ+1)} the product is e^{−a t(t+1)/2}: "
        "super-exponential, as published (a mathematical remark, given the straight-line "
        "identity measured above). *Explanation, not tested:* below "
        "~1e-12 a token's score ties with its vertex's within the relative tie tolerance of "
        "`Hardmax` (1e-12), the leaders become an average, and the vertices move.",
        "",
    ]
    slope, _, _, _, _ = stats.linregress(np.log(ode["dt"]), np.log(ode["max_error"]))
    text += [
        "## Hardmax ODE",
        "",
        "Published: x_i(t) = e^{−t} x_i^0 + (1 − e^{−t}) v_σ(i); the hardmax step with "
        "γ = Δt is its explicit Euler scheme.",
        "",
        "| Δt | steps | states compared (every k steps) | max error (relative to "
        "‖x^0 − v‖) | error / Δt |",
        "|---|---|---|---|---|",
    ]
    for _, r in ode.iterrows():
        text.append(
            f"| {r['dt']:g} | {int(r['steps'])} | k = {int(r['record_every'])} | "
            f"{r['max_error']:.3e} | {r['first_order_constant']:.4f} |"
        )
    text += [
        "",
        f"Fitted order {slope:.3f} (the explicit Euler scheme is of order 1, a "
        f"mathematical remark); error/Δt at the last Δt of the table "
        f"{ode['first_order_constant'].iloc[-1]:.4f} against its limit "
        f"1/(2e) = {1 / (2 * np.e):.4f} "
        "(the maximum of |(1 − Δt)^m − e^{−mΔt}|, reached at t = 1).",
        "",
    ]
    text += [
        "## Gaussian vertices, d → ∞",
        "",
        "Published: for k i.i.d. Gaussian vertices every vertex owns its cell with "
        "probability → 1 as d → ∞. Exact here: P[v_a owns] = E[Φ(√Q)^{k−1}], Q ~ χ²_d.",
        "",
        "| k | d | vertices not owning (measured) | (exact) | polytopes all owning |",
        "|---|---|---|---|---|",
    ]
    worst = 0.0
    for _, r in gauss.iterrows():
        p_hat = r["vertices_not_owning"] / r["vertices"]
        p = 1 - r["theory_vertex_owning"]
        se = np.sqrt(max(p * (1 - p), 1e-300) / r["vertices"])
        worst = max(worst, abs(p_hat - p) / se if se > 0 else 0.0)
        text.append(
            f"| {int(r['k'])} | {int(r['d'])} | {p_hat:.2e} | {p:.2e} | "
            f"{1 - r['polytopes_not_all_owning'] / r['draws']:.4f} |"
        )
    miss = float(checks_config(out)["gaussian_miss"])  # the threshold of the checks
    within = gauss["polytopes_not_all_owning"] / gauss["draws"] <= miss
    reach = gauss[within].groupby("k")["d"].min()
    tail = gauss[gauss["k"] == gauss["k"].min()].tail(2)
    decay = (
        -np.diff(np.log(1 - tail["theory_vertex_owning"].to_numpy()))[0]
        / np.diff(tail["d"].to_numpy())[0]
    )
    text += [
        "",
        f"Largest deviation measured vs exact: {worst:.1f} standard errors (vertex "
        "draws within one polytope are dependent, so this is indicative). Every vertex owns "
        f"its cell in ≥ {100 * (1 - miss):g} % of draws (`gaussian_miss`) from d = "
        + ", ".join(f"{int(d)} (k = {int(k)})" for k, d in reach.items())
        + f"; the exact curve of the non-owning fraction falls by "
        f"e^−{decay:.3f} per unit of d at the largest d (k = {int(gauss['k'].min())}; "
        f"log scale in `gaussian.png`). *Remark (mathematical):* since 1 − P[own] ≈ "
        "(k − 1) E[Φ̄(√Q)] and E[e^{−Q/2}] = 2^{−d/2}, the rate tends to ln 2/2 = "
        f"{np.log(2) / 2:.3f} as d → ∞.",
        "",
    ]
    text += ["Figures: `rates.png`, `paths.png`, `ode.png`, `gaussian.png`.", ""]
    return "\n".join(text) + "\n"
