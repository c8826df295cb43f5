"""Checks of the normalisation study (Karagodin, Ge, Polyanskiy, Rigollet, arXiv 2510.22026), from
the tables only.

Claims: §4.1, each scheme's initial speed from the orthogonal start, γ̇(0) = (1/s_j + 1/s_k) /
(e^β + n − 1), and peri-LN's lead over post-LN; §4.3 (thm. preln-slow (ii)), each scheme's
collapse rate inside a cluster, d/dt Var = −Θ(Var / scale(t)).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from metastab.results import read_table
from metastab.studies.verdict import check, checks_frame, powered

from .config import Config

SOURCE_INITIAL = "[KGPR] §4.1 (thm. symmetric)"
SOURCE_COLLAPSE = "[KGPR] §4.3 (thm. preln-slow (ii))"
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

        def slope(factor: str, g=g, norm=norm, scheme=scheme) -> dict:
            s = {"s = 1": 1.0, "s = |A|": norm, "s = |A|/α": norm / config.alpha}[factor]
            predicted = (2 / s) / (np.exp(g["beta"]) + g["n"] - 1)
            worst = float(np.abs(g["slope"] / predicted - 1).max())
            return check(
                f"initial_{scheme}",
                "claim",
                f"{scheme}: γ̇(0) = (1/s_j + 1/s_k)/(e^β + n − 1) from the orthogonal start",
                measured=worst,
                threshold=tol,
                rule=f"largest |slope / prediction − 1| with {factor} over n ∈ "
                f"{sorted(set(g['n']))}, β ∈ {sorted(set(g['beta']))} ≤ `slope_tolerance`",
                passed=worst <= tol,
                source=SOURCE_INITIAL,
            )

        right = {"peri-ln": "s = |A|", "ngpt": "s = |A|/α"}.get(scheme, "s = 1")
        wrong = "s = |A|" if scheme in ON_SPHERE_AT_START else "s = 1"
        rows += powered(slope, right, wrong, f"the other family's speed factor, {wrong}")
    ratios = peri_over_post(initial)

    def faster(predicted: str) -> dict:
        want = ratios["predicted"] if predicted == "paper" else config.power.peri_ratio
        worst = float(np.abs(ratios["ratio"] / want - 1).max())
        return check(
            "peri_faster",
            "claim",
            "peri-LN starts faster than post-LN, by (e^β + n − 1)/√(e^(2β) + n − 1)",
            measured=worst,
            low=float(ratios["ratio"].min()),
            high=float(ratios["ratio"].max()),
            threshold=tol,
            rule="largest |measured ratio / "
            + ("(e^β + n − 1)/√(e^(2β) + n − 1)" if predicted == "paper" else
               f"{config.power.peri_ratio:g}")
            + " − 1| ≤ `slope_tolerance` (low, high: the measured ratios)",
            passed=worst <= tol,
            source=SOURCE_INITIAL,
        )  # fmt: skip

    rows += powered(faster, "paper", "same", f"no lead: ratio {config.power.peri_ratio:g}")
    c = config.collapse
    for scheme in config.schemes:

        def rate(scale: str, scheme=scheme) -> dict:
            value = spread(collapse, scheme, scale, c.t_min, c.var_floor)
            t, _ = rates(collapse, scheme, c.t_min, c.var_floor)
            return check(
                f"collapse_{scheme}",
                "claim",
                f"{scheme}: d/dt Var = −Θ(Var / {SCALES[scheme]}) inside a cluster",
                measured=value,
                threshold=limit,
                rule=f"max/min of (−d log Var/dt) × {scale} over t = {t.min():g}…{t.max():g} "
                "(Var ≥ `var_floor`) ≤ `spread_limit`",
                passed=value <= limit,
                source=SOURCE_COLLAPSE,
            )

        rows += powered(rate, SCALES[scheme], WRONG_SCALES[scheme],
                        f"the time scale {WRONG_SCALES[scheme]}")  # fmt: skip
    pre = collapse[collapse["scheme"] == "pre-ln"]
    if len(pre):
        last = pre.iloc[-1]
        rows.append(
            check(
                "pre_ln_radius",
                "context",
                "pre-LN's radius grows like t in a cluster (thm. preln-slow (i): r ≥ (1 − δ) t)",
                measured=float(last["radius"] / last["t"]),
                rule=f"mean radius / t at t = {last['t']:g}",
                source="[KGPR] §4.3 (thm. preln-slow (i))",
            )
        )
    return checks_frame(rows)
