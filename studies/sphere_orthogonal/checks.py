"""Checks of the sphere-orthogonal study (GLPR Thm 6.8 and 6.9), from the tables only.

Claims: from an orthogonal start all pairwise cosines stay equal and follow γ_β of (6.9) / (6.10)
(rk4 at its finest step), t*(β) included; from uniform starts the deviation from γ_β stays below
Thm 6.9's bound (a claim only where the bound can fail: somewhere on the grid it is ≤ 2, the
largest possible deviation; otherwise context) and falls with d at least as fast as its
√(log d / d). Controls: the comparison tells (6.9) from (6.10); rk4 and post-LN converge at their
nominal orders (without that, the finest-step numbers would not speak for the flow); the span
reduction of d > n agrees with the full-d run. Context: the field's post-LN at dt = 0.1, how loose
Thm 6.9 is, its probability.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from metastab.results import read_table
from metastab.studies.compare import Bound, Inside, declare
from metastab.studies.verdict import check, checks_frame, power

from .config import Config

SOURCE = "GLPR (arXiv 2312.10794)"


def finest(crossing: pd.DataFrame, attention: str, scheme: str = "rk4") -> pd.DataFrame:
    """The runs of ``attention``/``scheme`` at their smallest dt, one per (n, β)."""
    g = crossing[(crossing["attention"] == attention) & (crossing["scheme"] == scheme)]
    return g[g["dt"] == g["dt"].min()]


def orders(
    crossing: pd.DataFrame, attention: str, scheme: str, floor: float, error: str = "max_error"
) -> pd.DataFrame:
    """Per (n, β): least-squares slope of log(error) on log dt over the dt whose error is above
    the roundoff ``floor`` (NaN with fewer than two). ``error``: ``max_error`` (the largest
    cosine error) or ``t_star_error`` (|t*_sim − t*|)."""
    g = crossing[(crossing["attention"] == attention) & (crossing["scheme"] == scheme)]
    g = g.assign(t_star_error=(g["t_star_sim"] - g["t_star"]).abs())
    rows = []
    for (n, beta), h in g.groupby(["n", "beta"]):
        ok = h[h[error] > floor]
        slope = np.polyfit(np.log(ok["dt"]), np.log(ok[error]), 1)[0] if len(ok) >= 2 else np.nan
        rows.append({"n": n, "beta": beta, "order": slope, "points": len(ok)})
    return pd.DataFrame(rows)


def d_rates(random: pd.DataFrame, t_ref: float, exponent: float | None = None) -> pd.DataFrame:
    """Per β: slopes on log d of log median D(t_ref) and of log(median D / r(d)), r(d) =
    √(log d / d) (``exponent`` None) or d^(−exponent)."""
    at = random[np.isclose(random["t"], t_ref)]
    rows = []
    for beta, g in at.groupby("beta"):
        med = g.groupby("d")["max_deviation"].median()
        d = med.index.to_numpy(float)
        rate = np.sqrt(np.log(d) / d) if exponent is None else d**-exponent
        rows.append(
            {
                "beta": beta,
                "slope": np.polyfit(np.log(d), np.log(med.to_numpy()), 1)[0],
                "relative_slope": np.polyfit(np.log(d), np.log(med.to_numpy() / rate), 1)[0],
            }
        )
    return pd.DataFrame(rows)


# what the probability of Thm 6.9's guarantee comes to on every grid of this study
VACUOUS = "the guarantee is vacuous at every d here"


def slopes(rates: pd.DataFrame) -> str:
    """The slopes of :func:`d_rates` per β, for a rule or the report."""
    return ", ".join(f"β = {r.beta:g}: {r.slope:.3f}" for r in rates.itertuples())


def _list(values: pd.Series) -> str:
    """The distinct values, sorted, for a rule's text."""
    return "{" + ", ".join(f"{v:g}" for v in sorted(values.unique())) + "}"


def _band(values: pd.Series, band) -> tuple[float, bool]:
    med = float(values.median())
    return med, bool(band[0] <= med <= band[1])


