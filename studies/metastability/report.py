"""The report of the metastability study: the parts of ``report.md`` filled from the tables in
``out`` only, chosen by computed conditions (the runner adds the checks and the verdict).

Setup and hypotheses of [FW] Thm 5.4, how far in β each engine reached and at what cost, the
measured exponent beside the theorem's over the direct and the extended range, the cross-check
of the two engines, the effect of ``merge_tol``, the bound on P[T2 >= t] at every β with its
looseness, and memorylessness.
"""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import scipy.stats as sps

from metastab.results import read_table
from metastab.studies.render import ci as _ci
from metastab.studies.render import fmt as _fmt
from metastab.studies.render import fmt_p, position
from metastab.studies.render import md_table as _table
from metastab.studies.render import spread as _spread
from metastab.studies.runner import read_tables
from metastab.studies.study import ReportTemplate
from metastab.studies.verdict import checks_config, read_checks, unpowered

from . import checks as _checks
from .config import Config


def _wider_sentence(t: ReportTemplate, fits: pd.DataFrame, hull: pd.DataFrame) -> str:
    """Which of the profile and bootstrap intervals of b is wider, fit by fit, and where the
    CV of T2 exceeds 1 (there the geometric model understates the variance)."""
    width_p = fits["b_high"] - fits["b_low"]
    width_b = fits["b_boot_high"] - fits["b_boot_low"]
    boot = fits[width_b > width_p]
    names = [
        f"{r['range']} ({'T2' if r['event'] == 'hull' else 'ball'})" for _, r in boot.iterrows()
    ]
    over = hull[hull["cv"] > 1]
    if over.empty:
        cv = t("cv_below", cv_max=f"{hull['cv'].max():.3f}")
    else:
        where = "; ".join(
            f"{e}: β = " + ", ".join(f"{b:g} ({c:.3f})" for b, c in zip(g["beta"], g["cv"]))
            for e, g in over.groupby("engine")
        )
        cv = t("cv_above", count=len(over), total=len(hull), where=where)
    return t(
        "wider",
        count=len(boot),
        fits=len(fits),
        names=f" ({', '.join(names)})" if names else "",
        cv=cv,
    )


def _exponent_statement(t: ReportTemplate, checks: pd.DataFrame) -> str:
    """The sentence the report states about the exponent, chosen by the checks' numbers."""
    rows = checks.set_index("criterion")
    if "exponent_vs_c0" not in rows.index:
        return t("too_short")
    e, w = rows.loc["exponent_vs_c0"], rows.loc["exponent_with_prefactor_vs_c0"]
    k, sens = rows.loc["prefactor_k"], rows.loc["exponent_range_sensitivity"]
    c0 = float(e["threshold"])
    parts = [
        t(
            "vs_c0",
            b=f"{e['measured']:.4f}",
            b_low=f"{e['low']:.4f}",
            b_high=f"{e['high']:.4f}",
            c0=f"{c0:.4g}",
            c0_where=position(c0, e["low"], e["high"]),
            bk=f"{w['measured']:.4f}",
            bk_low=f"{w['low']:.4f}",
            bk_high=f"{w['high']:.4f}",
            c0_where_k=position(c0, w["low"], w["high"]),
            k=f"{k['measured']:.3g}",
            k_low=f"{k['low']:.3g}",
            k_high=f"{k['high']:.3g}",
        )
    ]
    if k["low"] > 0 or k["high"] < 0:
        parts.append(t("prefactor_needed"))
    if sens["measured"] > sens["threshold"]:
        parts.append(
            t(
                "range_sensitive",
                moved=f"{sens['measured']:.4f}",
                width=f"{sens['threshold']:.4f}",
            )
        )
    inside = [position(c0, r["low"], r["high"]) == "inside the interval" for r in (e, w)]
    within = f"{max(abs(e['measured'] - c0), abs(w['measured'] - c0)):.3f}"
    if all(inside):
        parts.append(t("consistent"))
    elif any(inside):
        parts.append(t("undecided", within=within))
    else:
        sides = {position(c0, r["low"], r["high"]) for r in (e, w)}
        side = (
            "side_depends"
            if len(sides) > 1
            else "side_below"
            if sides == {"above the interval"}
            else "side_above"
        )
        parts.append(t("excluded", within=within, side=t(side)))
    return "; ".join(parts) + "."


