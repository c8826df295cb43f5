"""Figures and report of the phase-diagram study (GLPR Fig. 3 and 4), reading only its outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from metastab.results import read_table
from metastab.studies.figures import axes_grid, draw, palette
from metastab.studies.render import fmt, md_table
from metastab.studies.runner import sibling
from metastab.studies.verdict import checks_config, read_checks

checks_module = sibling(__file__, "checks")


def _load(out: Path):
    diagram, meta = read_table(out / "diagram.parquet")
    boundary = read_table(out / "boundary.csv")[0]
    circle = read_table(out / "circle.csv")[0]
    return diagram, boundary, circle, meta


def diagram_figure(out: Path) -> None:
    """The probability that pair (1, 2) is clustered over (t, β), one panel per d, with Γ of
    (6.9) (white) and the post-LN layer's curve (dashed)."""
    diagram, boundary, _, meta = _load(out)
    ds = sorted(diagram["d"].unique())
    cols = min(3, len(ds))
    rows = (len(ds) + cols - 1) // cols
    fig, axes = axes_grid(rows, cols, width=4.6 * cols, height=3.8 * rows)
    betas = np.array(sorted(diagram["beta"].unique()))
    mid = (betas[1:] + betas[:-1]) / 2 if len(betas) > 1 else np.array([])
    first = betas[0] - (mid[0] - betas[0] if len(mid) else 0.5)
    last = betas[-1] + (betas[-1] - mid[-1] if len(mid) else 0.5)
    edges = np.concatenate([[first], mid, [last]])  # cells centred between grid β
    mesh = None
    for ax, d in zip(axes.ravel(), ds):
        grid = diagram[diagram["d"] == d].pivot(index="beta", columns="t", values="pair_fraction")
        t = grid.columns.to_numpy(float)
        t_edges = np.concatenate([t - (t[1] - t[0]) / 2, [t[-1] + (t[1] - t[0]) / 2]])
        mesh = ax.pcolormesh(t_edges, edges, grid.to_numpy(), vmin=0, vmax=1, cmap="viridis")
        inside = boundary[boundary["t_star"] <= t[-1]]
        ax.plot(inside["t_star"], inside["beta"], color="w", lw=2, label="Γ of (6.9)")
        ax.plot(
            boundary["t_star_layer"],
            boundary["beta"],
            "--",
            color="C1",
            lw=1.5,
            label="post-LN t*_dt",
        )
        ax.set_xlim(t_edges[0], t_edges[-1])
        ax.set_ylim(edges[0], edges[-1])
        ax.set_title(f"d = {d}", fontsize="medium")
        ax.set_xlabel("t")
        ax.set_ylabel("β")
    for ax in axes.ravel()[len(ds) :]:
        ax.set_visible(False)
    axes[0, 0].legend(fontsize="small", loc="lower right")
    if mesh is not None:
        fig.colorbar(
            mesh,
            ax=axes.ravel().tolist(),
            label=f"P(<x_1, x_2> ≥ 1 − {meta['config']['delta']:g}) (mean pair fraction)",
        )
    fig.savefig(out / "diagram.png", dpi=110)


def mismatch_figure(out: Path) -> None:
    """The fraction of (t, β) cells on the wrong side of Γ (and of the layer's curve) against
    d, at the level and the moved levels."""
    diagram, boundary, _, meta = _load(out)
    cfg = checks_config(out)
    levels = [float(cfg["level"]), *map(float, cfg["levels_moved"])]
    fig, axes = axes_grid(1, 1, width=6.5, height=4.6)
    ax = axes[0, 0]
    for colour, level in zip(palette(len(levels)), levels):
        for column, style, name in (
            ("t_star", "o-", "Γ of (6.9)"),
            ("t_star_layer", "s--", "post-LN t*_dt"),
        ):
            m = checks_module.mismatch(diagram, boundary, level, column)
            ax.plot(m.index, m.to_numpy(), style, color=colour, label=f"level {level:g}, {name}")
    ax.axhline(
        float(cfg["checks"]["mismatch_tolerance"]), color="k", ls=":", lw=1, label="tolerance"
    )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("d")
    ax.set_ylabel("fraction of (t, β) cells on the wrong side")
    ax.legend(fontsize="x-small", frameon=False, ncols=2)
    fig.savefig(out / "mismatch.png", dpi=110)


