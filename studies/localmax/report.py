"""The report of the localmax study: the parts of ``report.md`` filled from the tables in ``out``
only."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from metastab.studies.study import ReportTemplate

from .checks import TITLES, verdicts
from .config import Config
from .figures import FIGURE2, load, side_by_side_labels

# --------------------------------------------------------------------------- report


def _fmt(v, spec=".3g"):
    return "—" if v is None or (isinstance(v, float) and np.isnan(v)) else format(v, spec)


def _recovery_table(summary: pd.DataFrame, tol: float) -> str:
    """Markdown table: schedule kind × r0 -> median distance to the hardmax limit (exact %)."""
    van = summary[summary["family"] == "vanishing"].copy()
    van["kind"] = van["label"].str.replace(r"r_t=[0-9.e-]+", "r_t=r0", regex=True)
    r0s = sorted(van["r"].unique(), reverse=True)
    lines = [
        "| schedule | " + " | ".join(f"r0 = {r:g}" for r in r0s) + " |",
        "|---|" + "---|" * len(r0s),
    ]
    for kind, grp in van.groupby("kind"):
        cells = []
        for r in r0s:
            d = grp.loc[grp["r"] == r, "dist_to_hardmax"]
            cells.append(f"{d.median():.1e} ({100 * (d <= tol).mean():.0f}%)")
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _area_ratios(fig2: pd.DataFrame, cfg: Config) -> str:
    """'label x.xx, ...': median over configurations of area(t=30) / hardmax's area(t=30)."""
    hm = fig2[fig2["label"] == "hardmax"].set_index("config")["area_steps"]
    parts = []
    for label in side_by_side_labels(cfg):
        sel = fig2[fig2["label"] == label].set_index("config")["area_steps"]
        parts.append(f"{label} {float((sel / hm.loc[sel.index]).median()):.2f}")
    return ", ".join(parts)


def _inputs(out: Path) -> SimpleNamespace:
    """The tables of ``out`` and the values that several sections of the report share."""
    summary, _, _, cfg = load(out)
    v = verdicts(summary, cfg)
    tol, res = float(cfg.roundoff), float(cfg.resolution)
    gamma = float(cfg.gamma)
    n_poly = summary.loc[~summary["config"].isin(FIGURE2), "config"].nunique()
    fig2 = summary[summary["config"].isin(FIGURE2)]
    return SimpleNamespace(**{k: v for k, v in locals().items() if k != "out"})


def _header(t: ReportTemplate, c: SimpleNamespace) -> str:
    """Title, the model, the runs and the figures."""
    cfg = c.cfg
    return t(
        "header",
        gamma=f"{c.gamma:.4f}",
        polygons=c.n_poly,
        horizon=cfg.horizon,
        roundoff=f"{c.tol:g}",
        resolution=f"{c.res:g}",
        panel_steps=", ".join(str(s) for s in cfg.panel_steps),
    )


def _figure2_table(t: ReportTemplate, c: SimpleNamespace) -> str:
    """One row per Figure-2 configuration and dynamics."""
    fig2 = c.fig2
    rows = [
        t(
            "figure2_row",
            config=TITLES[r["config"]],
            label=r["label"],
            area0=f"{r['area0']:.4f}",
            area_steps=f"{r['area_steps']:.4f}",
            area_end=f"{r['area_end']:.4f}",
            hull_steps=r["hull_vertices_steps"],
            hull_end=r["hull_vertices_end"],
            clusters=r["clusters_end"],
            leaders=(
                f"{_fmt(r['leaders0'], '.0f')} / {_fmt(r['leaders_steps'], '.0f')}"
                if not np.isnan(r["leaders0"])
                else "—"
            ),
            quiescent=_fmt(r["quiescent_from"], ".0f"),
            decay=_fmt(r["decay_rate"], ".3f"),
            distance=f"{r['dist_to_hardmax']:.2e}",
            settled=t("yes" if r["converged"] else "no"),
        )
        for _, r in fig2[fig2["family"] != "vanishing"].iterrows()
    ]
    return t("figure2", rows="\n".join(rows))


def _hull(t: ReportTemplate, c: SimpleNamespace) -> str:
    """(a) the hull converges to a polytope."""
    a = c.v["a"]
    return t(
        "hull",
        roundoff=f"{c.tol:g}",
        runs=a["runs"],
        grew=a["grew"],
        unsettled=a["unsettled"],
        horizon=c.cfg.horizon,
        holds=t("holds" if a["holds"] else "fails"),
    )