def _fit_row(fits: pd.DataFrame, label: str, event: str = "hull"):
    """The fit of ``exponent.csv`` on range ``label`` for ``event``, or None."""
    f = fits[(fits["range"] == label) & (fits["event"] == event)]
    return None if f.empty else f.iloc[0]


def _chi2_p(fit) -> float:
    return float(sps.chi2.sf(fit["deviance"], fit["df"]))


def _fits_law(cfg: Config, fit) -> bool:
    """The wording rule `fit_level` of config.toml."""
    return _chi2_p(fit) >= float(cfg.fit_level)


def inputs(out: Path) -> SimpleNamespace:
    """The tables of ``out`` and the values that several sections of the report share."""
    out = Path(out)
    per, meta = read_table(out / "per_beta.csv")
    fits, slopes, bound, cross, tol, merge, starts = read_tables(
        out,
        "exponent.csv",
        "local_slopes.csv",
        "bound.csv",
        "crosscheck.csv",
        "merge_tol.csv",
        "merge.csv",
        "exponent_start.csv",
    )
    checks = read_checks(out / "checks.csv")
    # the run's configuration with the thresholds and wording rules of the checks
    cfg = Config.from_dict(checks_config(out))
    s, stop = meta["setup"], meta["stop"]
    fast_stop = meta.get("accelerated_stop", {})
    hyp = s["hypotheses"]
    b_thm = s["theorem_exponent"]

    def rows(engine, event):
        return per[(per["engine"] == engine) & (per["event"] == event)].sort_values("beta")

    direct, fast = rows("direct", "hull"), rows("accelerated", "hull")
    fast_ball = rows("accelerated", "ball").set_index("beta")
    direct_ball = rows("direct", "ball").set_index("beta")
    main = _fit_row(fits, "accelerated, extended") if not fast.empty else _fit_row(fits, "direct")
    tail = _fit_row(fits, "accelerated, tail")
    direct_fit = _fit_row(fits, "direct")
    passed = dict(zip(checks["criterion"], checks["pass"]))
    holds = passed.get("bound") == "true"
    hull_all = per[per["event"] == "hull"]
    agree = passed.get("engines_agree", "true") == "true"
    rows_c = checks.set_index("criterion")
    walls = (fast.set_index("beta")["wall_s"] + fast_ball["wall_s"]) if not fast.empty else None
    return SimpleNamespace(**{k: v for k, v in locals().items() if k not in ("out", "rows")})


def _header(t: ReportTemplate, c: SimpleNamespace) -> str:
    """Title, statement of the theorem, setup and the two engines."""
    meta, s, cfg, hyp = c.meta, c.s, c.cfg, c.hyp
    k = len(s["vertices"])
    exceptions = int(meta["ball_after_hull_chains"])
    return t(
        "header",
        shape=t("triangle") if k == 3 else t("polygon", k=k),
        c0=_fmt(s["c0"], 4),
        diameter=_fmt(s["diameter"], 4),
        n=s["n"],
        per_vertex=cfg.per_vertex,
        offset=f"{cfg.offset:g}",
        config_seed=cfg.config_seed,
        gamma=f"{s['gamma']:g}",
        eps=_fmt(s["eps"], 4),
        eps_over_gamma=_fmt(s["eps_over_gamma"], 4),
        equinorm=hyp["equinorm"],
        acute_cones=hyp["acute_cones"],
        separated=hyp["separated"],
        vertex_tokens=hyp["vertex_tokens"],
        eps_over_gamma_ge_2d=hyp["eps_over_gamma_ge_2d"],
        tau=_fmt(s["tau"], 3),
        C_needed=_fmt(s["C_needed"], 3),
        b_thm=_fmt(c.b_thm, 4),
        ball_order=t(
            "ball_inside" if exceptions == 0 else "ball_outside",
            count=meta["ball_after_hull_chains"],
        ),
        accelerated_chains=cfg.accelerated_chains,
        beta_first=f"{cfg.accelerated_beta_start:g}",
        beta_second=f"{cfg.accelerated_beta_start + cfg.accelerated_beta_step:g}",
        beta_last=f"{cfg.accelerated_beta_stop:g}",
        accelerated_seed=cfg.accelerated_seed,
        beta_start=f"{cfg.beta_start:g}",
        seed=cfg.seed,
    )