def circle_figure(out: Path) -> None:
    """d = 2: the distribution of the cluster count at the published times, per β."""
    _, _, circle, meta = _load(out)
    delta = float(meta["config"]["delta"])
    main = circle[np.isclose(circle["delta"], delta)]
    betas = sorted(main["beta"].unique())
    fig, axes = axes_grid(1, len(betas), width=5 * len(betas), height=4.2)
    times = sorted(main["t"].unique())
    width = 0.8 / len(times)
    for ax, beta in zip(axes[0], betas):
        g = main[main["beta"] == beta]
        for i, (colour, t) in enumerate(zip(palette(len(times)), times)):
            h = g[g["t"] == t]
            ax.bar(
                h["clusters"] + (i - (len(times) - 1) / 2) * width,
                h["starts"] / h["total"],
                width,
                color=colour,
                label=f"t = {t:g}",
            )
        ax.axvline(int(g["published"].iloc[0]), color="k", ls=":", label="published")
        ax.set_xticks(sorted(g["clusters"].unique()))
        ax.set_title(f"β = {beta:g}, n = {meta['config']['n']}, d = 2", fontsize="medium")
        ax.set_xlabel(f"number of clusters (δ = {delta:g})")
        ax.set_ylabel(f"fraction of {int(g['total'].iloc[0])} starts")
        ax.legend(fontsize="small", frameon=False)
    fig.savefig(out / "circle.png", dpi=110)


def figures(out: Path) -> None:
    """Draw every figure of the study into ``out``."""
    draw(out, diagram_figure, mismatch_figure, circle_figure)


def _offsets(diagram: pd.DataFrame, boundary: pd.DataFrame, level: float) -> pd.DataFrame:
    """Per (d, β) with t* in the window: the first t with probability ≥ level, minus t*."""
    rows = []
    for (d, beta), g in diagram.groupby(["d", "beta"]):
        b = boundary[np.isclose(boundary["beta"], beta)].iloc[0]
        hit = g.loc[g["pair_fraction"] >= level, "t"]
        rows.append(
            {
                "d": d,
                "beta": beta,
                "t_level": hit.min() if len(hit) else np.nan,
                "t_star": b["t_star"],
                "t_star_layer": b["t_star_layer"],
            }
        )
    return pd.DataFrame(rows)


def _by_d(values: pd.Series) -> str:
    return ", ".join(f"{fmt(v, 3)} (d = {d})" for d, v in values.items())


