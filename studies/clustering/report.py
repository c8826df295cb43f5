"""The report of the clustering study: the parts of ``report.md`` filled from the tables in ``out``
only."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from metastab.results import read_table
from metastab.studies.study import ReportTemplate
from metastab.studies.verdict import checks_config, read_checks

from . import checks as _checks
from .config import Config
from .figures import load


def _fmt(x, digits=3) -> str:
    return "∞" if np.isinf(x) else f"{x:.{digits}g}"


def _table(t: ReportTemplate, name: str, gamma: float, s: pd.DataFrame, tag: str) -> str:
    """The table of one (polytope, γ), one row per β."""
    rows = [
        t(
            "table_row",
            beta=f"{r['beta']:g}",
            exists=t("yes" if r["cones_ok"] else "no"),
            T1_min=f"{r['T1_min']:g}",
            T1_max=f"{r['T1_max']:g}",
            hit=_fmt(r["hit_median"]),
            hit_q10=_fmt(r["hit_q10"]),
            hit_q90=_fmt(r["hit_q90"]),
            extreme=_fmt(r["hit_extreme_median"]),
            p=f"{r['P_event_T1']:.2f}",
            bound=f"{r['bound']:.2f}",
            C_random=_fmt(r["C_hat_random"]),
            C_extreme=_fmt(r["C_hat_extreme"]),
            C_max=_fmt(r["C_max_hat"]),
        )
        for _, r in s.iterrows()
    ]
    return t("table", name=name, gamma=f"{gamma:g}", tag=tag, rows="\n".join(rows))


def inputs(out: Path) -> SimpleNamespace:
    """The tables of ``out`` and the values that several sections of the report share."""
    summary, chains, _, polys = load(out)
    cfg = Config.from_dict(checks_config(out))
    C_event = float(cfg.C_event)
    good = _checks.hypotheses(read_table(out / "polytopes.csv")[0])
    admissible = summary[summary["cones_ok"]]
    ok = admissible[admissible["polytope"].isin(good)]
    apart = admissible[~admissible["polytope"].isin(good)]
    chains = chains[chains["polytope"].isin(good)]
    checks = read_checks(out / "checks.csv").set_index("criterion")
    ratio = ok["C_hat_extreme"] / ok["M_over_m_extreme"]
    ok_chains = chains[chains["cones_ok"]]
    ends = ok.sort_values("beta").groupby(["polytope", "gamma"])
    first, last = ends.first(), ends.last()
    hit_grows = bool((last["hit_median"] > first["hit_median"]).all())
    T1_grows = bool((last["T1_max"] > first["T1_max"]).any())
    ratio_tol = float(cfg.ratio_tol)  # a wording rule of config.toml
    tracks = bool((ratio - 1).abs().max() <= ratio_tol)
    return SimpleNamespace(**{k: v for k, v in locals().items() if k not in ("out", "ends")})


def _header(t: ReportTemplate, c: SimpleNamespace) -> str:
    """Title, setup, the polytopes and where the theorem's initial condition exists."""
    cfg, polys = c.cfg, c.polys
    rows = [
        t(
            "polytope_row",
            name=name,
            c0=f"{p['c0']:.4f}",
            equinorm=p["equinorm"],
            acute=p["acute_cones"],
            angle=f"{p['max_cone_angle_deg']:.1f}",
            threshold=f"{p['beta_threshold']:.0f}",
        )
        for name, p in polys.iterrows()
    ]
    return t(
        "header",
        draws=cfg.draws,
        chains=cfg.chains,
        tokens_per_vertex=cfg.tokens_per_vertex,
        rows="\n".join(rows),
        not_acute=", ".join(
            t("not_acute", name=n, angle=f"{p['max_cone_angle_deg']:.0f}")
            for n, p in polys.iterrows()
            if not bool(p["acute_cones"])
        ),
        good=", ".join(sorted(c.good)),
        margin=f"{cfg.margin:g}",
    )