def _reach(t: ReportTemplate, c: SimpleNamespace) -> str | None:
    """How far in β the accelerated engine reached, and at what cost."""
    meta, fast_stop, direct, fast = c.meta, c.fast_stop, c.direct, c.fast
    fast_ball, walls = c.fast_ball, c.walls
    if fast.empty:
        return None
    big = fast[fast["mean"] >= 1e12]
    last = fast.iloc[-1]
    per_escape = fast["jumps"] / fast["events"]
    table = fast.assign(
        ball_wall=fast["beta"].map(fast_ball["wall_s"]),
        total=fast["beta"].map(walls),
        ball_mean=fast["beta"].map(fast_ball["mean"]),
        jumps_per=fast["jumps"] / fast["events"],
        mean_ci=[_ci(lo, hi) for lo, hi in zip(fast["mean_low"], fast["mean_high"])],
    )
    return t(
        "reach",
        beta=f"{last['beta']:g}",
        mean=_fmt(float(last["mean"])),
        escapes=int(last["events"]),
        chains=int(last["chains"]),
        ci=_ci(last["mean_low"], last["mean_high"]),
        passes_1e12=(
            t("passes_1e12", beta=f"{big['beta'].min():g}", count=len(big))
            if not big.empty
            else t("below_1e12")
        ),
        wall_max=f"{walls.max():.1f}",
        wall_median=f"{walls.median():.2f}",
        threads=meta["provenance"].get("threads", "?"),
        grid_end=(
            t("grid_complete")
            if fast_stop.get("reason") == "accelerated_beta_stop reached"
            else t("grid_early", reason=fast_stop.get("reason", "?"))
        ),
        direct_beta=f"{direct['beta'].max():g}",
        direct_mean=_fmt(float(direct["mean"].iloc[-1])),
        jump_growth=_fmt(float(per_escape.iloc[-1] / per_escape.iloc[0]), 3),
        mean_growth=_fmt(float(fast["mean"].iloc[-1] / fast["mean"].iloc[0]), 3),
        wall_growth=_fmt(float(walls.iloc[-1] / walls.iloc[0]), 3),
        table=_table(
            table,
            {
                "beta": "β",
                "chains": "chains",
                "events": "escapes T2",
                "mean": "E[T2]",
                "mean_ci": "95 % CI",
                "ball_mean": "E[T_ball]",
                "jumps_per": "events drawn per escape (T2)",
                "wall_s": "wall s (T2)",
                "ball_wall": "wall s (ball)",
                "total": "wall s (β)",
            },
        ),
    )


def _exponent_fits(t: ReportTemplate, c: SimpleNamespace) -> str:
    """The table of the Arrhenius fits, one row per range, engine and exit."""
    rows = [
        t(
            "fit_row",
            range=f["range"].split(", ", 1)[-1] if ", " in f["range"] else f["range"],
            engine=f["engine"],
            exit="T2" if f["event"] == "hull" else "ball",
            beta_min=f"{f['beta_min']:g}",
            beta_max=f"{f['beta_max']:g}",
            b=f"{f['b']:.3f}",
            b_low=f"{f['b_low']:.3f}",
            b_high=f"{f['b_high']:.3f}",
            b_boot_low=f"{f['b_boot_low']:.3f}",
            b_boot_high=f"{f['b_boot_high']:.3f}",
            deviance=f"{f['deviance']:.3g}",
            df=int(f["df"]),
            b_with_prefactor=_fmt(f["b_with_prefactor"], 4),
            b_with_prefactor_ci=(
                f"[{f['b_with_prefactor_low']:.3f}, {f['b_with_prefactor_high']:.3f}]"
                if np.isfinite(f["b_with_prefactor_low"])
                else "–"
            ),
            c_prefactor=_fmt(f["c_prefactor"], 3),
            p=_fmt(f["prefactor_lrt_p"], 2),
            ratio=f"{f['ratio_b_to_theorem']:.2f}",
        )
        for _, f in c.fits.iterrows()
    ]
    return t("exponent_fits", rows="\n".join(rows))


def _fit_values(fit) -> dict:
    """The range and the pure exponential fit of a row of ``exponent.csv``, for the text."""
    return dict(
        beta_min=f"{fit['beta_min']:g}",
        beta_max=f"{fit['beta_max']:g}",
        deviance=f"{fit['deviance']:.3g}",
        df=int(fit["df"]),
        p=_fmt(_chi2_p(fit), 2),
        ratio=f"{fit['ratio_b_to_theorem']:.2f}",
    )


