"""Figures of the max-margin study; reads only the tables in ``out``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from metastab.plotting import canvas
from metastab.results import read_table


def _figure(ncols, width=4.2, height=3.6):
    """A figure and its row of axes."""
    fig, axes = canvas(1, ncols, width=width * ncols, height=height, squeeze=False)
    return fig, axes[0]


def _direction(ax, vec, color, label, length=25.0, style="--"):
    u = np.asarray(vec[:2], dtype=float)
    u = u / np.linalg.norm(u)
    ax.plot([0, length * u[0]], [0, length * u[1]], style, color=color, lw=1.6, label=label)


def _svm(out, experiment, problem, c=None):
    svm, _ = read_table(out / "svm_values.csv")
    rows = svm[(svm.experiment == experiment) & (svm.problem == problem)]
    if c is not None:
        rows = rows[np.isclose(rows.c, c)]
    return np.array(rows.solution.iloc[0].split(), dtype=float)


def _palette(name, k):
    from matplotlib import colormaps

    return colormaps[name](np.linspace(0.1, 0.9, k))


def _e1(out, path):
    paths, _ = read_table(out / "e1_paths.csv")
    cs = sorted(paths.c.unique(), reverse=True)
    fig, axes = _figure(len(cs))
    palette = _palette("viridis", paths.init.nunique())
    for ax, c in zip(axes, cs):
        sub = paths[np.isclose(paths.c, c) & (paths.iteration <= 200)]
        for colour, (init, grp) in zip(palette, sub.groupby("init", sort=False)):
            ax.plot(grp.p1, grp.p2, color=colour, lw=1.3, label=f"p0=(0,{init:g},0)")
            ax.plot(grp.p1.iloc[0], grp.p2.iloc[0], "o", color=colour, ms=4)
        _direction(ax, _svm(out, "E1", "global, alpha=0", c), "tab:red", "p^mm global (α=0)")
        _direction(ax, _svm(out, "E1", "local, alpha=1", c), "tab:blue", "p^mm local (α=1)")
        ax.set(
            xlabel="p₁",
            ylabel="p₂",
            title=f"E1: single input, c = {c:g} (200 NGD steps)",
            xlim=(-8, 22),
            ylim=(-8, 22),
            aspect="equal",
        )
        ax.legend(fontsize=7, loc="upper right")
    fig.savefig(path, dpi=130)


def _e2(out, path):
    curves, _ = read_table(out / "e2_curves.csv")
    svm = _svm(out, "E2", "alpha=0 (numpy data)")
    fig, axes = _figure(3)
    ngd = curves[(curves.method == "NGD") & (curves.iteration <= 200)]
    for init, grp in ngd.groupby("init"):
        axes[0].plot(grp.p1, grp.p2, lw=1.2, label=f"p0=({init:g},0,0)")
    _direction(axes[0], svm, "tab:red", "p^mm (α = token 0)")
    axes[0].set(
        xlabel="p₁",
        ylabel="p₂",
        title="E2 (a): NGD paths, first 200 steps",
        xlim=(-2, 22),
        ylim=(-2, 6),
    )
    axes[0].legend(fontsize=7, loc="upper left")
    for method, colour in (("NGD", "tab:red"), ("GD", "tab:blue")):
        grp = curves[(curves.method == method) & (curves.init == 0.0) & (curves.iteration <= 200)]
        axes[1].plot(grp.iteration, grp.prob0, color=colour, label=method)
        axes[2].plot(grp.iteration, grp.norm, color=colour, label=method)
    axes[1].set(
        xlabel="iteration",
        ylabel="mean softmax prob. of token 0",
        title="E2 (b): selection, p0 = 0",
    )
    axes[2].set(xlabel="iteration", ylabel="‖p‖", title="E2 (c): norm growth, p0 = 0")
    for ax in axes[1:]:
        ax.legend()
    fig.savefig(path, dpi=130)


def _e3(out, path):
    curves, _ = read_table(out / "e3_curves.csv")
    fig, axes = _figure(3)
    for ax, case in zip(axes, ("tight", "non-tight")):
        grp = curves[(curves.case == case) & (curves.iteration <= 200)]
        ax.plot(grp.p1, grp.p2, color="tab:green", label="p(t)")
        ax.plot(grp.v1, grp.v2, color="tab:purple", label="v(t)")
        relaxed = _svm(out, "E3", f"{case}, relaxed")
        full = _svm(out, "E3", f"{case}, full")
        _direction(
            ax,
            relaxed,
            "tab:green",
            "p^mm (relaxed)" if case == "non-tight" else "p^mm (= relaxed)",
            length=22,
        )
        if case == "non-tight":
            _direction(ax, full, "gray", "p^mm (full ATT-SVM)", length=22, style=":")
        _direction(ax, _svm(out, "E3", f"{case}, v classifier"), "tab:purple", "v^mm", length=22)
        ax.set(
            xlabel="coordinate 1",
            ylabel="coordinate 2",
            xlim=(-2, 22),
            ylim=(-2, 22),
            title=f"E3: joint (p, v), {case} data (200 steps)",
            aspect="equal",
        )
        ax.legend(fontsize=7, loc="upper right")
    grp = curves[(curves.case == "tight") & (curves.iteration <= 200)]
    axes[2].plot(grp.iteration, grp.prob1, label="mean softmax prob. of token 1")
    axes[2].plot(grp.iteration, grp.logistic, label="mean logistic prob. σ(Y f)")
    axes[2].set(xlabel="iteration", ylabel="probability", title="E3 (c): tight data")
    axes[2].legend(fontsize=8)
    fig.savefig(path, dpi=130)


def _e4(out, path):
    curves, _ = read_table(out / "e4_curves.csv")
    fig, axes = _figure(2, width=5.0)
    styles = {
        ("W", "corr_fro"): ("tab:blue", "-", "W-param. vs W^mm (Frobenius)"),
        ("W", "corr_nuc"): ("tab:blue", ":", "W-param. vs W^mm_* (nuclear)"),
        ("KQ", "corr_nuc"): ("tab:red", "-", "(K,Q)-param. vs W^mm_* (nuclear)"),
        ("KQ", "corr_fro"): ("tab:red", ":", "(K,Q)-param. vs W^mm (Frobenius)"),
        ("KQ, no ridge", "corr_nuc"): ("gray", "--", "(K,Q) without ridge vs W^mm_*"),
    }
    for (param, col), (colour, style, label) in styles.items():
        grp = curves[curves.param == param]
        mean, std = grp[f"{col}_mean"], grp[f"{col}_std"].fillna(0)
        axes[0].plot(grp.iteration, mean, style, color=colour, label=label)
        if style == "-":
            axes[0].fill_between(
                grp.iteration, mean - std, np.minimum(1, mean + std), color=colour, alpha=0.15
            )
    axes[0].set(
        xlabel="iteration",
        ylabel="mean correlation (± 1 s.d.)",
        title="E4: implicit bias of W vs (K, Q)",
        ylim=(0.5, 1.005),
    )
    axes[0].legend(fontsize=7, loc="lower right")
    for param, colour in (("W", "tab:blue"), ("KQ", "tab:red")):
        grp = curves[curves.param == param]
        axes[1].plot(
            grp.iteration, grp.max_softmax_mean, color=colour, label=f"{param}-parametrisation"
        )
    axes[1].set(
        xlabel="iteration",
        ylabel="mean max softmax probability",
        title="E4: token selection",
        xlim=(0, min(1000, curves.iteration.max())),
    )
    axes[1].legend()
    fig.savefig(path, dpi=130)


def _e5(out, path):
    paths, _ = read_table(out / "e5_paths.csv")
    fig, axes = _figure(2)
    palette = _palette("magma_r", paths.C.nunique())
    for ax, loss in zip(axes, ("linear", "logistic")):
        sub = paths[(paths.loss == loss) & (paths.iteration <= 200)]
        for colour, (C, grp) in zip(palette, sub.groupby("C")):
            ax.plot(grp.p1, grp.p2, color=colour, label=f"C = {C:g}")
        _direction(ax, [1.0, 0.0], "tab:blue", "p^mm = (1, 0) for every C", length=21)
        ax.set(
            xlabel="p₁",
            ylabel="p₂",
            xlim=(-1, 21),
            ylim=(-15, 5),
            title=f"E5: {loss} loss, first 200 NGD steps",
        )
        ax.legend(fontsize=7, loc="lower left")
    fig.savefig(path, dpi=130)


def _e6(out, path):
    ranks, _ = read_table(out / "e6_ranks.csv")
    fig, axes = _figure(2)
    colours = ["tab:blue", "tab:orange", "tab:green", "tab:red"]
    for colour, (n, grp) in zip(colours, ranks.groupby("n")):
        feas = grp[grp.feasible]
        mean_rank = feas.groupby("d").rank_fro.mean()
        axes[0].plot(
            mean_rank.index,
            mean_rank.values,
            "o-",
            color=colour,
            label=f"n = {n} (feasible instances)",
        )
        ds = np.array(sorted(grp.d.unique()))
        axes[0].plot(ds, np.minimum(n, ds), ":", color=colour, lw=1)
        frac = grp.groupby("d").feasible.mean()
        axes[1].plot(frac.index, frac.values, "o-", color=colour, label=f"n = {n}")
    axes[0].plot([], [], "k:", lw=1, label="min(n, d)")
    axes[0].set(
        xlabel="d",
        ylabel="mean rank of W^mm (Frobenius)",
        title="E6: rank of the Frobenius SVM, T = 5",
    )
    axes[1].set(xlabel="d", ylabel="fraction feasible", title="E6: feasible ATT-SVM instances")
    for ax in axes:
        ax.legend(fontsize=8)
    fig.savefig(path, dpi=130)


def _hardmax(out, path):
    hard, _ = read_table(out / "hardmax.csv")
    fig, axes = _figure(2, width=5.2, height=4.2)
    colours = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown"]
    ray = hard[hard.kind != "GD path"]
    for colour, (source, grp) in zip(colours, ray.groupby("source", sort=False)):
        pts, bnd = grp[grp.kind == "SVM ray"], grp[grp.kind == "bound"]
        axes[0].plot(pts.R, pts.gap, "o-", color=colour, ms=3.5, label=f"{source}")
        axes[0].plot(bnd.R, bnd.gap, "--", color=colour, lw=1.0)
    axes[0].plot([], [], "k--", lw=1.0, label=r"bound $(T-1)\,e^{-\beta/\|p^{mm}\|}$")
    axes[0].set(title=r"along the SVM ray $p = \beta\, p^{mm}/\|p^{mm}\|$")
    gd = hard[hard.kind == "GD path"]
    for colour, (source, grp) in zip(colours[3:], gd.groupby("source", sort=False)):
        grp = grp[grp.gap > 0]
        axes[1].plot(grp.R, grp.gap, "-", color=colour, lw=1.5, label=source)
    axes[1].set(title="along normalised-GD paths (every 5th step)")
    for ax in axes:
        ax.set(
            yscale="log",
            xlabel=r"$\beta = \|p\|$ (inverse temperature)",
            ylabel=r"$\max_i\,(1 - s_{i,\alpha_i})$",
            xlim=(0, 100),
            ylim=(1e-45, 2),
        )
        ax.legend(fontsize=7.5, loc="lower left")
    fig.suptitle("Softmax → hardmax on the selected tokens as ‖p‖ grows")
    fig.savefig(path, dpi=130)


def figures(out: Path) -> None:
    out = Path(out)
    _e1(out, out / "e1_paths.png")
    _e2(out, out / "e2_ngd_vs_gd.png")
    _e3(out, out / "e3_joint.png")
    _e4(out, out / "e4_w_vs_kq.png")
    _e5(out, out / "e5_losses.png")
    _e6(out, out / "e6_rank.png")
    _hardmax(out, out / "hardmax.png")