def _T1_bullet(t: ReportTemplate, c: SimpleNamespace) -> str:
    """T1: its values, and whether its largest value grows with β."""
    ok, T1_grows = c.ok, c.T1_grows
    T1s = sorted(set(ok["T1_min"]).union(ok["T1_max"]))
    T1_one = (c.ok_chains.groupby(["polytope", "gamma", "beta", "draw"])["T1"].first() == 1).mean()
    return t(
        "T1",
        good=", ".join(sorted(c.good)),
        T1s=", ".join(f"{v:g}" for v in T1s),
        grows=t("grows" if T1_grows else "does_not_grow"),
        why=t("farther_starts") if T1_grows else "",
        T1_one=f"{T1_one:.0%}",
    )


def _hitting_bullet(t: ReportTemplate, c: SimpleNamespace) -> str:
    """The hitting time against β, beside T1."""
    ok, first, last, hit_grows = c.ok, c.first, c.last, c.hit_grows
    hit_flat = bool((last["hit_median"] == first["hit_median"]).all())
    return t(
        "hitting",
        trend=t("grows_with_beta" if hit_grows else "unchanged" if hit_flat else "not_every"),
        ends="; ".join(
            f"{n}, γ = {g:g}: {_fmt(first.loc[(n, g), 'hit_median'])} → "
            f"{_fmt(last.loc[(n, g), 'hit_median'])}"
            for n, g in first.index
        ),
        C_event=f"{c.C_event:g}",
        hit_min=_fmt(ok["hit_median"].min()),
        hit_max=_fmt(ok["hit_median"].max()),
        extreme_max=_fmt(ok["hit_extreme_median"].max()),
        T1_min=_fmt(ok["T1_median"].min()),
        T1_max=_fmt(ok["T1_median"].max()),
        cause=t("cause") if hit_grows and c.T1_grows else "",
    )


def _C_bullet(t: ReportTemplate, c: SimpleNamespace) -> str:
    """Whether the constant C is universal, and how it tracks M/m (check universal_C)."""
    ok, checks, ratio, tracks = c.ok, c.checks, c.ratio, c.tracks
    far = ok["M_over_m_extreme"] * ok["m_extreme"]
    m_slope = (
        float(np.polyfit(np.log(ok["beta"]), np.log(ok["m_extreme"]), 1)[0])
        if ok["beta"].nunique() > 1
        else float("nan")
    )
    worst = ok.loc[ok["C_hat_extreme"].idxmax()]
    worst_rnd = ok.loc[ok["C_hat_random"].idxmax()]
    factor = float(checks.loc["universal_C", "measured"])
    return t(
        "C",
        universal=t(
            "not_universal" if checks.loc["universal_C", "pass"] == "false" else "universal"
        ),
        grows=t("grows" if factor > 1 else "does_not_grow"),
        factor=f"{factor:.3g}",
        C_random=_fmt(worst_rnd["C_hat_random"]),
        random_polytope=worst_rnd["polytope"],
        random_gamma=f"{worst_rnd['gamma']:g}",
        random_beta=f"{worst_rnd['beta']:g}",
        C_extreme=_fmt(worst["C_hat_extreme"]),
        extreme_polytope=worst["polytope"],
        extreme_gamma=f"{worst['gamma']:g}",
        extreme_beta=f"{worst['beta']:g}",
        equals=t("equals" if tracks else "not_equal"),
        ratio_tol=f"{c.ratio_tol:g}",
        ratio_min=f"{ratio.min():.3f}",
        ratio_max=f"{ratio.max():.3f}",
        hardmax=t("hardmax_step") if tracks else "",
        m_max=_fmt(ok["m_extreme"].max()),
        m_min=_fmt(ok["m_extreme"].min()),
        m_slope=f"{m_slope:.3f}",
        far_min=_fmt(far.min()),
        far_max=_fmt(far.max()),
        unbounded=t("unbounded" if m_slope < 0 else "plain"),
    )