def _exponent_text(t: ReportTemplate, c: SimpleNamespace) -> str:
    """The measured exponent beside the theorem's, range by range."""
    cfg, b_thm, main, tail = c.cfg, c.b_thm, c.main, c.tail
    direct_fit, rows_c = c.direct_fit, c.rows_c
    direct = extended = tail_text = declared = ball = ""
    if direct_fit is not None:
        direct = t(
            "direct_fit",
            beta_min=f"{direct_fit['beta_min']:g}",
            beta_max=f"{direct_fit['beta_max']:g}",
            b=f"{direct_fit['b']:.3f}",
            b_low=f"{direct_fit['b_low']:.3f}",
            b_high=f"{direct_fit['b_high']:.3f}",
        )
    if main is not None and main["engine"] == "accelerated":
        extended = t(
            "extended_fit",
            **_fit_values(main),
            betas=int(main["betas"]),
            chains=int(main["chains"]),
            b=f"{main['b']:.3f}",
            b_low=f"{main['b_low']:.3f}",
            b_high=f"{main['b_high']:.3f}",
            fits="fits" if _fits_law(cfg, main) else "does not fit",
            bk=f"{main['b_with_prefactor']:.3f}",
            bk_low=f"{main['b_with_prefactor_low']:.3f}",
            bk_high=f"{main['b_with_prefactor_high']:.3f}",
            c=f"{main['c_prefactor']:.2f}",
            deviance_k=f"{main['deviance_with_prefactor']:.3g}",
        )
    if tail is not None:
        tail_text = t(
            "tail_fit",
            **_fit_values(tail),
            b=f"{tail['b']:.4f}",
            b_low=f"{tail['b_low']:.4f}",
            b_high=f"{tail['b_high']:.4f}",
            boot_low=f"{tail['b_boot_low']:.4f}",
            boot_high=f"{tail['b_boot_high']:.4f}",
            fits="fits there" if _fits_law(cfg, tail) else "does not fit there either",
        )
    if "exponent" in rows_c.index:
        row = rows_c.loc["exponent"]
        declared = t(
            "declared",
            exceeds="exceeds" if row["pass"] == "true" else "does NOT exceed",
            b_thm=f"{b_thm:.3f}",
            b=f"{row['measured']:.4f}",
            low=f"{row['low']:.4f}",
            high=f"{row['high']:.4f}",
        )
    if "ball_exponent" in rows_c.index:
        be = rows_c.loc["ball_exponent"]
        pair = _checks.ball_and_hull(c.fits)  # the fits the row compares
        ball = t(
            "ball_exponent",
            b=f"{be['measured']:.4f}",
            low=f"{be['low']:.4f}",
            high=f"{be['high']:.4f}",
            relation=_checks.overlap_words(*pair) if pair is not None else "",
        )
    return t(
        "exponent_text",
        theorem=t("theorem", b_thm=f"{b_thm:.3f}"),
        direct=direct,
        extended=extended,
        tail=tail_text,
        declared=declared,
        ball=ball,
    )


def _exponent_start(t: ReportTemplate, c: SimpleNamespace) -> str | None:
    """The exponent against the start of the fitted range."""
    starts, checks, cfg = c.starts, c.checks, c.cfg
    if starts.empty:
        return None
    st = starts.assign(
        ci=[_ci(a, b, 5) for a, b in zip(starts["b_low"], starts["b_high"])],
        boot=[_ci(a, b, 5) for a, b in zip(starts["b_boot_low"], starts["b_boot_high"])],
        ci_k=[_ci(a, b, 4) for a, b in zip(starts["bk_low"], starts["bk_high"])],
        boot_k=[_ci(a, b, 4) for a, b in zip(starts["bk_boot_low"], starts["bk_boot_high"])],
        k_ci=[_ci(a, b, 3) for a, b in zip(starts["k_low"], starts["k_high"])],
        k_boot=[_ci(a, b, 3) for a, b in zip(starts["k_boot_low"], starts["k_boot_high"])],
        dev=[f"{d:.3g} / {int(f)}" for d, f in zip(starts["deviance"], starts["df"])],
        b5=[f"{v:.5f}" for v in starts["b"]],
        bk4=[f"{v:.4f}" for v in starts["bk"]],
        k3=[f"{v:.3g}" for v in starts["k"]],
        kp=[fmt_p(float(v)) for v in starts["k_lrt_p"]],
    )
    return t(
        "exponent_start",
        engine=starts["engine"].iloc[0],
        beta_max=f"{starts['beta_max'].max():g}",
        tail_from_beta=f"{cfg.tail_from_beta:g}",
        resamples=int(starts["n_bootstrap"].iloc[0]),
        table=_table(
            st,
            {
                "beta_start": "β_0",
                "betas": "β values",
                "b5": "b",
                "ci": "95 % profile",
                "boot": "95 % bootstrap",
                "dev": "deviance / df",
                "bk4": "b (with β^k)",
                "ci_k": "95 % profile",
                "boot_k": "95 % bootstrap",
                "k3": "k",
                "k_ci": "95 % profile",
                "k_boot": "95 % bootstrap",
                "kp": "p (k = 0)",
            },
        ),
        statement=_exponent_statement(t, checks),
    )