def report(out: Path) -> str:
    """Markdown report: the diagram against Γ and the circle counts; findings from checks.csv."""
    out = Path(out)
    diagram, boundary, circle, meta = _load(out)
    cfg = checks_config(out)
    checks = read_checks(out / "checks.csv").set_index("criterion")
    row = checks.loc
    level = float(cfg["level"])
    offsets = _offsets(diagram, boundary, level)
    wide = offsets.pivot(index="beta", columns="d", values="t_level")
    wide.columns = [f"d = {d}" for d in wide.columns]
    wide = wide.reset_index().merge(boundary[["beta", "t_star", "t_star_layer"]], on="beta")
    m = checks_module.modes(circle)
    gamma = checks_module.mismatch(diagram, boundary, level, "t_star")
    layer = checks_module.mismatch(diagram, boundary, level, "t_star_layer")
    lines = [
        "# The phase diagram and clusters on the circle (GLPR Fig. 3 and 4)",
        "",
        f"(SA) with Q = K = V = I in the authors' post-LN layer x_i ← N(x_i + dt Attn(x)_i), dt = "
        f"{cfg['dt']:g}, up to t = {cfg['t_max']:g}; n = {cfg['n']} i.i.d. uniform tokens on "
        f"S^(d−1), {cfg['realisations']} starts per (d, β), d ∈ {cfg['ds']}, β ∈ {cfg['betas']} "
        f"(the same starts for every β). The statistic is P(<x_1(t), x_2(t)> ≥ 1 − δ), δ = "
        f"{cfg['delta']:g}, estimated by the mean over starts of the fraction of clustered pairs "
        "(checked against the literal pair (1, 2): `pair_estimator`), reduced on-line by "
        "`metastab.track`. Γ = {(t, β): γ_β(t) = 1 − δ} is t*(β) of (6.9) "
        "(`metastab.theory.phase_boundary`); t*_dt(β) is the first layer at which the "
        "orthogonal start clusters under the same post-LN layer. A (t, β) cell is clustered when "
        f"the probability is ≥ {level:g}; the findings with that level at "
        f"{cfg['levels_moved']} are listed as context. For d > n a start runs in the "
        "n-dimensional span of x(0) (exact; `span_reduction`).",
        "",
        "## Findings (each from the checks table)",
        "",
        f"- **Γ and the transition** (Fig. 3): the fraction of (t, β) cells on the wrong side "
        f"of Γ is {_by_d(gamma)}: it falls to {fmt(gamma.min(), 3)} at d = {gamma.idxmin()}"
        + (
            f" and rises by at most {fmt(gamma.diff().max(), 3)} from one larger d to the next"
            if gamma.idxmin() != gamma.index[-1]
            else ""
        )
        + f" (`gamma_improves_with_d`: {row['gamma_improves_with_d', 'pass']};"
        f" `gamma_at_largest_d`, tolerance {fmt(row['gamma_at_largest_d', 'threshold'])}: "
        f"{row['gamma_at_largest_d', 'pass']}). Against the layer's own curve t*_dt it is "
        f"{_by_d(layer)}"
        + (
            ": at the largest d what remains against Γ is mostly the post-LN step "
            f"(dt = {cfg['dt']:g}), not the dimension."
            if layer.iloc[-1] < gamma.iloc[-1] / 2
            else "."
        ),
    ]
    for moved in cfg["levels_moved"]:
        lines.append(f"- Level {moved:g}: {row[f'level_{moved:g}', 'rule']}.")
    for beta, g in m[np.isclose(m["delta"], float(cfg["delta"]))].groupby("beta"):
        key = f"circle_beta_{beta:g}"
        lines.append(
            f"- **Circle, β = {beta:g}** (Fig. 4): the most frequent count is "
            + ", ".join(f"{r.mode} at t = {r.t:g}" for r in g.itertuples())
            + f"; the published {int(row[key, 'threshold'])} clusters in a share "
            f"{fmt(row[key, 'measured'])} [{fmt(row[key, 'low'])}, {fmt(row[key, 'high'])}] of "
            f"the starts at the worse time (`{key}`: {row[key, 'pass']})."
        )
    if "circle_delta_moved" in checks.index:
        lines.append(f"- δ moved: {row['circle_delta_moved', 'rule']}.")
    lines += [
        "",
        f"## Transition time: first t with probability ≥ {level:g}, against Γ",
        "",
        md_table(
            wide,
            {
                "beta": "β",
                **{c: c for c in wide.columns if c.startswith("d = ")},
                "t_star": "t* (Γ, (6.9))",
                "t_star_layer": "t*_dt (post-LN)",
            },
        ),
        "",
        "## Cluster count on the circle",
        "",
        md_table(
            m,
            {
                "beta": "β",
                "delta": "δ",
                "t": "t",
                "published": "published",
                "mode": "most frequent",
                "share": "share of the published count",
                "low": "95% low",
                "high": "95% high",
            },
        ),
        "",
        "Figures: `diagram.png` (the probability over (t, β) per d with Γ and t*_dt), "
        "`mismatch.png` (cells on the wrong side of Γ and of t*_dt against d, three levels), "
        "`circle.png` (the cluster count on the circle at the published times).",
        "",
    ]
    return "\n".join(lines)
