"""Figures and report of the metastability study ([FW] lem. metastab.1 / Thm 5.4).

Reads only the files that ``run.py`` wrote into ``out``: chains.parquet (one row per chain,
event and β), per_beta.csv, exponent.csv, local_slopes.csv, bound.csv and their sidecars.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from metastab import plotting
from metastab.plotting import canvas, stats, theory
from metastab.results import read_table

LABELS = {"hull": "T2 (leave group hull + B(0, ε))", "ball": "leave B(v_σ(i), ε)"}


def _figure(ncols=1, width=6.4, height=4.4):
    """A figure and its row of axes."""
    fig, axes = canvas(1, ncols, width=width, height=height, squeeze=False)
    return fig, axes[0]


def _colors(count):
    import seaborn as sns

    return sns.color_palette("viridis", max(count, 1))


def _km(group: pd.DataFrame):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.DiagnosticWarning)
        return stats.survival(group["steps"].to_numpy(), group["censored"].to_numpy())


def _bound_kwargs(setup: dict) -> dict:
    return dict(c0=setup["c0"], eps=setup["eps"], gamma=setup["gamma"], n=setup["n"],
                diameter=setup["diameter"])


def survival_against_bound(chains, setup, path):
    """P[T2 >= t] per β (Kaplan–Meier, log–log) with the Thm 5.4 lower bound dashed."""
    fig, (ax,) = _figure()
    hull = chains[chains["event"] == "hull"]
    betas = sorted(hull["beta"].unique())
    for beta, color in zip(betas, _colors(len(betas))):
        km = _km(hull[hull["beta"] == beta])
        # P[T2 >= t] = P[T2 > t - 1]: the Kaplan–Meier step at time u shows from t = u + 1
        t = np.r_[1.0, km.time + 1]
        ax.step(t, np.r_[1.0, km.probability], where="post", color=color, label=f"β = {beta:g}")
        grid = np.geomspace(2.0, max(3.0, float(hull["steps"].max())), 400)
        bound = theory.metastability_bound(grid, beta, **_bound_kwargs(setup))
        keep = bound > 1e-3
        ax.plot(grid[keep], bound[keep], "--", color=color, linewidth=1.2)
    ax.plot([], [], "--", color="grey", label="Thm 5.4 lower bound")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(1e-3, 1.3)
    ax.set_xlabel("t (steps)")
    ax.set_ylabel("P[T2 ≥ t]")
    ax.set_title("Exit time T2: Kaplan–Meier (solid) above the Thm 5.4 bound (dashed)",
                 fontsize="medium")
    ax.legend(fontsize="small", frameon=False, ncols=2, loc="lower left")
    fig.savefig(path, dpi=150)


def survival_rescaled(chains, path):
    """P[T > t] against t / E[T] per β for both events, beside the memoryless law e^{-x}."""
    fig, axes = _figure(ncols=2, width=9.0, height=4.2)
    betas = sorted(chains["beta"].unique())
    colors = dict(zip(betas, _colors(len(betas))))
    x = np.linspace(0, 4, 200)
    for ax, name in zip(axes, ("hull", "ball")):
        part = chains[chains["event"] == name]
        for beta in betas:
            g = part[part["beta"] == beta]
            km = _km(g)
            mean = g["steps"].sum() / max(int((~g["censored"]).sum()), 1)
            ax.step(np.r_[0.0, km.time / mean], np.r_[1.0, km.probability], where="post",
                    color=colors[beta], label=f"β = {beta:g}")
        ax.plot(x, np.exp(-x), "--", color="black", label="memoryless: e^(−t/E[T])")
        ax.set_yscale("log")
        ax.set_ylim(1e-3, 1.2)
        ax.set_xlim(0, 4)
        ax.set_xlabel("t / E[T]  (steps / mean steps)")
        ax.set_ylabel("P[T > t]")
        ax.set_title(LABELS[name], fontsize="medium")
    axes[0].legend(fontsize="x-small", frameon=False, ncols=2, loc="lower left")
    fig.savefig(path, dpi=150)


def arrhenius(chains, per, setup, fit_from, path):
    """Mean exit time against β: the joint fit of T2 (β >= fit_from), the Thm 5.4 line on
    E[T2] (dashed), every β of both events as points."""
    hull = chains[(chains["event"] == "hull") & (chains["beta"] >= fit_from - 1e-9)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.DiagnosticWarning)
        fig = plotting.arrhenius_figure(hull.drop(columns="event"),
                                        bound=_bound_kwargs(setup))
    ax = fig.axes[0]
    for container in ax.containers:               # the fitted event is T2: say so
        container.set_label(container.get_label().replace("E[T]", "E[T2]"))
    for line in ax.get_lines():
        if line.get_label().startswith("fit:"):
            line.set_label("T2 " + line.get_label())
    for name, marker, color in (("hull", "o", "tab:blue"), ("ball", "s", "tab:green")):
        g = per[per["event"] == name]
        if name == "hull":
            g = g[g["beta"] < fit_from - 1e-9]
            if g.empty:
                continue
            label = "E[T2], β not in the fit"
        else:
            label = "E[T] leave B(v, ε)"
        ax.plot(g["beta"], g["mean"], marker, mfc="none", color=color, label=label)
    ax.set_xlabel("β")
    ax.set_ylabel("mean exit time (steps)")
    ax.legend(fontsize="small", frameon=False)
    fig.set_size_inches(6.4, 4.6)
    fig.savefig(path, dpi=150)


def figures(out: Path) -> None:
    """Draw the study's figures from the tables in ``out`` ([FW] Thm 5.4).

    Parameters
    ----------
    out : Path
        Holds the tables of ``run.py``; receives survival_T2.png (P[T2 >= t] per β against the
        bound), survival_rescaled.png (memorylessness) and arrhenius.png (E[T] against β).
    """
    out = Path(out)
    chains, meta = read_table(out / "chains.parquet")
    per, _ = read_table(out / "per_beta.csv")
    setup = meta["setup"]
    survival_against_bound(chains, setup, out / "survival_T2.png")
    survival_rescaled(chains, out / "survival_rescaled.png")
    arrhenius(chains, per, setup, float(meta["config"]["fit_from_beta"]), out / "arrhenius.png")


# --------------------------------------------------------------------------- report


def _fmt(x, digits=3):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if isinstance(x, float) and (abs(x) >= 1e5 or (x != 0 and abs(x) < 1e-3)):
        return f"{x:.{digits - 1}e}"
    return f"{x:.{digits}g}"


def _table(frame: pd.DataFrame, columns: dict) -> str:
    head = "| " + " | ".join(columns.values()) + " |"
    rule = "|" + "|".join("---" for _ in columns) + "|"
    body = ["| " + " | ".join(str(v) if isinstance(v, str) else _fmt(v)
                              for v in (row[c] for c in columns)) + " |"
            for _, row in frame.iterrows()]
    return "\n".join([head, rule, *body])


def report(out: Path) -> str:
    """The study's markdown report, from the tables in ``out`` only.

    Setup and hypotheses of [FW] Thm 5.4, the measured exponent beside the theorem's, the bound
    on P[T2 >= t] at every β with its looseness, memorylessness, cost per β, the walls of the
    engine, and a line ``Verdict: holds | fails | holds with a correction``.

    Parameters
    ----------
    out : Path

    Returns
    -------
    str
    """
    out = Path(out)
    per, meta = read_table(out / "per_beta.csv")
    fits, _ = read_table(out / "exponent.csv")
    slopes, _ = read_table(out / "local_slopes.csv")
    bound, _ = read_table(out / "bound.csv")
    s, cfg, stop = meta["setup"], meta["config"], meta["stop"]
    hyp = s["hypotheses"]
    hull_fit = fits[fits["event"] == "hull"].iloc[0]
    ball_fit = fits[fits["event"] == "ball"].iloc[0]
    hull = per[per["event"] == "hull"].sort_values("beta")
    ball = per[per["event"] == "ball"].sort_values("beta").set_index("beta")
    betas = hull["beta"].to_numpy()
    holds = bool((bound["violation"] <= 0).all())
    above = bool(hull_fit["b_boot_low"] > s["theorem_exponent"]
                 and hull_fit["b_low"] > s["theorem_exponent"])
    enough = bool((hull["events"] >= cfg["min_escapes"]).all())
    memoryless = hull["memoryless_p"]
    rejected = int((memoryless <= 0.05).sum())
    merge, _ = read_table(out / "merge.csv")
    hull_slopes = slopes[slopes["event"] == "hull"].rename(columns={"beta_high": "beta"})
    merge = merge.merge(hull_slopes[["beta", "slope"]], on="beta", how="left")
    merge["predicted"] = (merge["beta"] * merge["gap"]).diff() / merge["beta"].diff()
    fitted = merge[(merge["beta"] >= hull_fit["beta_min"]) & merge["slope"].notna()]

    shape = ("equilateral triangle" if len(s["vertices"]) == 3
             else f"regular {len(s['vertices'])}-gon")
    lines = [
        "# Metastability: the exit time T2 of [FW] Thm 5.4 (lem. metastab.1)",
        "",
        "**Statement.** Tokens clustered near the vertices of K (B = I, equinorm, acute cones, "
        "c0 > 0, every token within Cτ of its vertex), ε/γ ≥ 2 d(K), T2 = first step at which "
        "some token leaves conv{x_j^0 : σ(j) = σ(i)} + B(0, ε). For t > 1, "
        "P[T2 ≥ t] ≥ 1 − exp((1 + ε/γ) log(γt/ε) + (1 + ε/γ) log n − β c0 ε/(2γ)); "
        "so T2 is at least of order e^{bβ} with b = c0 ε/(2γ(1 + ε/γ)).",
        "",
        f"**Setup.** SA_P on the {shape} on the unit circle (c0 = {_fmt(s['c0'], 4)}, "
        f"d(K) = {_fmt(s['diameter'], 4)}), n = {s['n']} tokens: one on each vertex and "
        f"{cfg['per_vertex']} more per vertex at distance {cfg['offset']:g} from it "
        f"(seed {cfg['config_seed']}); γ = {s['gamma']:g}, ε = {_fmt(s['eps'], 4)} "
        f"(ε/γ = {_fmt(s['eps_over_gamma'], 4)} = 2 d(K)). Hypotheses: equinorm "
        f"{hyp['equinorm']}, acute cones {hyp['acute_cones']}, c0 > 0 {hyp['separated']}, "
        f"tokens on the vertices {hyp['vertex_tokens']}, ε/γ ≥ 2 d(K) "
        f"{hyp['eps_over_gamma_ge_2d']}; τ = {_fmt(s['tau'], 3)}, so every token is within "
        f"Cτ of its vertex with C = {_fmt(s['C_needed'], 3)}. The theorem's exponent is "
        f"b_thm = {_fmt(s['theorem_exponent'], 4)}. Also measured, with the same random numbers: "
        "T_ball, the first exit of a token from the ball B(v_σ(i), ε) around its vertex "
        f"(T_ball ≤ T2 on every path: {meta['ball_after_hull_chains']} exceptions).",
        "",
        "## Escape-rate exponent",
        "",
        f"Joint censored fit log E[T] = a + bβ (`stats.fit_scaling`, geometric law) over "
        f"β = {hull_fit['beta_min']:g}…{hull_fit['beta_max']:g} ({int(hull_fit['betas'])} values):",
        "",
        "| exit | b | 95 % profile CI | 95 % bootstrap CI | b_thm | b / b_thm | deviance / df |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, f in (("T2 (hull)", hull_fit), ("ball", ball_fit)):
        lines.append(f"| {name} | {f['b']:.3f} | [{f['b_low']:.3f}, {f['b_high']:.3f}] | "
                     f"[{f['b_boot_low']:.3f}, {f['b_boot_high']:.3f}] | "
                     f"{f['theorem_exponent']:.3f} | {f['ratio_b_to_theorem']:.2f} | "
                     f"{f['deviance']:.3g} / {int(f['df'])} |")
    lines += [
        "",
        f"The measured exponent of T2 is {hull_fit['ratio_b_to_theorem']:.2f} times the one the "
        "theorem guarantees: the bound's exponent is conservative, not violated. The fit range "
        f"starts at β = {hull_fit['beta_min']:g} (`fit_from_beta`) because the Arrhenius law is "
        "asymptotic and the slope still drifts at small β (below); over every β a fit with a "
        f"c·log β prefactor gives b = {hull_fit['b_with_prefactor']:.3f}, "
        f"c = {hull_fit['c_prefactor']:.2f} (likelihood-ratio p for c = 0: "
        f"{_fmt(hull_fit['prefactor_lrt_p'], 2)}).",
        "",
        "The local slope Δlog E[T2]/Δβ rises with β. It follows the score gap Δ(β) of a "
        "cross-group pick from the points where the groups have merged: at finite β a vertex "
        "token also picks the other tokens of its own group, so a group merges at a point u_a "
        "inside K, short of its vertex, and a cross pick from there costs "
        "Δ = <u_a, u_a − u_b> < c0. If E[T2] ∝ e^{βΔ(β)}, the local slope is the difference "
        "quotient of βΔ(β), shown beside it "
        f"(`merge.csv`: state after min({meta['config']['merge_steps']}, half the median exit "
        "from the balls) steps, medians over chains).",
        "",
        _table(merge, {"beta": "β", "slope": "local slope of log E[T2] (previous β → β)",
                       "predicted": "Δ(βΔ(β)) / Δβ", "gap": "gap Δ(β) at the merge points",
                       "centroid_norm": "‖u_a‖ (vertex: 1)", "spread": "group spread"}),
        "",
        f"Over the fitted β this predicts slopes {_fmt(float(fitted['predicted'].min()))}–"
        f"{_fmt(float(fitted['predicted'].max()))} against the measured "
        f"{_fmt(float(fitted['slope'].min()))}–{_fmt(float(fitted['slope'].max()))} (joint fit "
        f"{hull_fit['b']:.3f}); the merge points, measured before most chains exit (so less "
        "settled at small β), account for most of the shortfall from c0. As β grows they "
        f"approach the vertices, so the slope should rise to c0 = {_fmt(s['c0'], 3)}, i.e. "
        f"{s['c0'] / s['theorem_exponent']:.2f} times b_thm, in line with the prefactor fit "
        "above; within the β range reached it is still below.",
        "",
        "The bootstrap interval resamples chains within each β; it is the one to trust, because "
        "the exit time is not geometric (next section) and the geometric likelihood's profile "
        "interval assumes Var T = E[T]², larger than the measured variance: the profile "
        "interval is conservative here.",
    ]
    if isinstance(hull_fit["warnings"], str) and hull_fit["warnings"]:
        lines += ["", f"Fit diagnostics: {hull_fit['warnings']}"]
    lines += [
        "",
        "## The bound on P[T2 ≥ t]",
        "",
        "Empirical P[T2 ≥ t] (Kaplan–Meier, upper 95 % band) against the bound, on every integer "
        "t from 2 to the last observed exit. `t*` is the last t at which the bound is positive "
        "(beyond it the bound says nothing); the ratios compare the measured median and mean "
        "with the time the bound guarantees with probability 1/2 and with its lower bound on "
        "E[T2] (Markov's inequality, `theory.exit_time_bound`).",
        "",
        _table(bound, {"beta": "β", "bound_at_t2": "bound at t = 2", "t_star": "t*",
                       "first_escape": "first exit", "violation": "max(bound − P̂)",
                       "median": "median T2", "bound_t_half": "bound's median",
                       "median_ratio": "median ratio", "mean": "E[T2]",
                       "bound_mean": "bound on E[T2]", "mean_ratio": "mean ratio"}),
        "",
        ("**The bound holds at every β**" if holds else "**The bound FAILS**") +
        f" (largest excess of the bound over the empirical upper band: "
        f"{_fmt(float(bound['violation'].max()), 3)}). It is loose: "
        + ("at every β it is positive only before the first observed exit (t* < first exit), "
           if bool((bound["t_star"] < bound["first_escape"]).all()) else
           "it is positive up to t*, sometimes past the first observed exit, ") +
        "and the measured mean exceeds the bound's "
        f"mean by a factor {_fmt(float(bound['mean_ratio'].min()), 3)} to "
        f"{_fmt(float(bound['mean_ratio'].max()), 3)}, growing like e^{{(b − b_thm)β}}.",
        "",
        "![P[T2 ≥ t] against the bound](survival_T2.png)",
        "",
        "![Arrhenius plot](arrhenius.png)",
        "",
        "## Memorylessness",
        "",
        f"`stats.exponentiality_test` (parametric bootstrap, {cfg['n_resamples']} resamples; the "
        f"smallest attainable p is {1 / (cfg['n_resamples'] + 1):.3f}; D is the largest "
        "distance between the Kaplan–Meier curve and the fitted geometric law) rejects the "
        "geometric "
        f"law for T2 at {rejected} of {len(hull)} β values at the 5 % level. The exit is not "
        "memoryless in this setup: the coefficient of variation of T2 is "
        f"{_fmt(float(hull['cv'].min()), 2)}–{_fmt(float(hull['cv'].max()), 2)} (1 for a "
        "memoryless law), and the rescaled survival curves fall on one curve, flat at first and "
        "then steeper than e^{−x}. That is the shape of a sum of several waiting times "
        "(Gamma-like), not of one jump over a barrier, and it fits the mechanism: a merged "
        "group has no restoring force, so every rare cross-group pick drags its token, and "
        "through the cheap in-group picks its whole group, a little towards the other groups "
        "for good; T2 comes when such kicks have added up to ε. The means per β below are "
        "exposure/escapes, the sample mean when no chain is censored, valid without the "
        f"geometric law ({int(hull['censored'].sum())} of {int(hull['chains'].sum())} T2 chains "
        "censored in all; the coefficient of variation is that of min(T2, max_steps)).",
        "",
        "![rescaled survival](survival_rescaled.png)",
        "",
        "## Per β: escapes, means, memorylessness and cost",
        "",
    ]
    hull = hull.assign(ball_mean=hull["beta"].map(ball["mean"]),
                       ball_events=hull["beta"].map(ball["events"]),
                       ball_p=hull["beta"].map(ball["memoryless_p"]),
                       ball_wall=hull["beta"].map(ball["wall_s"]),
                       ball_steps=hull["beta"].map(ball["steps_simulated"]),
                       rate=(hull["token_steps"] + hull["beta"].map(ball["token_steps"]))
                       / (hull["wall_s"] + hull["beta"].map(ball["wall_s"])) / 1e6,
                       mean_ci=[f"[{_fmt(lo)}, {_fmt(hi)}]" for lo, hi in
                                zip(hull["mean_low"], hull["mean_high"])])
    lines += [
        _table(hull, {"beta": "β", "chains": "chains", "events": "exits T2",
                      "censored": "censored", "mean": "E[T2]", "mean_ci": "95 % CI",
                      "sample_median": "median T2", "cv": "CV of T2",
                      "memoryless_D": "sup-distance D (T2)", "memoryless_p": "memoryless p (T2)",
                      "ball_events": "exits ball",
                      "ball_mean": "E[T_ball]", "ball_p": "memoryless p (ball)"}),
        "",
        "Cost per β (both runs use the same chains and step budget `max_steps`; steps "
        "simulated are chain-steps, each moving all n tokens; wall seconds on "
        f"{meta['provenance'].get('threads', '?')} numba threads of a machine shared with other "
        "work):",
        "",
        _table(hull, {"beta": "β", "chains": "chains", "max_steps": "max_steps",
                      "wall_s": "wall s (T2)", "steps_simulated": "steps simulated (T2)",
                      "ball_wall": "wall s (ball)", "ball_steps": "steps simulated (ball)",
                      "rate": "M token-steps/s"}),
        "",
        "## How far in β the engine reaches",
        "",
    ]
    wall = s["uniform_wall_beta"]
    slope = float(hull_fit["b"])
    last = hull.iloc[-1]
    at_wall = float(last["mean"]) * math.exp(slope * (wall - float(last["beta"])))
    rate = float(hull["steps_simulated"].sum() / hull["wall_s"].sum())
    ball_rate = float(hull["ball_steps"].sum() / hull["ball_wall"].sum())
    lines += [
        f"- **Compute wall.** The ladder stopped at β = {_fmt(stop.get('beta'), 3)}: "
        f"{stop['reason']}" + (
            f" (predicted E[T2] = {_fmt(stop['predicted_mean'], 3)} steps, so "
            f"{cfg['min_chains']} chains need ≈ {_fmt(stop['predicted_chain_steps'], 3)} "
            f"chain-steps, over the {_fmt(float(cfg['max_chain_steps']), 3)} allowed per β: "
            f"≈ {_fmt(stop['predicted_chain_steps'] / rate, 3)} s for T2 alone at the rate "
            "below)" if stop["reason"] == "compute budget" else "") +
        f". Direct stepping ran at {_fmt(rate / 1e6, 3)} M chain-steps/s "
        f"({_fmt(rate * s['n'] / 1e6, 3)} M token-steps/s) for T2, whose event check computes "
        f"a distance to a hull for every token and step, and at {_fmt(ball_rate / 1e6, 3)} M "
        f"chain-steps/s ({_fmt(ball_rate * s['n'] / 1e6, 3)} M token-steps/s) for the ball; "
        f"each β costs about e^b ≈ {math.exp(slope):.1f} times the one before.",
        f"- **Uniform wall.** One cross-group pick from the clustered state has probability "
        f"below 2^-53 from β = {wall:.2f} on (βc0 = {wall * s['c0']:.1f}): the kernel draws "
        "picks by inverting a 53-bit uniform, so beyond it a rare pick is drawn with probability "
        "0 or 2^-53, not its own (the gap is largest, so the wall earliest, with the groups on "
        "their vertices; from the merge points above it comes a few β later). "
        "No β at or past it was simulated. Reaching it by direct "
        f"stepping would take E[T2] ≈ {_fmt(at_wall, 2)} steps per chain (fit extrapolated), "
        "so in this setup the compute wall comes long before the uniform wall. Larger β need "
        "an event-driven engine (drawing the waiting time of a nearly frozen configuration "
        "instead of stepping through it); this study uses direct stepping only.",
        "",
    ]
    verdict = ("holds" if holds and above and enough else
               "fails" if not holds else "holds with a correction")
    why = []
    if holds:
        why.append(f"P[T2 ≥ t] stays above the bound at every β = {betas.min():g}…{betas.max():g}")
    else:
        why.append("the empirical P[T2 ≥ t] falls below the bound (see the table)")
    if above:
        why.append(f"the measured exponent b = {slope:.3f} exceeds b_thm = "
                   f"{s['theorem_exponent']:.3f} by a factor {hull_fit['ratio_b_to_theorem']:.2f}"
                   " (the bound is loose)")
    else:
        why.append(f"the exponent's interval reaches below b_thm = {s['theorem_exponent']:.3f}")
    if not enough:
        why.append(f"some β have fewer than {cfg['min_escapes']} exits")
    why.append("the exit is not memoryless here (a Gamma-like sum of kicks), which the theorem "
               "does not claim")
    lines += [
        "## Files",
        "",
        "`chains.parquet` (one row per chain, event and β: steps, censored, max_steps), "
        "`per_beta.csv` (per event and β: escapes, exposure, mean and rate with exact intervals, "
        "memorylessness p, cost), `exponent.csv` (the Arrhenius fits), `local_slopes.csv`, "
        "`merge.csv`, `bound.csv`; each with a `.json` sidecar holding the configuration, the "
        "seeds, the setup (x0, groups, c0, d(K), ε, τ, walls) and the provenance.",
        "",
    ]
    lines += [f"Verdict: {verdict} — " + "; ".join(why) + "."]
    return "\n".join(lines) + "\n"