def _limits(t: ReportTemplate, c: SimpleNamespace) -> str:
    """(b) no finite-time convergence for r > 0."""
    b = c.v["b"]
    stopped = b["arrivals"] + b["vanishing_arrivals"] > 0
    return t(
        "limits",
        resolution=f"{c.res:g}",
        runs=b["runs"],
        arrivals=b["config_arrivals"],
        rate_min=f"{b['rate_min']:.3f}",
        rate_max=f"{b['rate_max']:.3f}",
        rate_median=f"{b['rate_median']:.3f}",
        fitted=b["fitted"],
        one_minus_gamma=f"{1 - c.gamma:.3f}",
        slowest=b["slowest"],
        holds=t("holds" if b["holds"] else "fails"),
        stop=t("stop" if stopped else "never_stop"),
        token_arrivals=b["arrivals"],
        const_with=b["const_runs_with_arrivals"],
        const_runs=b["const_runs"],
        example=t("example", example=b["example"]) if b["example"] else "",
        vanishing_arrivals=b["vanishing_arrivals"],
        vanishing_with=b["vanishing_runs_with_arrivals"],
        vanishing_runs=b["vanishing_runs"],
        verdict=t(
            "fails" if not b["holds"] else "not_token_by_token" if stopped else "token_by_token"
        ),
    )


def _recovery(t: ReportTemplate, c: SimpleNamespace) -> str:
    """(c) r_t → 0 recovers hardmax; r large is uniform averaging."""
    v, tol, cfg = c.v["c"], c.tol, c.cfg
    return t(
        "recovery",
        roundoff=f"{tol:g}",
        r_large=f"{cfg.r_large:g}",
        table=_recovery_table(c.summary, tol),
        below=v["below"],
        runs=v["runs"],
        exact=t("yes" if v["exact"] else "no"),
        median_largest=f"{v['median_largest']:.2e}",
        r0_largest=f"{max(cfg.r0_values):g}",
        median_smallest=f"{v['median_smallest']:.2e}",
        r0_smallest=f"{min(cfg.r0_values):g}",
        exact_percent=f"{100 * v['exact_fraction_smallest']:.0f}",
        shrinks=t("shrinks" if v["shrink"] else "does_not_shrink"),
        uniform=f"{v['uniform']:.1e}",
        wide=v["wide"],
        wide_max=f"{v['wide_max']:.1e}",
        narrow=v["narrow"],
        narrow_min=f"{v['narrow_min']:.2g}",
        holds=t("holds" if v["holds"] else "fails"),
        qualified=t(
            "partly_exact"
            if v["exact"] and v["shrink"] and v["exact_fraction_smallest"] < 1
            else "plain"
        ),
    )


def _quiescence(t: ReportTemplate, c: SimpleNamespace) -> str:
    """(d) quiescent tokens."""
    d = c.v["d"]
    return t(
        "quiescence",
        quiet=d["quiet"],
        runs=d["runs"],
        median=f"{d['median']:.0f}",
        maximum=f"{d['maximum']:.0f}",
        holds=t("holds" if d["holds"] else "fails"),
    )


def _side_by_side(t: ReportTemplate, c: SimpleNamespace) -> str:
    """(e) softmax, localmax and hardmax from the same start."""
    cfg = c.cfg
    return t(
        "side_by_side",
        betas=", ".join(f"{b:g}" for b in cfg.betas),
        r_values=", ".join(f"{r:g}" for r in cfg.r_values),
        ratios=_area_ratios(c.fig2, cfg),
    )


def _random_polygons(t: ReportTemplate, c: SimpleNamespace) -> str:
    """Medians over the random polygons."""
    summary = c.summary
    rows = summary[~summary["config"].isin(FIGURE2) & (summary["family"] != "vanishing")]
    agg = rows.groupby("label").agg(
        area=("area_end", "median"),
        area0=("area0", "median"),
        clusters=("clusters_end", "median"),
        dist=("dist_to_hardmax", "median"),
        settled=("converged", "mean"),
        rate=("decay_rate", "median"),
    )
    order = {label: k for k, label in enumerate(rows["label"].unique())}
    agg = agg.sort_index(key=lambda idx: idx.map(order))
    table = [
        t(
            "polygon_row",
            label=label,
            area0=f"{r['area0']:.3f}",
            area=f"{r['area']:.3f}",
            clusters=f"{r['clusters']:.0f}",
            distance=f"{r['dist']:.2e}",
            rate=f"{r['rate']:.3f}",
            settled=f"{100 * r['settled']:.0f}",
        )
        for label, r in agg.iterrows()
    ]
    return t("random_polygons", polygons=c.n_poly, rows="\n".join(table))


def report(out: Path, template: ReportTemplate) -> str:
    """Markdown report of the localmax study from the tables in ``out``, one renderer per
    section."""
    c = _inputs(Path(out))
    sections = (
        _header,
        _figure2_table,
        _hull,
        _limits,
        _recovery,
        _quiescence,
        _side_by_side,
        _random_polygons,
    )
    return "\n".join(section(template, c) for section in sections) + "\n"