def _local_slopes(t: ReportTemplate, c: SimpleNamespace) -> str:
    """The local slope of log E[T2] against the merge-point gap, and the intervals."""
    slopes, merge, s, cfg = c.slopes, c.merge, c.s, c.cfg
    direct, fast, main = c.direct, c.fast, c.main
    hull_slopes = slopes[
        (slopes["event"] == "hull")
        & (slopes["engine"] == ("accelerated" if not fast.empty else "direct"))
    ]
    hull_slopes = hull_slopes.rename(columns={"beta_high": "beta"})
    merge = merge.merge(hull_slopes[["beta", "slope"]], on="beta", how="left")
    merge["predicted"] = (merge["beta"] * merge["gap"]).diff() / merge["beta"].diff()
    shown = merge[
        merge["beta"].isin(_spread(merge["beta"], 14))
        | (merge["beta"] <= float(direct["beta"].max() if not direct.empty else 0))
    ]
    third = max(1, len(hull_slopes) // 3)
    ordered = hull_slopes.sort_values("beta")["slope"]
    gaps = merge.sort_values("beta")["gap"]
    diagnostics = (
        t("diagnostics", range=main["range"], warnings=main["warnings"])
        if main is not None and isinstance(main["warnings"], str) and main["warnings"]
        else ""
    )
    return t(
        "local_slopes",
        first=f"{float(ordered.iloc[:third].median()):.3f}",
        last=f"{float(ordered.iloc[-third:].median()):.3f}",
        c0=f"{s['c0']:.4g}",
        gap_first=f"{gaps.iloc[0]:.3f}",
        gap_last=f"{gaps.iloc[-1]:.4f}",
        merge_steps=cfg.merge_steps,
        table=_table(
            shown,
            {
                "beta": "β",
                "slope": "local slope of log E[T2] (previous β → β)",
                "predicted": "Δ(βΔ(β)) / Δβ",
                "gap": "gap Δ(β) at the merge points",
                "centroid_norm": "‖u_a‖ (vertex: 1)",
                "spread": "group spread",
            },
        ),
        wider=_wider_sentence(t, c.fits, c.hull_all),
        diagnostics=diagnostics,
    )


def _crosscheck(t: ReportTemplate, c: SimpleNamespace) -> str | None:
    """Direct against the accelerated engine."""
    fits, cross, direct_fit = c.fits, c.cross, c.direct_fit
    if cross.empty:
        return None
    hc = cross[cross["event"] == "hull"]
    same = _fit_row(fits, "accelerated, direct range")
    exponents = (
        t(
            "same_beta_exponents",
            direct=f"{direct_fit['b']:.3f}",
            direct_low=f"{direct_fit['b_low']:.3f}",
            direct_high=f"{direct_fit['b_high']:.3f}",
            accelerated=f"{same['b']:.3f}",
            accelerated_low=f"{same['b_low']:.3f}",
            accelerated_high=f"{same['b_high']:.3f}",
        )
        if direct_fit is not None and same is not None
        else ""
    )
    return t(
        "crosscheck",
        table=_table(
            cross.assign(
                exit=cross["event"].map({"hull": "T2", "ball": "ball"}),
                d_ci=[
                    _ci(a, b) for a, b in zip(cross["direct_mean_low"], cross["direct_mean_high"])
                ],
                a_ci=[
                    _ci(a, b)
                    for a, b in zip(cross["accelerated_mean_low"], cross["accelerated_mean_high"])
                ],
                overlaps=cross["overlap"].map({True: "yes", False: "NO"}),
            ),
            {
                "exit": "exit",
                "beta": "β",
                "direct_events": "escapes (direct)",
                "direct_mean": "E[T] direct",
                "d_ci": "95 % CI",
                "accelerated_events": "escapes (accel.)",
                "accelerated_mean": "E[T] accelerated",
                "a_ci": "95 % CI ",
                "ratio": "ratio accel./direct",
                "overlaps": "overlap",
                "logrank_p": "log-rank p",
            },
        ),
        agreement=t("agree" if c.agree else "disagree"),
        overlaps=int(cross["overlap"].sum()),
        pairs=len(cross),
        p_min=_fmt(float(cross["logrank_p"].min()), 2),
        ratio_min=_fmt(float(cross["ratio"].min())),
        ratio_max=_fmt(float(cross["ratio"].max())),
        beta_min=f"{hc['beta'].min():g}",
        beta_max=f"{hc['beta'].max():g}",
        exponents=exponents,
    )


def _merge_tol(t: ReportTemplate, c: SimpleNamespace) -> str | None:
    """What `merge_tol` does to T2 and to the cost."""
    per, tol, s, cfg = c.per, c.tol, c.s, c.cfg
    if tol.empty:
        return None
    t0 = tol.sort_values("merge_tol")
    ref = float(t0.loc[np.isclose(t0["merge_tol"], cfg.merge_tol), "mean"].iloc[0])
    inside_tol = bool(((t0["mean_low"] <= ref) & (ref <= t0["mean_high"])).all())
    beta_top = float(per["beta"].max())
    return t(
        "merge_tol",
        log_prob_change=f"{4 * beta_top * math.sqrt(s['d']) * cfg.merge_tol:.1g}",
        beta_top=f"{beta_top:g}",
        merge_tol=f"{cfg.merge_tol:g}",
        beta=f"{t0['beta'].iloc[0]:g}",
        table=_table(
            t0.assign(ci=[_ci(a, b) for a, b in zip(t0["mean_low"], t0["mean_high"])]),
            {
                "merge_tol": "merge_tol",
                "escapes": "escapes",
                "mean": "E[T2]",
                "ci": "95 % CI",
                "jumps_per_escape": "events drawn per escape",
                "wall_s": "wall s",
                "logrank_p": "log-rank p vs the study's merge_tol",
            },
        ),
        count=len(t0),
        tol_max=_fmt(float(t0["merge_tol"].max())),
        tol_min=_fmt(float(t0["merge_tol"].min())),
        factor=f"{float(t0['mean'].max() / t0['mean'].min()):.2f}",
        inside=t("tol_inside" if inside_tol else "tol_outside"),
        p_min=_fmt(float(t0["logrank_p"].min()), 2),
        jumps_min=_fmt(float(t0["jumps_per_escape"].min()), 3),
        jumps_max=_fmt(float(t0["jumps_per_escape"].max()), 3),
    )


def _bound(t: ReportTemplate, c: SimpleNamespace) -> str:
    """The bound on P[T2 ≥ t] at every β, with its looseness."""
    tb, b_thm, main, rows_c = c.bound.copy(), c.b_thm, c.main, c.rows_c
    ratio_engine = "accelerated" if (tb["engine"] == "accelerated").any() else "direct"
    tr = tb[tb["engine"] == ratio_engine]
    ratio_slope = float(np.polyfit(tr["beta"], np.log(tr["mean_ratio"]), 1)[0])
    b_declared = (
        float(rows_c.loc["exponent", "measured"])
        if "exponent" in rows_c.index
        else float(main["b"])
    )
    shown_b = tb[
        (tb["engine"] == "direct")
        | tb["beta"].isin(_spread(sorted(tb.loc[tb["engine"] == "accelerated", "beta"]), 12))
    ]
    return t(
        "bound",
        samples=len(tb),
        table=_table(
            shown_b,
            {
                "engine": "engine",
                "beta": "β",
                "one_minus_bound_at_t2": "1 − bound at t = 2",
                "t_star": "t*",
                "first_escape": "first exit",
                "violation": "max(bound − P̂)",
                "median": "median T2",
                "bound_t_half": "bound's median",
                "median_ratio": "median ratio",
                "mean": "E[T2]",
                "bound_mean": "bound on E[T2]",
                "mean_ratio": "mean ratio",
            },
        ),
        holds=t("bound_holds" if c.holds else "bound_fails"),
        beta_min=f"{tb['beta'].min():g}",
        beta_max=f"{tb['beta'].max():g}",
        violation=_fmt(float(tb["violation"].max()), 3),
        positive=(
            t("before_first_exit")
            if bool((tb["t_star"] < tb["first_escape"]).all())
            else t(
                "past_first_exit",
                count=int((tb["t_star"] >= tb["first_escape"]).sum()),
                total=len(tb),
            )
        ),
        exceeds="exceeds" if bool((tb["mean_ratio"] > 1).all()) else "does not always exceed",
        ratio_min=_fmt(float(tb["mean_ratio"].min()), 3),
        ratio_max=_fmt(float(tb["mean_ratio"].max()), 3),
        engine=ratio_engine,
        slope=f"{ratio_slope:.3f}",
        expected=f"{b_declared - b_thm:.3f}",
    )


def _memoryless(t: ReportTemplate, c: SimpleNamespace) -> str:
    """Memorylessness of T2: the exponentiality test and the CV."""
    cfg, direct, fast = c.cfg, c.direct, c.fast
    both = c.hull_all  # T2 rows of both engines
    level = float(cfg.memoryless_level)
    rejected = int((both["memoryless_p"] <= level).sum())
    top = fast if not fast.empty else direct
    early, late = top[top["beta"] <= 12], top[top["beta"] >= top["beta"].max() - 10]
    cv_early, cv_late = float(early["cv"].median()), float(late["cv"].median())
    n_res = int(cfg.n_resamples)
    return t(
        "memoryless",
        resamples=n_res,
        p_floor=f"{1 / (n_res + 1):.3f}",
        rejected=rejected,
        samples=len(both),
        level=f"{level:g}",
        by_chance=f"{level * len(both):.0f}",
        verdict=t("not_memoryless" if rejected > len(both) / 2 else "no_evidence"),
        cv_min=_fmt(float(both["cv"].min()), 3),
        cv_max=_fmt(float(both["cv"].max()), 3),
        cv_early=f"{cv_early:.3f}",
        cv_late=f"{cv_late:.3f}",
        engine=top["engine"].iloc[0] if "engine" in top else "",
        d_early=f"{float(early['memoryless_D'].median()):.3f}",
        d_late=f"{float(late['memoryless_D'].median()):.3f}",
        explanation=t("sum_of_waits") if cv_early < 1 else "",
        closer=t("closer") if abs(cv_late - 1) < abs(cv_early - 1) else "",
        means=t("means", censored=int(both["censored"].sum()), chains=int(both["chains"].sum())),
    )


def _direct(t: ReportTemplate, c: SimpleNamespace) -> str | None:
    """Direct stepping per β and how far in β each engine reaches."""
    meta, s, cfg, stop = c.meta, c.s, c.cfg, c.stop
    direct, fast, direct_ball, main = c.direct, c.fast, c.direct_ball, c.main
    direct_fit, walls = c.direct_fit, c.walls
    if direct.empty:
        return None
    n_res = int(cfg.n_resamples)
    d = direct.assign(
        ball_mean=direct["beta"].map(direct_ball["mean"]),
        ball_events=direct["beta"].map(direct_ball["events"]),
        ball_p=[fmt_p(p, n_res) for p in direct["beta"].map(direct_ball["memoryless_p"])],
        p_t2=[fmt_p(p, n_res) for p in direct["memoryless_p"]],
        ball_wall=direct["beta"].map(direct_ball["wall_s"]),
        ball_steps=direct["beta"].map(direct_ball["steps_simulated"]),
        rate=(direct["token_steps"] + direct["beta"].map(direct_ball["token_steps"]))
        / (direct["wall_s"] + direct["beta"].map(direct_ball["wall_s"]))
        / 1e6,
        mean_ci=[_ci(lo, hi) for lo, hi in zip(direct["mean_low"], direct["mean_high"])],
    )
    wall = s["uniform_wall_beta"]
    slope = float(direct_fit["b"]) if direct_fit is not None else float(main["b"])
    last = d.iloc[-1]
    at_wall = float(last["mean"]) * math.exp(slope * (wall - float(last["beta"])))
    rate = float(d["steps_simulated"].sum() / d["wall_s"].sum())
    ball_rate = float(d["ball_steps"].sum() / d["ball_wall"].sum())
    budget = (
        t(
            "budget",
            mean=_fmt(stop["predicted_mean"], 3),
            chains=cfg.min_chains,
            chain_steps=_fmt(stop["predicted_chain_steps"], 3),
            allowed=_fmt(float(cfg.max_chain_steps), 3),
            seconds=_fmt(stop["predicted_chain_steps"] / rate, 3),
        )
        if stop["reason"] == "compute budget"
        else ""
    )
    accelerated = (
        t(
            "no_wall",
            mean=_fmt(float(fast["mean"].max())),
            beta=f"{fast['beta'].max():g}",
            past=f"{fast['beta'].max() - wall:.0f}",
            wall=_fmt(float(walls.max()), 2),
        )
        if not fast.empty
        else ""
    )
    return t(
        "direct",
        table=_table(
            d,
            {
                "beta": "β",
                "chains": "chains",
                "events": "exits T2",
                "censored": "censored",
                "mean": "E[T2]",
                "mean_ci": "95 % CI",
                "sample_median": "median T2",
                "cv": "CV of T2",
                "memoryless_D": "sup-distance D (T2)",
                "p_t2": "memoryless p (T2)",
                "ball_events": "exits ball",
                "ball_mean": "E[T_ball]",
                "ball_p": "memoryless p (ball)",
            },
        ),
        threads=meta["provenance"].get("threads", "?"),
        cost=_table(
            d,
            {
                "beta": "β",
                "chains": "chains",
                "max_steps": "max_steps",
                "wall_s": "wall s (T2)",
                "steps_simulated": "steps simulated (T2)",
                "ball_wall": "wall s (ball)",
                "ball_steps": "steps simulated (ball)",
                "rate": "M token-steps/s",
            },
        ),
        stop_beta=_fmt(stop.get("beta"), 3),
        reason=stop["reason"],
        budget=budget,
        rate=_fmt(rate / 1e6, 3),
        token_rate=_fmt(rate * s["n"] / 1e6, 3),
        ball_rate=_fmt(ball_rate / 1e6, 3),
        growth=f"{math.exp(slope):.1f}",
        wall=f"{wall:.2f}",
        wall_c0=f"{wall * s['c0']:.1f}",
        at_wall=_fmt(at_wall, 2),
        accelerated=accelerated,
    )


def stepping(t: ReportTemplate, checks: pd.DataFrame, reach: str) -> str:
    """Which checks rest on stepped chains and which on the accelerated engine alone, read from
    the checks table's ``sample`` column (the part ``stepping`` of ``t``; ``reach``: how far
    direct stepping went, in words)."""
    frame = checks.assign(sample=_checks.samples(checks).to_numpy())
    table = pd.DataFrame(
        [
            {
                "sample": label,
                **{
                    role: ", ".join(f"`{c}`" for c in g.loc[g["role"] == role, "criterion"]) or "–"
                    for role in ("claim", "control", "context")
                },
            }
            for key, label in _checks.SAMPLES.items()
            for g in [frame[frame["sample"] == key]]
        ]
    )
    untested = {c for names in unpowered(checks).values() for c in names}
    tested = frame[
        (frame["role"] == "claim")
        & (frame["pass"].str.lower() != "na")
        & ~frame["criterion"].isin(untested)
    ]
    stepped = tested[tested["sample"] != "accelerated"]
    return t(
        "stepping",
        table=_table(table, {c: c for c in table.columns}),
        claims=len(tested),
        stepped=f"{len(stepped)} {'rests' if len(stepped) == 1 else 'rest'}",
        names=", ".join(f"`{c}`" for c in stepped["criterion"]) or "none",
        reach=reach,
    )


def _stepping(t: ReportTemplate, c: SimpleNamespace) -> str:
    return stepping(
        t,
        c.checks,
        f"β = {c.direct['beta'].min():g}…{c.direct['beta'].max():g} (the budget's ladder, below)"
        if not c.direct.empty
        else "no β",
    )


def report(out: Path, template: ReportTemplate) -> str:
    """The study's markdown report, from the tables in ``out`` only: the parts of ``template``
    for the sections the tables have, in order."""
    c = inputs(Path(out))
    sections = (
        _header,
        _reach,
        _exponent_fits,
        _exponent_text,
        _exponent_start,
        _local_slopes,
        _crosscheck,
        _merge_tol,
        _bound,
        _memoryless,
        _stepping,
        _direct,
    )
    texts = [section(template, c) for section in sections] + [template("files")]
    return "\n".join(text for text in texts if text is not None) + "\n"
