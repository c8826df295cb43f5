"""The report of the sphere-metastability study: the parts of ``report.md`` filled from the tables
in ``out`` only."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from metastab.studies.render import ci as _ci
from metastab.studies.render import fmt as _fmt
from metastab.studies.render import fmt_p, position
from metastab.studies.render import md_table as _table
from metastab.studies.study import ReportTemplate
from studies.metastability.report import stepping

from .figures import inputs


def _row(c, criterion: str):
    if c.checks is None:
        return None
    hit = c.checks[c.checks["criterion"] == criterion]
    if hit.empty:
        return None
    return hit.iloc[0]


def _declared(c, event: str):
    f = c.fits
    at = f[(f["event"] == event) & np.isclose(f["beta_start"], c.config.fit_from_beta)]
    return None if at.empty else at.iloc[0]


def _header(t: ReportTemplate, c) -> str:
    s, cfg = c.s, c.config
    return t(
        "header",
        kappa=s["kappa"],
        sphere_dim=s["d"] - 1,
        cos_min=_fmt(s["cos_min"], 4),
        per_point=s["per_point"],
        n=s["n"],
        gamma=f"{s['gamma']:g}",
        delta=_fmt(s["delta"], 5),
        N=_fmt(math.exp(s["log_prefactor"]), 4),
        eps_jump=_fmt(s["eps_jump"], 4),
        chord=_fmt(s["jump_chord_min"], 4),
        eps_cap=_fmt(s["eps_cap"], 4),
        seed=cfg.seed,
        jump_betas=", ".join(f"{b:g}" for b in cfg.direct_jump_betas),
        jump_chains=cfg.direct_jump_chains,
        cap_betas=", ".join(f"{b:g}" for b in cfg.direct_cap_betas),
        cap_chains=cfg.direct_cap_chains,
        accelerated_seed=cfg.accelerated_seed,
        merge_tol=f"{cfg.merge_tol:g}",
        beta_first=f"{cfg.accelerated_beta_start:g}",
        beta_second=f"{cfg.accelerated_beta_start + cfg.accelerated_beta_step:g}",
        beta_last=f"{cfg.accelerated_beta_stop:g}",
        accelerated_jump_chains=cfg.accelerated_jump_chains,
        accelerated_cap_chains=cfg.accelerated_cap_chains,
    )


def _reach(t: ReportTemplate, c) -> str:
    fast = c.per[c.per["engine"] == "accelerated"]
    jump = fast[fast["event"] == "jump"].set_index("beta")
    cap = fast[fast["event"] == "cap"].set_index("beta")
    law = c.law[c.law["engine"] == "accelerated"].set_index("beta")
    top = float(jump.index.max())
    r = jump.loc[top]
    wall = fast.groupby("beta")["wall_s"].sum()
    frame = pd.DataFrame(
        {
            "beta": jump.index,
            "exact": law["exact_mean"].reindex(jump.index).to_numpy(),
            "jump": jump["mean"].to_numpy(),
            "jump_ci": [_ci(a, b) for a, b in zip(jump["mean_low"], jump["mean_high"])],
            "cap": cap["mean"].reindex(jump.index).to_numpy(),
            "cap_ci": [
                _ci(a, b)
                for a, b in zip(
                    cap["mean_low"].reindex(jump.index), cap["mean_high"].reindex(jump.index)
                )
            ],
            "ratio": (cap["mean"].reindex(jump.index) / jump["mean"]).to_numpy(),
            "events": (
                cap["jumps"].reindex(jump.index) / cap["events"].reindex(jump.index)
            ).to_numpy(),
            "wall": (jump["wall_s"] + cap["wall_s"].reindex(jump.index)).to_numpy(),
        }
    )
    ratio = frame.dropna(subset=["ratio"])
    ratio_text = ""
    if len(ratio) >= 2:
        first, last = ratio.iloc[0], ratio.iloc[-1]
        ratio_text = (
            t(
                "ratio",
                first=_fmt(first["ratio"], 3),
                first_beta=f"{first['beta']:g}",
                last=_fmt(last["ratio"], 3),
                last_beta=f"{last['beta']:g}",
                largest=_fmt(float(ratio["ratio"].max()), 3),
                smallest=_fmt(float(ratio["ratio"].min()), 3),
            )
            + "\n\n"
        )
    return t(
        "reach",
        beta=f"{top:g}",
        mean=_fmt(r["mean"], 3),
        exact=_fmt(law.loc[top, "exact_mean"], 3),
        escapes=int(r["events"]),
        chains=int(r["chains"]),
        ci=_ci(r["mean_low"], r["mean_high"]),
        cap_mean=_fmt(cap.loc[top, "mean"], 3) if top in cap.index else "–",
        wall_median=_fmt(float(wall.median()), 3),
        wall_max=_fmt(float(wall.max()), 3),
        wall_beta=f"{wall.idxmax():g}",
        ratio=ratio_text,
        table=_table(
            frame,
            {
                "beta": "β",
                "exact": "exact E[T_jump]",
                "jump": "E[T_jump]",
                "jump_ci": "95 % CI",
                "cap": "E[T_cap]",
                "cap_ci": "95 % CI",
                "ratio": "E[T_cap]/E[T_jump]",
                "events": "events drawn per cap escape",
                "wall": "wall s (β)",
            },
        ),
    )


def _law_text(t: ReportTemplate, c) -> str:
    law = c.law
    # the R^d token moved from u_a towards u_b: x = (1 − γ) u_a + γ u_b
    g, cos = c.s["gamma"], c.s["cos_min"]
    old, own = 1 - g + g * cos, (1 - g) ** 2 + g**2 + 2 * g * (1 - g) * cos
    bullets = []
    for engine in ("direct", "accelerated"):
        part = law[law["engine"] == engine]
        if part.empty:
            continue
        bullets.append(
            t(
                "law_engine",
                engine=engine,
                betas=len(part),
                beta_min=f"{part['beta'].min():g}",
                beta_max=f"{part['beta'].max():g}",
                chains=int(part["chains"].min()),
                p_min=fmt_p(float(part["ks_p"].min())),
                p_max=fmt_p(float(part["ks_p"].max())),
                control_max=fmt_p(float(part["control_p"].max())),
            )
        )
    beyond = law[(law["engine"] == "accelerated") & (law["exact_mean"] >= c.config.target_mean)]
    if not beyond.empty:
        bullets.append(
            t(
                "law_beyond",
                target=_fmt(float(c.config.target_mean), 2),
                beta_min=f"{beyond['beta'].min():g}",
                betas=len(beyond),
                p_min=fmt_p(float(beyond["ks_p"].min())),
                within=_fmt(
                    float((beyond["sample_mean"] / beyond["exact_mean"] - 1).abs().max()), 2
                ),
            )
        )
    return t(
        "law",
        bullets="".join(b + "\n" for b in bullets),
        old=_fmt(old, 3),
        own=_fmt(own, 3),
    )


def _cap_findings(t: ReportTemplate, c, cap) -> list[str]:
    """The exponent of T_cap, with and without the prefactor, and against T_jump."""
    row = _row(c, "cap_exponent")
    sens = _row(c, "cap_range_sensitivity")
    lines = [
        t(
            "cap_exponent",
            b=_fmt(cap["b"], 5),
            interval=(
                t(
                    "cap_interval",
                    ci=_ci(row["low"], row["high"], 5),
                    relation=f"Δ lies {position(row['threshold'], row['low'], row['high'])}",
                )
                if row is not None
                else ""
            ),
            sensitivity=(
                t(
                    "cap_sensitivity",
                    moved=_fmt(sens["measured"], 3),
                    more=t("more" if sens["measured"] > sens["threshold"] else "less"),
                )
                if sens is not None
                else t("plain")
            ),
        )
    ]
    pre, ratio = _row(c, "cap_exponent_with_prefactor"), _row(c, "cap_over_jump")
    if pre is not None:
        lines.append(
            t(
                "cap_prefactor",
                b=_fmt(pre["measured"], 5),
                ci=_ci(pre["low"], pre["high"], 5),
                k=_fmt(float(cap["k"]), 3),
                relation=position(pre["threshold"], pre["low"], pre["high"]),
            )
        )
    if ratio is not None:
        falls = ratio["measured"] < ratio["threshold"]
        b = c.fits[c.fits["event"] == "cap"].sort_values("beta_start")["b"].to_numpy()
        lines.append(
            t(
                "cap_over_jump",
                trend=t("falls" if falls else "goes"),
                first=_fmt(ratio["threshold"], 3),
                fit_from=f"{c.config.fit_from_beta:g}",
                last=_fmt(ratio["measured"], 3),
                falls=t("below_delta") if falls else "",
                rises=t("b_rises" if bool((np.diff(b) > 0).all()) else "b_unsteady"),
            )
        )
    return lines


def _exponents(t: ReportTemplate, c) -> str:
    fits = c.fits
    frame = fits.assign(
        b_ci=[_ci(a, b, 4) for a, b in zip(fits["b_low"], fits["b_high"])],
        b_boot=[_ci(a, b, 4) for a, b in zip(fits["b_boot_low"], fits["b_boot_high"])],
        a_ci=[_ci(a, b, 4) for a, b in zip(fits["a_low"], fits["a_high"])],
        bk_ci=[_ci(a, b, 4) for a, b in zip(fits["bk_low"], fits["bk_high"])],
    )
    findings = []
    jump, cap = _declared(c, "jump"), _declared(c, "cap")
    if jump is not None:
        ok = _row(c, "exponent")
        findings.append(
            t(
                "jump_exponent",
                b=_fmt(jump["b"], 5),
                ci=_ci(ok["low"], ok["high"], 5) if ok is not None else "",
                delta=_fmt(c.s["delta"], 5),
                where=(
                    t("inside" if ok["pass"] == "true" else "outside") if ok is not None else "–"
                ),
            )
        )
    if cap is not None:
        findings += _cap_findings(t, c, cap)
    return t(
        "exponents",
        fit_from=f"{c.config.fit_from_beta:g}",
        resamples=int(fits["n_bootstrap"].max()) if not fits.empty else 0,
        delta=_fmt(c.s["delta"], 5),
        a=_fmt(-c.s["log_prefactor"], 5),
        table=_table(
            frame,
            {
                "event": "event",
                "beta_start": "β_0",
                "beta_max": "β_max",
                "b": "b",
                "b_ci": "profile",
                "b_boot": "bootstrap",
                "a": "a",
                "a_ci": "a profile",
                "bk": "bk",
                "bk_ci": "bk profile",
                "k": "k",
            },
            digits=5,
        ),
        findings="".join(f + "\n" for f in findings),
    )


def _rd(t: ReportTemplate, c) -> str:
    ex = c.rd[c.rd["kind"] == "exponent"]
    if ex.empty:
        return t("rd_none")
    cap = c.fits[c.fits["event"] == "cap"].set_index("beta_start")
    frame = ex.assign(
        rd_ci=[_ci(a, b, 4) for a, b in zip(ex["b_low"], ex["b_high"])],
        rd_k=[_ci(a, b, 4) for a, b in zip(ex["bk_low"], ex["bk_high"])],
        sphere=ex["beta_start"].map(cap["b"]) if not cap.empty else np.nan,
        sphere_k=ex["beta_start"].map(cap["bk"]) if not cap.empty else np.nan,
    )
    bullets = []
    for name, model in (("rd_exponent", "pure"), ("rd_exponent_with_prefactor", "with_prefactor")):
        row = _row(c, name)
        if row is not None:
            bullets.append(t("rd_model", model=t(model), rule=row["rule"]))
    return t(
        "rd",
        table=_table(
            frame,
            {
                "beta_start": "β_0",
                "beta_max": "R^d β_max",
                "b": "R^d b",
                "rd_ci": "profile",
                "sphere": "sphere T_cap b",
                "bk": "R^d bk",
                "rd_k": "profile",
                "sphere_k": "sphere T_cap bk",
            },
            digits=5,
        ),
        bullets="".join(b + "\n" for b in bullets),
    )


def _merge_tol(t: ReportTemplate, c) -> str:
    tol = c.tol.assign(ci=[_ci(a, b) for a, b in zip(c.tol["mean_low"], c.tol["mean_high"])])
    row = _row(c, "merge_tol")
    return t(
        "merge_tol",
        beta=f"{tol['beta'].iloc[0]:g}",
        check=(
            t(
                "merge_check",
                rule=row["rule"],
                outcome=t("passes" if row["pass"] == "true" else "fails"),
            )
            if row is not None
            else ""
        ),
        table=_table(
            tol,
            {
                "merge_tol": "merge_tol",
                "escapes": "escapes",
                "mean": "E[T_cap]",
                "ci": "95 % CI",
                "jumps_per_escape": "events drawn per escape",
                "logrank_p": "log-rank p",
            },
        ),
    )


def _stepping(t: ReportTemplate, c) -> str:
    direct = c.per[c.per["engine"] == "direct"].sort_values("beta")
    reach = "; ".join(
        f"T_{name} at β = {g['beta'].min():g}…{g['beta'].max():g} (the last β took "
        f"{_fmt(g['wall_s'].iloc[-1], 2)} s for {int(g['chains'].iloc[-1])} chains; E[T] grew "
        f"{_fmt(g['mean'].iloc[-1] / g['mean'].iloc[-2], 2)}-fold from the β before, and so "
        "would the next β's cost)"
        for name, g in direct.groupby("event", sort=False)
        if len(g) > 1
    )
    return stepping(t, c.checks, reach or "no β")


def report(out: Path, template: ReportTemplate) -> str:
    """The study's markdown report, from the tables in ``out`` only (the runner adds the checks
    table and the verdict)."""
    c = inputs(Path(out))
    sections = (_header, _reach, _law_text, _exponents, _rd, _merge_tol, _stepping)
    return "\n".join([*(section(template, c) for section in sections), template("files")]) + "\n"
