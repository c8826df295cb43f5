"""Checks of the staircase study (GKPR dynamic metastability), from its tables only.

Claims: the time between merges grows like e^{β(1 − cos Δθ)} (docs: models#sphere-statements (5)),
tested (1) from prepared two-cap starts, one censored scaling fit per angle
(:func:`metastab.stats.fit_scaling`) of log(T β sin² Δθ) = a + b·β(1 − cos Δθ): the prefactor
1/(β sin² Δθ) fixed by the two-cluster theory and Δθ each start's exact angle, so that two
parameters are fitted (a free c log β term is nearly collinear with β on a short grid), b against
1; (2) from random starts, one fit of the plateau durations, each divided by its
two-cluster prefactor, against s = β(1 − cos Δθ) of the closest pair at the plateau's start:
slope 1. Controls: a rate 10 % off must be rejected by the same tolerance; RK4 durations must
match the quadrature; the circle's cluster decomposition must give the kernel's count. Context:
the claim's fit at the nominal angle, with a free prefactor and with none. The cap containment
bound is context only: its exact form in the paper could not be verified.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from metastab import stats
from metastab.results import read_table
from metastab.studies.compare import PASS_IF, PASS_IF_EQUAL, AllOf, Bound, Within, declare
from metastab.studies.verdict import check, checks_frame

from .config import Config

SOURCE = "GKPR arXiv 2410.06833 (docs: models#sphere-statements (5))"
FIT_COLUMNS = ["beta", "chain", "steps", "censored", "max_steps", "start"]


def _fit(frame: pd.DataFrame, x: str, prefactor: bool, level: float):
    # deterministic durations: the deviance says the Poisson law does not fit (it need not)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.DiagnosticWarning)
        return stats.fit_scaling(
            frame,
            x=x,
            law="exponential",
            prefactor=prefactor,
            start="start",
            confidence_level=level,
        )


def prepared_fits(out: Path, level: float) -> pd.DataFrame:
    """Per angle of the post-LN prepared starts, the fitted exponent over 1 − cos Δθ:

    - ``ratio`` (the claim's form): the prefactor fixed by theory, T ∝ e^(b s) / (β sin² Δθ),
      s = β(1 − cos Δθ) at each start's exact angle Δθ between the caps' centres: a two-parameter
      fit of log(T β sin² Δθ) = a + b s, well-conditioned whatever the β grid;
    - ``ratio_nominal``: the same at the nominal angle (each cap's jitter ignored);
    - ``ratio_free``: a free prefactor, log T = a + bβ + c log β (three parameters; β and log β
      are nearly collinear on a short grid: ``correlation``), with its ``prefactor`` c;
    - ``ratio_without_prefactor``: the plain Arrhenius fit log T = a + bβ;
    - ``ratio_quadrature`` and ``ratio_quadrature_free``: the quadrature's own log T fitted in
      the claim's form and with a free prefactor (c: ``prefactor_quadrature``)."""
    frame = read_table(Path(out) / "prepared.csv")[0]
    rows = []
    for angle, g in frame[frame["part"] == "post-ln"].groupby("angle"):
        u = 1 - math.cos(angle)
        exact = g.assign(
            s=g["beta"] * (1 - np.cos(g["separation"])),
            steps=(g["steps"] - g["start"]) * g["beta"] * np.sin(g["separation"]) ** 2,
            start=0.0,
        )
        nominal = g.assign(
            steps=(g["steps"] - g["start"]) * g["beta"] * math.sin(angle) ** 2, start=0.0
        )[["beta", "chain", "steps", "censored", "start"]]
        fit = _fit(exact[["s", "chain", "steps", "censored", "start"]], "s", False, level)
        free = _fit(g[FIT_COLUMNS], "beta", True, level)
        plain = _fit(g[FIT_COLUMNS], "beta", False, level)
        quad = g["log_time_quadrature"] + np.log(g["beta"] * np.sin(g["separation"]) ** 2)
        quad_fixed = np.polyfit(exact["s"], quad, 1)[0]
        per_beta = g.groupby("beta")["log_time_quadrature"].mean()
        design = np.c_[np.ones(len(per_beta)), per_beta.index, np.log(per_beta.index)]
        quad_free = np.linalg.lstsq(design, per_beta.to_numpy(), rcond=None)[0]
        rows.append(
            {
                "angle": float(angle),
                "rate": u,
                "ratio": fit.slope,
                "ratio_nominal": _fit(nominal, "beta", False, level).slope / u,
                "ratio_free": free.slope / u,
                "prefactor": free.prefactor,
                "correlation": float(np.corrcoef(per_beta.index, np.log(per_beta.index))[0, 1]),
                "ratio_without_prefactor": plain.slope / u,
                "ratio_quadrature": float(quad_fixed),
                "ratio_quadrature_free": float(quad_free[1]) / u,
                "prefactor_quadrature": float(quad_free[2]),
                "beta_min": float(g["beta"].min()),
                "beta_max": float(g["beta"].max()),
                "events": int((~g["censored"]).sum()),
                "chains": len(g),
            }
        )
    return pd.DataFrame(rows)


def random_sample(out: Path) -> pd.DataFrame:
    """Random-start plateaus with s = β(1 − cos Δθ) of the closest pair at their start and the
    duration divided by the two-cluster prefactor e^{log T_quad − s} (steps, censored kept)."""
    frame = read_table(Path(out) / "random.csv")[0]
    ok = frame[np.isfinite(frame["log_time_quadrature"])].copy()
    ok["s"] = ok["beta"] * (1 - np.cos(ok["separation"]))
    scale = np.exp(ok["s"] - ok["log_time_quadrature"])
    ok["steps"] = (ok["steps"] - ok["start"]) * scale
    ok["start"] = 0.0
    return ok


def random_beta_fits(out: Path, level: float, min_events: int) -> pd.DataFrame:
    """Per cluster count k of the random starts (with at least ``min_events`` merges): the
    plain censored fit of the plateau durations against β, log E[T] = a + bβ, beside the mean
    1 − cos Δθ of the closest pairs at those plateaus' starts (which vary from start to start,
    so b is only comparable to it on average)."""
    frame = read_table(Path(out) / "random.csv")[0]
    rows = []
    for k, g in frame.groupby("k"):
        if (~g["censored"]).sum() < min_events or g["beta"].nunique() < 2:
            continue
        fit = _fit(g[FIT_COLUMNS], "beta", False, level)
        low, high = fit.confidence_interval("slope")
        rows.append(
            {
                "k": int(k),
                "slope": fit.slope,
                "low": low,
                "high": high,
                "mean_rate": float((1 - np.cos(g["separation"])).mean()),
                "events": int((~g["censored"]).sum()),
                "censored": int(g["censored"].sum()),
            }
        )
    return pd.DataFrame(rows)


def random_fit(sample: pd.DataFrame, level: float):
    return _fit(sample[["s", "chain", "steps", "censored", "start"]], "s", False, level)


def checks(out: Path, config: Config) -> pd.DataFrame:
    """The checks table of the study (columns of :mod:`metastab.studies.verdict`)."""
    out = Path(out)
    cfg = config.checks
    tol, level = float(cfg.rate_tolerance), float(cfg.confidence_level)
    fits = prepared_fits(out, level)
    rows = []
    off = config.power.rate_factor
    for _, f in fits.iterrows():

        def rate(factor: float, f: pd.Series = f) -> Within:
            written = "b" if factor == 1 else f"b/{factor:g}"
            return Within(
                f"{written}, b from fit_scaling log(T β sin² Δθ) = a + b·β(1 − cos Δθ), the "
                f"prefactor 1/(β sin² Δθ) fixed by the two-cluster theory and Δθ each start's "
                f"exact angle, β = {f['beta_min']:.3g}…{f['beta_max']:.3g} ({int(f['events'])} "
                "merges; the flow is deterministic, so no sampling interval)",
                f["ratio"] / factor,
                1.0,
                tol,
                than="threshold (`rate_tolerance`)",
                template="{what}; pass if |measured − {target}| ≤ {than}",
            )

        rows += declare(
            rate,
            1.0,
            off,
            f"the exponent {off:g} β(1 − cos Δθ) ({off - 1:+.0%})",
            criterion=f"rate_{round(math.degrees(f['angle']))}deg",
            role="claim",
            statement=f"plateau at 2 clusters Δθ = {math.degrees(f['angle']):.0f}° apart lasts "
            f"∝ e^(β(1 − cos Δθ)), 1 − cos Δθ = {f['rate']:.3f} (prepared caps, post-LN)",
            source=SOURCE,
        )
    factor = float(cfg.wrong_rate_factor)
    wrong = (fits["ratio"] / factor - 1).abs()
    rows.append(
        Bound(
            "min over angles of |b/factor − 1|",
            float(wrong.min()),
            ">",
            tol,
            than="threshold",
            template=PASS_IF,
        ).row(
            "wrong_rate_rejected",
            "control",
            f"the rate test rejects {factor:g}·(1 − cos Δθ) on the same fits",
            source="this study",
        )
    )
    prep = read_table(out / "prepared.csv")[0]
    rk4 = prep[(prep["part"] == "rk4") & ~prep["censored"]]
    err = np.log((rk4["steps"] - rk4["start"]) * rk4["dt"]) - rk4["log_time_quadrature"]
    ctl_tol = float(config.control.log_time_tolerance)
    censored = int((prep["part"] == "rk4").sum() - len(rk4))
    rk4_agrees = AllOf(
        (
            Bound(
                f"max |log T_rk4 − log T_quad| over {len(rk4)} merges (censored: {censored})",
                float(err.abs().max()) if len(err) else math.nan,
                "≤",
                ctl_tol,
                than="threshold",
                template=PASS_IF,
            ),
            Bound("censored", censored, "=", 0, template=""),  # named above: "(censored: 0)"
        ),
        sep="",
    )
    rows.append(
        rk4_agrees.row(
            "rk4_matches_quadrature",
            "control",
            "RK4 merge times from the prepared caps against the two-cluster quadrature "
            "(theory.merge_time): the instrument measures the law it is compared with",
            source="this study",
        )
    )
    bad = int((prep["count"] != 2).sum())
    rows.append(
        Bound(
            f"prepared starts (of {len(prep)}) whose decomposition has another count than 2",
            float(bad),
            "=",
            0.0,
            template=PASS_IF_EQUAL,
        ).row(
            "prepared_two_clusters",
            "control",
            "every prepared start is two clusters at t = 0 (so its first passage to one cluster "
            "is the plateau at 2)",
            source="this study",
        )
    )
    post = prep[(prep["part"] == "post-ln") & ~prep["censored"]]
    lag = np.log((post["steps"] - post["start"]) * post["dt"]) - post["log_time_quadrature"]
    rows.append(
        check(
            "post_ln_time_factor",
            "context",
            "post-LN at step dt against (SA): where the cross weights are small a layer moves "
            "tokens dt/(1 + dt) along the flow, so log T_postLN − log T_quad ≈ log(1 + dt)",
            measured=float(lag.median()),
            low=float(lag.min()),
            high=float(lag.max()),
            threshold=math.log1p(float(post["dt"].iloc[0])),
            rule="median (range) over the prepared merges, beside log(1 + dt)",
            source="this study",
        )
    )
    for _, f in fits.iterrows():
        deg = round(math.degrees(f["angle"]))
        free = (
            f"b/(1 − cos Δθ) of log E[T] = a + bβ + c log β (c = {f['prefactor']:.3f}; the "
            f"quadrature's c = {f['prefactor_quadrature']:.3f}, its b/(1 − cos Δθ) = "
            f"{f['ratio_quadrature_free']:.3f}); corr(β, log β) on the grid = "
            f"{f['correlation']:.4f}"
        )
        for name, statement, column, rule, source in (
            (
                "finite_beta",
                "the exact two-cluster law (quadrature) fitted in the claim's form on the same "
                "starts: what the asymptotic rate looks like at these β",
                "ratio_quadrature",
                "b of log(T_quad β sin² Δθ) = a + b·β(1 − cos Δθ)",
                "metastab.theory.merge_time",
            ),
            (
                "nominal_angle",
                "the claim's fit at the nominal angle, each cap's jitter ignored",
                "ratio_nominal",
                "b/(1 − cos Δθ) of log(T β sin² Δθ) = a + bβ, Δθ nominal",
                "this study",
            ),
            (
                "free_prefactor",
                "the same data with a free prefactor c log β (three parameters, ill-conditioned "
                "on a short β grid)",
                "ratio_free",
                free,
                "this study",
            ),
            (
                "no_prefactor",
                "the same data fitted without any prefactor (a plain Arrhenius fit)",
                "ratio_without_prefactor",
                "b/(1 − cos Δθ) of log E[T] = a + bβ",
                "this study",
            ),
        ):
            rows.append(
                check(
                    f"{name}_{deg}deg",
                    "context",
                    statement,
                    measured=f[column],
                    threshold=1.0,
                    rule=rule,
                    source=source,
                )
            )
    sample = random_sample(out)
    events = int((~sample["censored"]).sum())
    rtol = float(cfg.random_tolerance)
    enough = events >= int(config.random.min_events)
    rfit = random_fit(sample, level) if enough else None
    low, high = rfit.confidence_interval("slope") if rfit else (math.nan, math.nan)

    def random_rate(b: float) -> Within:
        return Within(
            f"b of fit_scaling log E[T'] = a + b·s, s = β(1 − cos Δθ), T' = duration / "
            f"two-cluster prefactor, {events} merges and {int(sample['censored'].sum())} "
            "censored plateaus",
            rfit.slope if rfit else math.nan,
            b,
            rtol,
            than="threshold (`random_tolerance`)",
            tail=f"; not testable below {config.random.min_events} merges",
            low=low,
            high=high,
            template="{what}; pass if |b − {target}| ≤ {than}{tail}",
            testable=rfit is not None,
        )

    rows += declare(
        random_rate,
        1.0,
        off,
        f"b = {off:g} ({off - 1:+.0%} in the exponent)",
        criterion="rate_random_starts",
        role="claim",
        statement="from uniform starts, every plateau lasts ∝ e^(β(1 − cos Δθ)), Δθ the closest "
        "pair of clusters at its start",
        source=SOURCE,
    )
    min_events = int(config.random.min_events)
    for _, f in random_beta_fits(out, level, min_events).iterrows():
        rows.append(
            check(
                f"random_k{int(f['k'])}_against_beta",
                "context",
                f"uniform starts: duration of the plateau at {int(f['k'])} clusters against β",
                measured=f["slope"],
                low=f["low"],
                high=f["high"],
                threshold=f["mean_rate"],
                rule=f"b of fit_scaling log E[T] = a + bβ ({int(f['events'])} merges, "
                f"{int(f['censored'])} censored); threshold column: the mean 1 − cos Δθ of "
                "the closest pairs at those plateaus' starts",
                source="this study",
            )
        )
    rnd = read_table(out / "random.csv")[0]
    mismatch = int((rnd["count"] != rnd["k"]).sum())
    rows.append(
        Bound(
            f"plateaus whose decomposition has another count than k, of {len(rnd)}",
            float(mismatch),
            "=",
            0.0,
            template=PASS_IF_EQUAL,
        ).row(
            "decomposition_matches_kernel",
            "control",
            "the circle's cluster decomposition at each plateau's start gives the kernel's count",
            source="this study",
        )
    )
    cont = read_table(out / "containment.csv")[0]
    margin = np.log(cont["steps"] * cont["dt"]) - cont["log_transcribed_bound"]
    rows.append(
        check(
            "cap_containment_transcribed",
            "context",
            "third-party transcription (not verified against the paper): tokens stay in the "
            "2ε-caps up to (ε/n) e^((1 − α)β), α the largest cross-cap cosine",
            measured=float(margin.min()),
            low=float(margin.min()),
            high=float(margin.max()),
            threshold=0.0,
            rule=f"log(measured containment time / transcribed time), min (range) over "
            f"{len(cont)} runs ({int(cont['censored'].sum())} censored: a lower bound); "
            "≥ 0 where the transcription holds",
            source="docs: models#sphere-statements (5), transcription",
        )
    )
    return checks_frame(rows)