def _correction_bullet(t: ReportTemplate, c: SimpleNamespace) -> str:
    """The corrected statement with M in place of m (check universal_C/M_variant)."""
    ok = c.ok
    passed = c.checks.loc["universal_C/M_variant", "pass"]
    return t(
        "correction",
        outcome=t("passes") if passed == "true" else t("fails") if passed == "false" else "NA",
        per_gamma="; ".join(
            t(
                "per_gamma",
                C=_fmt(g["C_max_hat"].max()),
                gamma=f"{gamma:g}",
                inverse=f"{1 / (1 - gamma):.3g}",
            )
            for gamma, g in ok.groupby("gamma")
        ),
        p_min=f"{ok['P_event_T1_max'].min():.2f}",
        p_max=f"{ok['P_event_T1_max'].max():.2f}",
        bound_min=f"{ok['bound'].min():.2f}",
        bound_max=f"{ok['bound'].max():.2f}",
    )


def _probability_bullet(t: ReportTemplate, c: SimpleNamespace) -> str:
    """The probability bound at T1, and whether the event is deterministic given the start."""
    ok, chains, ok_chains, C_event = c.ok, c.chains, c.ok_chains, c.C_event
    event = ok_chains["vertex_ok_at_T1"] & (ok_chains["C_at_T1"] <= C_event)
    per_start = event.groupby(
        [ok_chains[k] for k in ("polytope", "gamma", "beta", "start", "draw")]
    ).mean()
    per_start_01 = float(((per_start == 0) | (per_start == 1)).mean())
    return t(
        "probability",
        vertex_ok=f"{chains.loc[chains['cones_ok'], 'vertex_ok_at_T1'].mean():.1%}",
        C_event=f"{C_event:g}",
        deterministic=f"{per_start_01:.0%}",
        given=(
            t("deterministic", exactly=t("exactly") if c.tracks else "")
            if per_start_01 == 1
            else t("random")
        ),
        p_min=f"{ok['P_event_T1'].min():.2f}",
        p_max=f"{ok['P_event_T1'].max():.2f}",
    )


def _event_check(t: ReportTemplate, c: SimpleNamespace) -> str:
    """The hitting times of the recorded paths against first_passage's ReachVertices."""
    same = _checks.paths_agree(c.chains)
    return t("event_check", same=same.sum(), chains=same.size)


def _outside(t: ReportTemplate, c: SimpleNamespace) -> str | None:
    """The polytopes outside the hypotheses, shown apart."""
    apart = c.apart
    if apart.empty:
        return None
    a_growth = (
        apart.sort_values("beta")
        .groupby(["polytope", "gamma"])["C_hat_extreme"]
        .agg(lambda col: col.iloc[-1] / col.iloc[0])
    )
    return t(
        "outside",
        polytopes=", ".join(sorted(apart["polytope"].unique())),
        growth_min=f"{a_growth.min():.2f}",
        growth_max=f"{a_growth.max():.2f}",
        C_extreme=_fmt(apart["C_hat_extreme"].max()),
        C_max=_fmt(apart["C_max_hat"].max()),
    )


def _tables(t: ReportTemplate, c: SimpleNamespace) -> str:
    """One table per (polytope, γ), and the list of figures."""
    tables = [
        _table(t, name, gamma, s, "" if name in c.good else t("outside_tag"))
        for (name, gamma), s in c.summary.groupby(["polytope", "gamma"], sort=True)
    ]
    return "\n".join([*tables, t("figures")])


def report(out: Path, template: ReportTemplate) -> str:
    """Markdown report from the tables in ``out``: measured numbers beside Thm 5.2's, one
    renderer per section."""
    c = inputs(Path(out))
    sections = (
        _header,
        _T1_bullet,
        _hitting_bullet,
        _C_bullet,
        _correction_bullet,
        _probability_bullet,
        _event_check,
        _outside,
        _tables,
    )
    texts = [section(template, c) for section in sections]
    return "\n".join(text for text in texts if text is not None)
