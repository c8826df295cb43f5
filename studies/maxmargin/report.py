"""The report of the maxmargin study: the parts of ``report.md`` filled from the tables in ``out``
only."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from metastab.results import read_table
from metastab.studies.study import ReportTemplate

from .checks import (
    _checks,
)
from .config import Config


def _inputs(out: Path) -> SimpleNamespace:
    """The tables of ``out`` and the values that several sections of the report share."""
    run = json.loads((out / "run.json").read_text())
    quick = bool(run.get("quick"))
    cfg = Config.from_dict(run["config"])
    rows = _checks(out, cfg)  # the recorded table, typed as the checks read it
    r4, _ = read_table(out / "e4_runs.csv")
    c4, _ = read_table(out / "e4_curves.csv")
    return SimpleNamespace(**{k: v for k, v in locals().items() if k != "run"})


def _summary(t: ReportTemplate, c: SimpleNamespace) -> str:
    """Title, the papers and the method, and the table of every criterion."""
    quick, cfg, rows = c.quick, c.cfg, c.rows
    e4c = cfg.e4
    return t(
        "summary",
        quick=(
            t(
                "quick",
                runs=e4c.runs,
                n=e4c.n,
                T=e4c.T,
                d=e4c.d,
                steps=e4c.steps,
                instances=cfg.e6.instances,
            )
            + "\n\n"
            if quick
            else ""
        ),
        rows="\n".join(
            t(
                "criterion",
                experiment=e,
                what=w,
                measured=m,
                reference=r,
                ok=t("yes" if ok else "no"),
            )
            for e, w, m, r, ok, *_ in rows
        ),
        passed=sum(row[4] for row in rows),
        criteria=len(rows),
    )


def _e4_notes(t: ReportTemplate, c: SimpleNamespace) -> str:
    """Notes on E4: selections, nuclear-norm certificates, the ridge, local optimality."""
    r4, c4, cfg = c.r4, c.c4, c.cfg
    side = json.loads((c.out / "e4_runs.csv.json").read_text())
    steps = int(c4.iteration.max())
    kinds = r4.groupby("param").selection.value_counts().unstack(fill_value=0)
    gaps = r4.nuc_gap.dropna()
    noridge = float(
        c4[(c4.param == "KQ, no ridge") & (c4.iteration == steps)].corr_nuc_mean.iloc[0]
    )
    ridge = float(c4[(c4.param == "KQ") & (c4.iteration == steps)].corr_nuc_mean.iloc[0])
    return t(
        "e4_notes",
        selections="; ".join(
            f"{p}: " + ", ".join(f"{k} {int(v)}" for k, v in kinds.loc[p].items() if v)
            for p in kinds.index
        ),
        gap_max=f"{gaps.max():.1e}",
        solves=side["e4_timing"]["svm_solves"],
        gap_median=f"{gaps.median():.1e}",
        ridge=f"{cfg.e4.reg_kq:.3g}",
        steps=steps,
        corr_ridge=f"{ridge:.4f}",
        corr_no_ridge=f"{noridge:.4f}",
        frozen_no_ridge=_frozen(r4, "KQ, no ridge"),
        frozen_ridge=_frozen(r4, "KQ"),
        underflow=(
            t("underflow", farther=t("farther" if noridge < ridge else "no_farther"))
            if _frozen_count(r4, "KQ, no ridge")
            else t("plain")
        ),
        bad=_bad(t, r4, cfg.aligned_corr),
        first=" / ".join(f"{p} {_first(t, c4, p)}" for p in ("W", "KQ")),
    )


def _e6_table(t: ReportTemplate, c: SimpleNamespace) -> str:
    """E6: feasibility and rank of the Frobenius SVM per (n, d)."""
    r6, _ = read_table(c.out / "e6_ranks.csv")
    table = (
        r6.groupby(["n", "d"])
        .agg(
            feasible=("feasible", "sum"),
            instances=("feasible", "size"),
            ill=("ill_conditioned", "sum"),
            rank=("rank_fro", lambda r: r[r >= 0].mean() if (r >= 0).any() else np.nan),
        )
        .reset_index()
    )
    rows = [
        t(
            "e6_row",
            n=int(r.n),
            d=int(r.d),
            feasible=int(r.feasible),
            instances=int(r.instances),
            ill=int(r.ill),
            rank="—" if np.isnan(r.rank) else f"{r.rank:.2f}",
            independent=_INDEPENDENT.get((int(r.n), int(r.d)), ""),
        )
        for r in table.itertuples()
    ]
    return t("e6", rows="\n".join(rows))


def _hardmax_limit(t: ReportTemplate, c: SimpleNamespace) -> str:
    """The hardmax limit along the SVM ray and the NGD paths."""
    cfg = c.cfg
    hard, _ = read_table(c.out / "hardmax.csv")
    ray = hard[hard.kind == "SVM ray"]
    bound = hard[hard.kind == "bound"]
    excess = float((ray.gap.values - bound.gap.values).max())
    big = ray[ray.R == ray.R.max()]
    falling = sum(
        bool((np.diff(grp.gap.to_numpy()) < 0).all())
        for _, grp in ray.groupby("source", sort=False)
    )
    paths = []
    for source, grp in hard[hard.kind == "GD path"].groupby("source", sort=False):
        grp = grp[grp.gap > 0]
        half = grp[grp.R >= grp.R.max() / 2]
        steps = np.diff(half.R.to_numpy())
        rate = np.polyfit(half.R, np.log(half.gap), 1)[0]
        paths.append(
            t(
                "path",
                source=source,
                reach=f"{grp.R.max():.1f}",
                deviation=f"{np.abs(steps / steps.mean() - 1).max():.1e}",
                slope=f"{rate:.3f}",
            )
        )
    return t(
        "hardmax",
        falling=falling,
        problems=ray.source.nunique(),
        beta=f"{ray.R.max():g}",
        gaps=", ".join(f"{g:.1e} ({s})" for s, g in zip(big.source, big.gap)),
        bound=(
            t("bound_holds")
            if excess <= cfg.hardmax_roundoff
            else t("bound_exceeded", excess=f"{excess:.1e}")
        ),
        excess=f"{excess:.1e}",
        roundoff=f"{cfg.hardmax_roundoff:g}",
        paths="; ".join(paths),
    )


def report(out: Path, template: ReportTemplate) -> str:
    """Markdown report of the max-margin study from the tables in ``out``, one renderer per
    section."""
    c = _inputs(Path(out))
    sections = (_summary, _e4_notes, _e6_table, _hardmax_limit)
    return "\n".join(section(template, c) for section in sections) + "\n"


# an independent numpy/NNLS run of the same generator, not part of this package (feasible
# instances out of 100, mean Frobenius rank)
_INDEPENDENT = {
    (5, 2): "33, 2.0",
    (5, 3): "95, 2.99",
    (5, 4): "100, 3.97",
    (5, 5): "100, 4.9",
    (5, 10): "100, 5.0",
    (5, 15): "100, 5.0",
    (5, 20): "100, 5.0",
    (10, 2): "5, 2.0",
    (10, 3): "17, 3.0",
    (10, 4): "93, 4.0",
    (10, 5): "100, 5",
    (10, 10): "100, 10",
    (10, 15): "100, 10",
    (10, 20): "100, 10",
}


def _frozen_count(r4, param):
    return int((r4[r4.param == param].frozen_from >= 0).sum())


def _frozen(r4, param):
    grp = r4[r4.param == param]
    return f"{int((grp.frozen_from >= 0).sum())}/{len(grp)}"


def _bad(t: ReportTemplate, r4, aligned):
    bad = r4[r4.selection == "not locally optimal"]
    if not len(bad):
        return t("none")
    own = {"W": ("corr_fro_final", "Frobenius")}
    parts = []
    for row in bad.itertuples():
        col, name = own.get(row.param, ("corr_nuc_final", "nuclear"))
        corr = getattr(row, col)
        parts.append(
            t(
                "bad_run",
                param=row.param,
                run=row.run,
                name=name,
                corr=f"{corr:.4f}",
                aligned=t("aligned") if corr > aligned else "",
            )
        )
    return "; ".join(parts)


def _first(t: ReportTemplate, c4, param):
    grp = c4[(c4.param == param) & (c4.max_softmax_mean > 0.99)]
    return int(grp.iteration.min()) if len(grp) else t("never")
