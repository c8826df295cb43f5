"""Checks of the normalisation study (Karagodin, Ge, Polyanskiy, Rigollet, arXiv 2510.22026), from
the tables only.

Claims: §4.1, each scheme's initial speed from the orthogonal start, γ̇(0) = (1/s_j + 1/s_k) /
(e^β + n − 1), and peri-LN's lead over post-LN; §4.3, the pre-LN theorem, part (ii), each scheme's
collapse rate inside a cluster, d/dt Var = −Θ(Var / scale(t)); eq. (NA) as a time change of
Post-LN, dσ = dt / s: each GKPR plateau lasts as long in the intrinsic time σ measured along the
run as under Post-LN, and as many layers as Post-LN's plateau mapped through the run's σ(t).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from metastab.results import read_table
from metastab.studies.compare import PASS_IF_EQUAL, Bound, declare
from metastab.studies.verdict import check, checks_frame

from .config import Config

SOURCE_INITIAL = "[KGPR] §4.1, the theorem on the orthogonal start"
SOURCE_COLLAPSE = "[KGPR] §4.3, the pre-LN theorem, part (ii)"
SOURCE_PLATEAUS = "[KGPR] eq. (NA) (dσ = dt/s), GKPR plateaus (arXiv 2410.06833)"
REFERENCE = "post-ln"  # s = 1: σ = t, the plateaus every other scheme is compared with
# the plateau ratios of each claim and of its wrong prediction, s = 1 for every scheme (σ = layers
# · dt: equal lengths in layers; the [power] table's comments)
PLATEAU_CLAIMS = {
    "sigma": ("ratio_sigma", "its length in σ over Post-LN's", "sigma_tolerance"),
    "layers": ("ratio_layers", "its length in layers over Post-LN's mapped through the run's σ(t)",
               "layer_tolerance"),
}  # fmt: skip
WRONG_PLATEAU = ("ratio_equal", "its length in layers over Post-LN's (s = 1: σ = layers·dt)")
# the collapse time scale of each scheme, and the wrong one of the [power] table's comments
SCALES = {"post-ln": "1", "pre-ln": "t", "mix-ln": "t", "peri-ln": "t", "ngpt": "1",
          "ln-scaling": "√t"}  # fmt: skip
WRONG_SCALES = {"post-ln": "t", "pre-ln": "1", "mix-ln": "1", "peri-ln": "1", "ngpt": "t",
                "ln-scaling": "1"}  # fmt: skip
# the speed factor of the other family at t = 0 (the [power] table's comments)
ON_SPHERE_AT_START = ("post-ln", "pre-ln", "mix-ln", "ln-scaling")


def _scale(name: str, t: np.ndarray) -> np.ndarray:
    return {"1": np.ones_like(t), "t": t, "√t": np.sqrt(t)}[name]


def rates(collapse: pd.DataFrame, scheme: str, t_min: float, floor: float):
    """(t, −d log Var/dt) at the midpoints of the recorded grid on the window t ≥ t_min,
    Var ≥ floor."""
    g = collapse[(collapse["scheme"] == scheme) & (collapse["t"] >= t_min)]
    g = g[g["var"] >= floor]
    t, lv = g["t"].to_numpy(), np.log(g["var"].to_numpy())
    return (t[1:] + t[:-1]) / 2, -np.diff(lv) / np.diff(t)


def spread(collapse: pd.DataFrame, scheme: str, scale: str, t_min: float, floor: float) -> float:
    """max / min over the window of the rate times scale(t)."""
    t, rate = rates(collapse, scheme, t_min, floor)
    v = rate * _scale(scale, t)
    return float(v.max() / v.min()) if len(v) > 1 and (v > 0).all() else math.inf


def peri_over_post(initial: pd.DataFrame) -> pd.DataFrame:
    """Per (n, β): peri-LN's measured initial slope over post-LN's, and the paper's ratio
    (e^β + n − 1) / √(e^{2β} + n − 1)."""
    a = initial[initial["scheme"] == "peri-ln"].set_index(["n", "beta"])["slope"]
    b = initial[initial["scheme"] == "post-ln"].set_index(["n", "beta"])["slope"]
    out = (a / b).rename("ratio").reset_index()
    out["predicted"] = [
        (math.exp(beta) + n - 1) / math.sqrt(math.exp(2 * beta) + n - 1)
        for n, beta in zip(out["n"], out["beta"])
    ]
    return out


def plateau_ratios(plateaus: pd.DataFrame, path: pd.DataFrame) -> pd.DataFrame:
    """Per (scheme other than Post-LN, start, k) where both runs end the plateau at k clusters:
    its length in layers and in σ beside Post-LN's, and

    - ``ratio_sigma``: σ-length over Post-LN's (the time change: 1);
    - ``predicted``: Post-LN's plateau mapped through the scheme's measured σ(t), the layers
      between the steps at which the scheme's σ reaches Post-LN's σ at the plateau's ends (NaN
      beyond the recorded σ); ``ratio_layers``: layers over ``predicted`` (1);
    - ``ratio_equal``: layers over Post-LN's (1 if s = 1 for every scheme)."""
    done = plateaus[~plateaus["censored"]]
    ref = done[done["scheme"] == REFERENCE].set_index(["chain", "k"])
    rows = []
    for (scheme, chain), g in done[done["scheme"] != REFERENCE].groupby(
        ["scheme", "chain"], sort=False
    ):
        p = path[(path["scheme"] == scheme) & (path["chain"] == chain)]
        sigma, step = p["sigma"].to_numpy(), p["step"].to_numpy(float)
        for r in g.itertuples():
            if (chain, r.k) not in ref.index:
                continue
            q = ref.loc[(chain, r.k)]
            ends = [q["sigma_start"], q["sigma_end"]]
            at = np.interp(ends, sigma, step, right=math.nan)
            layers, ref_layers = r.end - r.start, q["end"] - q["start"]
            length, ref_length = r.sigma_end - r.sigma_start, q["sigma_end"] - q["sigma_start"]
            rows.append(
                {
                    "scheme": scheme,
                    "chain": chain,
                    "k": r.k,
                    "layers": layers,
                    "sigma": length,
                    "post_layers": ref_layers,
                    "post_sigma": ref_length,
                    "predicted": at[1] - at[0],
                    "ratio_sigma": length / ref_length,
                    "ratio_layers": layers / (at[1] - at[0]),
                    "ratio_equal": layers / ref_layers,
                }
            )
    return pd.DataFrame(rows)