def _orthogonal_rows(crossing: pd.DataFrame, config: Config) -> list[dict]:
    cfg = config
    tol = cfg.checks
    sa, usa = finest(crossing, "softmax"), finest(crossing, "unnormalized")
    spread = float(crossing["max_spread"].max())
    both = pd.concat([sa, usa])
    equal = Bound(
        f"largest max − min of the pairwise cosines over every kept step of all "
        f"{len(crossing)} runs (rk4, post-LN, (SA), (USA))",
        spread,
        "≤",
        tol.equal_tolerance,
        than="threshold",
    ).row(
        "thm68_equal_cosines",
        "claim",
        "Thm 6.8: from pairwise orthogonal tokens all pairwise cosines stay equal",
        source=f"{SOURCE}, Thm 6.8",
    )
    rows = [
        equal,
        power(
            equal,
            "none measurable here: the tables keep the pairwise spread of the orthogonal starts "
            "only, not of a start that breaks the hypothesis",
            rejected=None,
        ),
    ]
    for name, g, eq, other in (("sa", sa, "(6.9)", "(6.10)"), ("usa", usa, "(6.10)", "(6.9)")):

        def cosine(column: str, g: pd.DataFrame = g) -> Bound:
            # column: the error against the claimed equation (max_error) or the other one
            return Bound(
                "largest |mean cosine − γ_β(t)"
                + ("" if column == "max_error" else " of the other equation")
                + f"| over t ≤ 1.1 t*, rk4 at dt = "
                f"{g['dt'].min():g}, over n ∈ {_list(g['n'])}, β ∈ {_list(g['beta'])}",
                float(g[column].max()),
                "≤",
                tol.cosine_tolerance,
                than="threshold",
            )

        rows += declare(
            cosine,
            "max_error",
            "other_error",
            f"the other model's equation {other}",
            criterion=f"thm68_cosine_{name}",
            role="claim",
            statement=f"Thm 6.8: the common cosine is γ_β(t), the solution of {eq}",
            source=f"{SOURCE}, Thm 6.8, eq. {eq}",
        )
    late = config.power.t_star_scale

    def t_star(scale: float) -> Bound:
        return Bound(
            f"largest |t*_sim / {'' if scale == 1 else f'({scale:g} t*)'}"
            f"{'t*' if scale == 1 else ''} − 1| over the (SA) and (USA) runs at the finest rk4 "
            "dt (t*_sim: cubic inverse interpolation of log(1 − cosine) between kept steps)",
            float((both["t_star_sim"] / (scale * both["t_star"]) - 1).abs().max()),
            "≤",
            tol.time_tolerance,
            than="threshold",
        )

    rows += declare(
        t_star,
        1.0,
        late,
        f"t* {late - 1:+.0%} ({late:g} t*(β))",
        criterion="thm68_t_star",
        role="claim",
        statement="t*(β), the time γ_β reaches 1 − δ, from (6.9)/(6.10) is the simulated one",
        source=f"{SOURCE}, Thm 6.8; docs: models#sphere-statements (1)",
    )
    moved = [float(x) for x in tol.moved]
    sa_err = float(sa["max_error"].max())
    rows.append(
        check(
            "thm68_cosine_sa_moved",
            "context",
            "how `thm68_cosine_sa` moves with its tolerance",
            measured=sa_err,
            rule="; ".join(
                f"at tolerance {m:g} it would {'pass' if sa_err <= m else 'fail'}" for m in moved
            ),
            source="this study",
        )
    )
    other = pd.concat([sa, usa])
    other = other[other["beta"] > 0]
    sep = float(other["other_error"].min())
    rows.append(
        Bound(
            "smallest largest-|mean cosine − other equation's γ| over the finest rk4 runs "
            "at β > 0 (where the two differ)",
            sep,
            ">",
            tol.cosine_tolerance,
            than="threshold (`cosine_tolerance`)",
        ).row(
            "other_equation",
            "control",
            "the comparison tells (6.9) from (6.10): each model's run against the other's equation",
            source="this study",
        )
    )
    floor = float(tol.roundoff_floor)
    for scheme, key, band, nominal in (
        ("rk4", "rk4_order", tol.rk4_order, 4),
        ("post-ln", "post_ln_order", tol.post_ln_order, 1),
    ):
        o = orders(crossing, "softmax", scheme, floor)["order"].dropna()
        if o.empty:
            continue
        rows.append(
            Inside(
                "median over (n, β) of the slope of log(max error) on log dt (errors above "
                f"{floor:g}; interval: min–max over (n, β))",
                float(o.median()),
                band[0],
                band[1],
                interval=(float(o.min()), float(o.max())),
                threshold=nominal,
            ).row(
                f"{key}",
                "control",
                f"{scheme} converges to (SA) at its nominal order {nominal} as dt → 0",
                source="this study",
            )
        )
    by_time = orders(crossing, "softmax", "post-ln", floor, "t_star_error")["order"].dropna()
    if len(by_time):
        rows.append(
            check(
                "post_ln_t_star_order",
                "context",
                "post-LN: the order of the error in t*, where the cosine error saturates (it is "
                "at most 1: at large β the layer's late crossing puts it near 1 at every dt)",
                measured=float(by_time.median()),
                low=float(by_time.min()),
                high=float(by_time.max()),
                threshold=1,
                rule="median over (n, β) of the slope of log|t*_sim − t*| on log dt (interval: "
                "min–max over (n, β))",
                source="this study",
            )
        )
    post = crossing[(crossing["scheme"] == "post-ln") & np.isclose(crossing["dt"], 0.1)]
    if len(post):
        shift = (post["t_star_sim"] / post["t_star"] - 1).abs()
        rows.append(
            check(
                "post_ln_layer_shift",
                "context",
                "the field's post-LN layer (dt = 0.1) against (6.9): relative shift of t*",
                measured=float(shift.max()),
                low=float(shift.min()),
                high=float(shift.max()),
                rule="|t*_sim / t* − 1| at dt = 0.1, range over (n, β)",
                source="this study",
            )
        )
    return rows