def mean_interval(x: np.ndarray, level: float) -> tuple[float, float, float]:
    """The mean of ``x`` and its Student-t interval at ``level`` (NaN below two values)."""
    x = x[np.isfinite(x)]
    if x.size < 2:
        return math.nan, math.nan, math.nan
    half = float(stats.t.ppf(0.5 + level / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    return float(x.mean()), float(x.mean()) - half, float(x.mean()) + half


def per_plateau(ratios: pd.DataFrame, scheme: str, column: str, level: float) -> pd.DataFrame:
    """Per k (descending) the mean of ``column`` over the starts, its interval, the number of
    starts and the distance ``reach`` of the interval's farther end from 1."""
    g = ratios[ratios["scheme"] == scheme]
    rows = []
    for k in sorted(g["k"].unique(), reverse=True):
        x = g.loc[g["k"] == k, column].to_numpy(float)
        mean, low, high = mean_interval(x, level)
        reach = max(abs(low - 1), abs(high - 1)) if np.isfinite(mean) else math.inf
        rows.append({"k": int(k), "mean": mean, "low": low, "high": high,
                     "starts": int(np.isfinite(x).sum()), "reach": reach})  # fmt: skip
    return pd.DataFrame(rows, columns=["k", "mean", "low", "high", "starts", "reach"])


def farthest(per: pd.DataFrame) -> pd.Series:
    """The plateau of :func:`per_plateau` whose interval reaches farthest from 1 (the one a
    plateau check shows)."""
    return per.loc[per["reach"].idxmax()]


def plateau_rows(ratios: pd.DataFrame, config: Config) -> list[dict]:
    """The plateau claims of every scheme but Post-LN, each with its power row."""
    level = float(config.checks.confidence_level)
    rows: list[dict] = []
    for name, (column, what, key) in PLATEAU_CLAIMS.items():
        tol = float(getattr(config.checks, key))
        for scheme in config.schemes:
            if scheme == REFERENCE:
                continue

            def plateau(wrong: bool, scheme=scheme, column=column, what=what, tol=tol,
                        key=key) -> Bound:  # fmt: skip
                col, said = WRONG_PLATEAU if wrong else (column, what)
                per = per_plateau(ratios, scheme, col, level)
                if per.empty:
                    nothing = {"k": 0, "starts": 0, "reach": math.inf}
                    per = pd.DataFrame([nothing | dict.fromkeys(("mean", "low", "high"), math.nan)])
                worst = farthest(per)
                others = "; ".join(
                    f"k = {int(r.k)}: {r.mean:.4g} [{r.low:.4g}, {r.high:.4g}]"
                    for r in per.itertuples()
                    if r.k != worst["k"]
                )
                # reach: how far the interval reaches from 1; within tol: inside [1 ± tol]
                return Bound(
                    f"per plateau k, the mean over the {int(worst['starts'])} starts of "
                    f"{said}, with its {level:.0%} Student-t interval; shown: k = "
                    f"{int(worst['k'])}, whose interval reaches farthest from 1"
                    + (f" (the other: {others})" if others else ""),
                    float(worst["reach"]),
                    "≤",
                    tol,
                    than=f"(`{key}`)",
                    measured=float(worst["mean"]),
                    low=float(worst["low"]),
                    high=float(worst["high"]),
                    template="{what}; pass if that interval lies in [1 − tol, 1 + tol] {than}",
                    testable=bool(np.isfinite(per["reach"]).all()),
                )

            rows += declare(
                plateau,
                False,
                True,
                "s = 1 for every scheme: equal lengths in layers",
                criterion=f"plateau_{name}_{scheme}",
                role="claim",
                statement=f"{scheme}: every plateau lasts as long in σ = ∫ dt/s as under Post-LN"
                if name == "sigma"
                else f"{scheme}: every plateau lasts Post-LN's length mapped through the "
                "run's σ(t), in layers",
                source=SOURCE_PLATEAUS,
            )
    return rows


def plateau_context(plateaus: pd.DataFrame, path: pd.DataFrame, config: Config) -> list[dict]:
    """The control that every run traverses the plateaus at 3 and 2 clusters, Post-LN's
    lengths, and how far each scheme's s_i spread from token to token (where the time change
    is not exact)."""
    done = plateaus[~plateaus["censored"]]
    missing = 0
    for (_, _), g in plateaus.groupby(["scheme", "chain"]):
        first = g.loc[g["start"].idxmin()]
        ended = set(done.loc[g.index.intersection(done.index), "k"])
        missing += int(first["k"] != 3 or first["start"] != 0 or not {3, 2} <= ended)
    pairs = plateaus.groupby(["scheme", "chain"]).ngroups
    rows = [
        Bound(
            f"(scheme, start) runs of {pairs} that do not",
            float(missing),
            "=",
            0.0,
            template=PASS_IF_EQUAL,
        ).row(
            "plateaus_traversed",
            "control",
            "every start is 3 clusters at step 0 and every scheme ends its plateaus at 3 and 2 "
            "clusters within its horizon (so each plateau has a length to compare)",
            source="this study",
        )
    ]
    post = done[done["scheme"] == REFERENCE]
    for k in (3, 2):
        length = post.loc[post["k"] == k, "sigma_end"] - post.loc[post["k"] == k, "sigma_start"]
        rows.append(
            check(
                f"plateau_post_ln_k{k}",
                "context",
                f"Post-LN's plateau at {k} clusters, in (SA) time units (σ = t)",
                measured=float(length.mean()),
                low=float(length.min()),
                high=float(length.max()),
                rule=f"mean (min, max) over {len(length)} starts of layers × dt",
                source="this study",
            )
        )
    for scheme in config.schemes:
        if scheme == REFERENCE:
            continue
        spread = []
        for chain, g in done[(done["scheme"] == scheme) & (done["k"] == 2)].groupby("chain"):
            p = path[(path["scheme"] == scheme) & (path["chain"] == chain)]
            spread.append(float(p.loc[p["step"] <= g["end"].max(), "spread"].max()))
        rows.append(
            check(
                f"speed_spread_{scheme}",
                "context",
                f"{scheme}: how far the s_i differ from token to token up to the last merge "
                "(1: an exact time change)",
                measured=max(spread) if spread else math.nan,
                low=min(spread) if spread else math.nan,
                high=max(spread) if spread else math.nan,
                rule="largest max_i s_i / min_i s_i over the kept steps, worst start (low, "
                "high: over the starts)",
                source="this study",
            )
        )
    return rows


def checks(out: Path, config: Config) -> pd.DataFrame:
    """The checks table of the study (columns of :mod:`metastab.studies.verdict`)."""
    out = Path(out)
    initial = read_table(out / "initial.csv")[0]
    collapse = read_table(out / "collapse.csv")[0]
    tol, limit = float(config.checks.slope_tolerance), float(config.checks.spread_limit)
    rows: list[dict] = []
    for scheme in config.schemes:
        g = initial[initial["scheme"] == scheme]
        norm = np.sqrt(np.exp(2 * g["beta"]) + g["n"] - 1) / (np.exp(g["beta"]) + g["n"] - 1)

        def slope(factor: str, g=g, norm=norm) -> Bound:
            s = {"s = 1": 1.0, "s = |A|": norm, "s = |A|/α": norm / config.alpha}[factor]
            predicted = (2 / s) / (np.exp(g["beta"]) + g["n"] - 1)
            return Bound(
                f"largest |slope / prediction − 1| with {factor} over n ∈ "
                f"{sorted(set(g['n']))}, β ∈ {sorted(set(g['beta']))}",
                float(np.abs(g["slope"] / predicted - 1).max()),
                "≤",
                tol,
                than="`slope_tolerance`",
            )

        right = {"peri-ln": "s = |A|", "ngpt": "s = |A|/α"}.get(scheme, "s = 1")
        wrong = "s = |A|" if scheme in ON_SPHERE_AT_START else "s = 1"
        rows += declare(
            slope,
            right,
            wrong,
            f"the other family's speed factor, {wrong}",
            criterion=f"initial_{scheme}",
            role="claim",
            statement=f"{scheme}: γ̇(0) = (1/s_j + 1/s_k)/(e^β + n − 1) from the orthogonal start",
            source=SOURCE_INITIAL,
        )
    ratios = peri_over_post(initial)

    def faster(predicted: str) -> Bound:
        want = ratios["predicted"] if predicted == "paper" else config.power.peri_ratio
        return Bound(
            "largest |measured ratio / "
            + ("(e^β + n − 1)/√(e^(2β) + n − 1)" if predicted == "paper" else
               f"{config.power.peri_ratio:g}")
            + " − 1|",
            float(np.abs(ratios["ratio"] / want - 1).max()),
            "≤",
            tol,
            than="`slope_tolerance`",
            tail=" (low, high: the measured ratios)",
            low=float(ratios["ratio"].min()),
            high=float(ratios["ratio"].max()),
        )  # fmt: skip

    rows += declare(
        faster,
        "paper",
        "same",
        f"no lead: ratio {config.power.peri_ratio:g}",
        criterion="peri_faster",
        role="claim",
        statement="peri-LN starts faster than post-LN, by (e^β + n − 1)/√(e^(2β) + n − 1)",
        source=SOURCE_INITIAL,
    )
    c = config.collapse
    for scheme in config.schemes:

        def rate(scale: str, scheme=scheme) -> Bound:
            t, _ = rates(collapse, scheme, c.t_min, c.var_floor)
            return Bound(
                f"max/min of (−d log Var/dt) × {scale} over t = {t.min():g}…{t.max():g} "
                "(Var ≥ `var_floor`)",
                spread(collapse, scheme, scale, c.t_min, c.var_floor),
                "≤",
                limit,
                than="`spread_limit`",
            )

        rows += declare(
            rate,
            SCALES[scheme],
            WRONG_SCALES[scheme],
            f"the time scale {WRONG_SCALES[scheme]}",
            criterion=f"collapse_{scheme}",
            role="claim",
            statement=f"{scheme}: d/dt Var = −Θ(Var / {SCALES[scheme]}) inside a cluster",
            source=SOURCE_COLLAPSE,
        )
    pre = collapse[collapse["scheme"] == "pre-ln"]
    if len(pre):
        last = pre.iloc[-1]
        rows.append(
            check(
                "pre_ln_radius",
                "context",
                "pre-LN's radius grows like t in a cluster "
                "(the pre-LN theorem, part (i): r ≥ (1 − δ) t)",
                measured=float(last["radius"] / last["t"]),
                rule=f"mean radius / t at t = {last['t']:g}",
                source="[KGPR] §4.3, the pre-LN theorem, part (i)",
            )
        )
    plateaus = read_table(out / "plateaus.csv")[0]
    path = read_table(out / "path.csv")[0]
    rows += plateau_rows(plateau_ratios(plateaus, path), config)
    rows += plateau_context(plateaus, path, config)
    return checks_frame(rows)