def _random_rows(random: pd.DataFrame, reduction: pd.DataFrame, cfg: Config) -> list[dict]:
    tol, rcfg = cfg.checks, cfg.random
    later = random[random["t"] > 0]
    med = later.groupby(["beta", "d", "t"])[["max_deviation", "bound"]].median()
    loose = np.log10(med["bound"] / med["max_deviation"])
    rates = d_rates(random, float(rcfg.t_ref))
    n, d_max = int(rcfg.n), int(random["d"].max())
    prob = float(random.loc[random["d"] == d_max, "probability"].iloc[0])
    gap = float(reduction["max_gap"].max())
    pw = cfg.power
    # |<x_i, x_j> − γ| ≤ 2 always: a bound above 2 everywhere on the grid cannot fail, and is
    # then reported as context, not counted as a claim (and has no power row)
    vacuous = float(later["bound"].min()) > 2.0

    def bound(exponent: float) -> Bound:
        # the bound with c(β) = e^(exponent max(1, β)); the theorem's exponent is 10
        scaled = later["bound"] * np.exp((exponent - 10) * np.maximum(1.0, later["beta"]))
        smallest = float(scaled.min())
        return Bound(
            "largest (max over pairs of the deviation) / bound"
            + ("" if exponent == 10 else f" (c(β) = e^({exponent:g} max(1, β)))")
            + f" over every start, t > 0, d ∈ {_list(random['d'])}, β ∈ {_list(random['beta'])}",
            float((later["max_deviation"] / scaled).max()),
            "≤",
            1.0,
            tail=f"; the smallest bound on this grid is {smallest:.3g}"
            + (
                " > 2 ≥ |cosine − γ|: it cannot fail here, so it is context, not a claim"
                if vacuous
                else (" ≤ 2: it can fail here" if smallest <= 2 else " > 2: it cannot fail")
            ),
        )

    def d_rate(exponent: float | None) -> Bound:
        rate = "√(log d / d)" if exponent is None else f"d^(−{exponent:g})"
        return Bound(
            f"largest over β of the slope of log(median D(t = {rcfg.t_ref:g}) / {rate}) on log d",
            float(d_rates(random, float(rcfg.t_ref), exponent)["relative_slope"].max()),
            "≤",
            float(tol.rate_slack),
            than="threshold (`rate_slack`)",
            tail=f"; slopes of log median D on log d: {slopes(rates)}",
        )

    bound_statement = (
        "Thm 6.9: |<x_i(t), x_j(t)> − γ_β(t)| ≤ 2 c(β) n t √(log d / d), c(β) = e^(10 max(1, β))"
    )
    return [
        *(
            [
                bound(10.0).row(
                    "thm69_bound", "context", bound_statement, source=f"{SOURCE}, Thm 6.9"
                )
            ]
            if vacuous
            else declare(
                bound,
                10.0,
                pw.bound_c_exponent,
                f"the bound with c(β) = e^({pw.bound_c_exponent:g} max(1, β))",
                criterion="thm69_bound",
                role="claim",
                statement=bound_statement,
                source=f"{SOURCE}, Thm 6.9",
            )
        ),
        *declare(
            d_rate,
            None,
            pw.d_rate_exponent,
            f"the deviation falls like d^(−{pw.d_rate_exponent:g})",
            criterion="thm69_d_rate",
            role="claim",
            statement="Thm 6.9: the deviation is small for d large, at the rate √(log d / d) of "
            "its bound",
            source=f"{SOURCE}, Thm 6.9",
        ),
        check(
            "thm69_looseness",
            "context",
            "how loose the bound is: log10(bound / median deviation)",
            measured=float(loose.min()),
            low=float(loose.min()),
            high=float(loose.max()),
            rule="range over (β, d, t > 0) of the median over starts",
            source=f"{SOURCE}, Thm 6.9",
        ),
        check(
            "thm69_probability",
            "context",
            "the probability 1 − 2n²d^(−1/64) with which the bound is guaranteed",
            measured=prob,
            threshold=0.0,
            rule=f"at the largest d = {d_max} (n = {n}); it is positive only for d > (2n²)^64 = "
            f"10^{64 * math.log10(2 * n * n):.0f}: {VACUOUS}",
            source=f"{SOURCE}, Thm 6.9",
        ),
        Bound(
            f"largest |cosine (full d = {int(reduction['d'].iloc[0])}) − cosine (span)| "
            f"over {int(reduction['starts'].iloc[0])} starts, every β and grid time",
            gap,
            "≤",
            float(tol.reduction_tolerance),
            than="threshold",
        ).row(
            "span_reduction",
            "control",
            "d > n simulated in the n-dimensional span of x(0) is the full-d flow",
            source="this study",
        ),
    ]


def checks(out: Path, config: Config) -> pd.DataFrame:
    """The checks table of the study (columns of :mod:`metastab.studies.verdict`)."""
    out = Path(out)
    crossing = read_table(out / "crossing.csv")[0]
    random = read_table(out / "random.parquet")[0]
    reduction = read_table(out / "reduction.csv")[0]
    return checks_frame(
        _orthogonal_rows(crossing, config) + _random_rows(random, reduction, config)
    )
