"""Checks of the causal-parking study (Karagodin, Polyanskiy, Rigollet), from its tables only.

Claims, each at every β of the grid and at the reading time, minimum cluster size and capture
radius fixed in the configuration:

- ``count``: the number of metastable clusters equals the number of strong Rényi centres: the
  mean over starts of (clusters − strong centres), with its Student-t interval, reaches within
  ``resolution`` (½) of 0; correction ``count/bracketed`` (Fig. 2's caption: the strong centres
  do not explain all clusters, the Rényi centres capture more): strong centres ≤ clusters ≤
  Rényi centres in at least ``bracket_required`` of the starts (Clopper–Pearson) at every β;
- ``location``: the clusters sit at the strong centres' starting points: the fraction of strong
  centres with a cluster within capture_factor · δ, pooled over starts with its Clopper–Pearson
  interval, reaches ``capture_required``;
- ``lifetime``: the plateau length of the metastable state scales like β^b with the predicted b:
  the exponent of the censored Weibull regression of the plateau lengths on log β, with its
  profile-likelihood interval, reaches within ``exponent_tolerance`` of b (:mod:`.lifetime`).

Each has its power row (``[power]``: the count ∓ 1, the centres one separation off, other
exponents). Controls: the count intervals resolve neighbouring integers, the circle's
decomposition agrees with the kernel's count, and the strong-centre construction reproduces its
exact mean for uniform tokens. Context: counts, Rényi centres, exact agreement per start, the
centres' displacement, the count's exponent in β, and the lifetime's Kaplan–Meier medians,
restricted means, other fits and settings.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from metastab.results import read_table
from metastab.studies.compare import PASS_IF, PASS_IF_EQUAL, Bound, declare
from metastab.studies.verdict import check, checks_frame

from . import lifetime
from .config import Config

SOURCE = "Karagodin, Polyanskiy, Rigollet arXiv 2411.04990 (§5, Lemma 5.1, Fig. 2)"
READING = "this package's reading of " + SOURCE


def table(out: Path, name: str) -> pd.DataFrame:
    return read_table(Path(out) / f"{name}.csv")[0]


def t_interval(x: np.ndarray, level: float) -> tuple[float, float, float]:
    """(mean, low, high): the Student-t interval of the mean of ``x`` at ``level``."""
    x = np.asarray(x, dtype=float)
    mean, half = float(x.mean()), 0.0
    if x.size > 1:
        half = float(stats.t.ppf(0.5 + level / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    return mean, mean - half, mean + half


def per_start(out: Path, n: int, fraction: float, time: float) -> pd.DataFrame:
    """Per (β, start): clusters (δ_c-components with >= fraction · n tokens) at ``time``, beside
    the numbers of strong centres and of Rényi centres."""
    starts = table(out, "starts")
    clusters = table(out, "clusters")
    at = clusters[(clusters["time"] == time) & (clusters["size"] >= fraction * n)]
    count = at.groupby(["beta", "chain"]).size().rename("clusters")
    merged = starts.merge(count, on=["beta", "chain"], how="left")
    return merged.fillna({"clusters": 0}).astype({"clusters": int})


def count_summary(
    out: Path, n: int, fraction: float, time: float, level: float, shift: int = 0
) -> pd.DataFrame:
    """Per β: the mean of clusters − (strong centres + shift) over starts with its interval,
    the mean counts and the fraction of starts where clusters = strong centres exactly."""
    frame = per_start(out, n, fraction, time)
    rows = []
    for beta, g in frame.groupby("beta"):
        diff = g["clusters"] - g["strong"] - shift
        mean, low, high = t_interval(diff.to_numpy(), level)
        rows.append(
            {
                "beta": beta,
                "delta": float(g["delta"].iloc[0]),
                "starts": len(g),
                "clusters": float(g["clusters"].mean()),
                "strong": float(g["strong"].mean()),
                "renyi": float(g["renyi"].mean()),
                "expected_strong": float(g["expected_strong"].iloc[0]),
                "mean": mean,
                "low": low,
                "high": high,
                "miss": max(0.0, low, -high),
                "exact": int((diff == 0).sum()),
                "renyi_diff": float((g["clusters"] - g["renyi"]).mean()),
            }
        )
    return pd.DataFrame(rows)


def bracket_summary(
    out: Path, n: int, fraction: float, time: float, level: float, shift: int = 0
) -> pd.DataFrame:
    """Per β: the starts with strong centres + shift ≤ clusters ≤ Rényi centres + shift, and
    the Clopper–Pearson interval of their fraction."""
    frame = per_start(out, n, fraction, time)
    inside = (frame["clusters"] >= frame["strong"] + shift) & (
        frame["clusters"] <= frame["renyi"] + shift
    )
    rows = []
    for beta, g in inside.groupby(frame["beta"]):
        hit = int(g.sum())
        ci = stats.binomtest(hit, len(g)).proportion_ci(level)
        rows.append({"beta": beta, "inside": hit, "starts": len(g), "low": ci.low, "high": ci.high})
    return pd.DataFrame(rows)


def angle_between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The angle in [0, π] between angles a and b."""
    return np.abs(np.angle(np.exp(1j * (np.asarray(a) - np.asarray(b)))))


def capture_summary(
    out: Path, n: int, fraction: float, time: float, factor: float, level: float, shift: float = 0.0
) -> pd.DataFrame:
    """Per β: how many strong centres (their starting angle moved by shift · δ) have a cluster
    with >= fraction · n tokens within factor · δ at ``time``, with the Clopper–Pearson interval
    of the fraction."""
    starts = table(out, "starts")[["beta", "chain", "delta"]]
    centres = table(out, "centres")
    clusters = table(out, "clusters")
    at = clusters[(clusters["time"] == time) & (clusters["size"] >= fraction * n)]
    strong = centres[centres["strong"] == 1].merge(starts, on=["beta", "chain"])
    groups = {key: g["angle"].to_numpy() for key, g in at.groupby(["beta", "chain"])}
    near = []
    for r in strong.itertuples():
        angles = groups.get((r.beta, r.chain))
        target = r.theta0 + shift * r.delta
        near.append(np.inf if angles is None else float(angle_between(angles, target).min()))
    strong = strong.assign(near=near)
    rows = []
    for beta, g in strong.groupby("beta"):
        hit = int((g["near"] <= factor * g["delta"]).sum())
        ci = stats.binomtest(hit, len(g)).proportion_ci(level)
        rows.append(
            {
                "beta": beta,
                "centres": len(g),
                "captured": hit,
                "fraction": hit / len(g),
                "low": float(ci.low),
                "high": float(ci.high),
                "median_near": float(np.median(g["near"] / g["delta"])),
            }
        )
    return pd.DataFrame(rows)


def displacement(out: Path, time: float) -> pd.DataFrame:
    """Per β and kind of centre (strong, other Rényi): the median and 90 % quantile of the
    centre token's displacement from its start at ``time``, in units of δ."""
    starts = table(out, "starts")[["beta", "chain", "delta"]]
    centres = table(out, "centres").merge(starts, on=["beta", "chain"])
    moved = angle_between(centres[f"theta_{time:g}"], centres["theta0"]) / centres["delta"]
    centres = centres.assign(moved=moved)
    rows = []
    for (beta, strong), g in centres.groupby(["beta", "strong"]):
        rows.append(
            {
                "beta": beta,
                "strong": int(strong),
                "centres": len(g),
                "median": float(g["moved"].median()),
                "q90": float(g["moved"].quantile(0.9)),
            }
        )
    return pd.DataFrame(rows)


def _signed(s: float) -> str:
    return f"{'+' if s >= 0 else '−'} {abs(s):g}"


def checks(out: Path, config: Config) -> pd.DataFrame:
    """The checks table of the study (columns of :mod:`metastab.studies.verdict`)."""
    out = Path(out)
    n, level = int(config.n), float(config.confidence_level)
    f, t = float(config.min_fraction), float(config.reading_time)
    res, factor = float(config.resolution), float(config.capture_factor)
    need = float(config.capture_required)
    where = (
        f"at t = {t:g} (clusters: δ_c-components with ≥ {f:g} n tokens, δ_c = "
        f"{float(config.cluster_delta):g}), every β"
    )
    base = count_summary(out, n, f, t, level)
    counts_text = "; ".join(
        f"β = {r.beta:g}: {r.clusters:.2f} clusters, {r.strong:.2f} strong, {r.renyi:.2f} Rényi"
        for r in base.itertuples()
    )

    def count(shifts: list[int]) -> Bound:
        # passes if some shift is within the resolution at every β: the closest one is
        tables = [count_summary(out, n, f, t, level, s) for s in shifts]
        return Bound(
            f"{where}: per start clusters − (strong centres"
            + ("" if shifts == [0] else " " + " or ".join(_signed(s) for s in shifts))
            + f"), mean over starts with its {level:g} Student-t interval; measured: the largest "
            "distance over β of the interval from 0"
            + (", the closer shift" if len(shifts) > 1 else ""),
            min(float(tb["miss"].max()) for tb in tables),
            "<",
            res,
            than="threshold (`resolution`)",
            tail=f"; means: {counts_text}",
            template=PASS_IF,
        )

    rows = declare(
        count,
        [0],
        [int(s) for s in config.power.count_shifts],
        "the strong-centre count "
        + " or ".join(_signed(s) for s in config.power.count_shifts)
        + " (a cluster missed or extra; the check must reject each)",
        criterion="count",
        role="claim",
        statement="the number of metastable clusters equals the number of strong Rényi centres",
        source=READING,
    )

    def bracketed(shifts: list[int]) -> Bound:
        # passes if some shift holds at every β: the best one does
        tables = [bracket_summary(out, n, f, t, level, s) for s in shifts]
        text = "; ".join(
            ", ".join(f"β = {r.beta:g}: {r.inside}/{r.starts}" for r in tb.itertuples())
            for tb in tables
        )
        return Bound(
            f"{where}: per start strong centres"
            + ("" if shifts == [0] else " " + " or ".join(_signed(s) for s in shifts))
            + " ≤ clusters ≤ Rényi centres (the same shift); the fraction of starts where it "
            f"holds with its {level:g} Clopper–Pearson interval; measured: the smallest upper "
            "end over β" + (", the better shift" if len(shifts) > 1 else ""),
            max(float(tb["high"].min()) for tb in tables),
            "≥",
            bracket,
            than="threshold (`bracket_required`)",
            tail=f"; inside: {text}",
            template=PASS_IF,
        )

    bracket = float(config.bracket_required)
    rows += declare(
        bracketed,
        [0],
        [int(s) for s in config.power.bracket_shifts],
        "the bracket "
        + " or ".join(_signed(s) for s in config.power.bracket_shifts)
        + " clusters (the check must reject each)",
        criterion="count/bracketed",
        role="correction",
        statement="the number of metastable clusters lies between the numbers of strong Rényi "
        "centres and of Rényi centres (Fig. 2's caption)",
        source=READING,
    )

    def location(shift: float) -> Bound:
        cap = capture_summary(out, n, f, t, factor, level, shift)
        return Bound(
            f"{where}: a strong centre is captured if a cluster's circular mean lies "
            f"within {factor:g} δ of its starting angle"
            + (f" moved by {shift:g} δ" if shift else "")
            + f"; pooled over starts, the fraction captured with its {level:g} Clopper–Pearson "
            "interval; measured: the smallest upper end over β",
            float(cap["high"].min()),
            "≥",
            need,
            than="threshold (`capture_required`)",
            tail="; captured: "
            + ", ".join(f"β = {r.beta:g}: {r.captured}/{r.centres}" for r in cap.itertuples()),
            template=PASS_IF,
        )

    shift = float(config.power.capture_shift)
    rows += declare(
        location,
        0.0,
        shift,
        f"the centres {shift:g} δ along the circle from the strong centres (one separation off; "
        "the check must reject it)",
        criterion="location",
        role="claim",
        statement="the metastable clusters form around the strong Rényi centres, which stay put "
        "(Lemma 5.1)",
        source=READING,
    )

    rows += lifetime.claim_rows(out, config, where, READING)

    half = float(((base["high"] - base["low"]) / 2).max())
    rows.append(
        Bound(
            "largest half-width over β of the interval of the mean count difference",
            half,
            "<",
            res,
            than="threshold (`resolution`)",
            template=PASS_IF,
        ).row(
            "neighbours_resolved",
            "control",
            "the count intervals tell neighbouring integers apart: `count` can reject ±1",
            source="this study",
        )
    )
    starts = table(out, "starts")
    disagree = int((starts["readings"] - starts["kernel_agrees"]).sum())
    rows.append(
        Bound(
            f"configurations (of {int(starts['readings'].sum())}) where the two counts differ",
            float(disagree),
            "=",
            0.0,
            template=PASS_IF_EQUAL,
        ).row(
            "decomposition_matches_kernel",
            "control",
            "the circle's cluster decomposition counts the kernel's δ_c-components",
            source="this study",
        )
    )
    clevel = float(config.control_level)
    worst, outside = 0.0, 0
    for _, g in starts.groupby("beta"):
        mean, low, high = t_interval(g["strong"].to_numpy(), clevel)
        expected = float(g["expected_strong"].iloc[0])
        worst = max(worst, abs(mean - expected))
        outside += not low <= expected <= high
    rows.append(
        Bound(
            "β whose interval misses the expectation",
            outside,
            "=",
            0,
            measured=worst,
            shown_threshold=float("nan"),
            template=f"largest |mean − expectation| over β; pass if at every β the {clevel:g} "
            "Student-t interval of the mean contains the expectation",
        ).row(
            "strong_centres_expected",
            "control",
            "the strong-centre construction has its exact mean (1 − (1 − q)^n)/q for uniform "
            "tokens, q = 2 arcsin(δ/2)/π",
            source="metastab.studies.parking.expected_strong_centres",
        )
    )
    exact = int(base["exact"].sum())
    total = int(base["starts"].sum())
    ci = stats.binomtest(exact, total).proportion_ci(level)
    rows.append(
        check(
            "exact_per_start",
            "context",
            "fraction of starts whose cluster count equals their strong-centre count exactly",
            measured=exact / total,
            low=float(ci.low),
            high=float(ci.high),
            rule=f"pooled over β, {where}; interval: {level:g} Clopper–Pearson; per β: "
            + ", ".join(f"{r.exact}/{r.starts}" for r in base.itertuples()),
            source="this study",
        )
    )
    rows.append(
        check(
            "renyi_centres",
            "context",
            "clusters − Rényi centres (the caption of Fig. 2: Rényi centres capture more "
            "metastable clusters than the strong ones, but move and merge)",
            measured=float(base["renyi_diff"].mean()),
            low=float(base["renyi_diff"].min()),
            high=float(base["renyi_diff"].max()),
            rule="mean over starts per β, averaged over β; interval: min and max over β",
            source=SOURCE,
        )
    )
    moved = displacement(out, t)
    for strong, g in moved.groupby("strong"):
        kind = "strong" if strong else "other Rényi"
        rows.append(
            check(
                f"displacement_{'strong' if strong else 'renyi'}",
                "context",
                f"displacement of the {kind} centres' tokens from their start at t = {t:g}, in δ",
                measured=float(g["median"].max()),
                low=float(g["median"].min()),
                high=float(g["q90"].max()),
                rule="median over the centres of each β: measured the largest over β, low the "
                "smallest; high: the largest 90 % quantile over β",
                source="this study",
            )
        )
    for r in base.itertuples():
        rows.append(
            check(
                f"count_beta_{r.beta:g}",
                "context",
                f"clusters − strong centres at β = {r.beta:g} (δ = {r.delta:.4g})",
                measured=r.mean,
                low=r.low,
                high=r.high,
                threshold=0.0,
                rule=f"mean ({level:g} interval) over {r.starts} starts: {r.clusters:.3g} "
                f"clusters, {r.strong:.3g} strong centres (expected {r.expected_strong:.3g}), "
                f"{r.renyi:.3g} Rényi centres",
                source=READING,
            )
        )
    logb = np.log(base["beta"].to_numpy(float))
    for col, what in (("clusters", "clusters"), ("strong", "strong centres")):
        y = base[col].to_numpy(float)
        b = (
            float(np.polyfit(logb, np.log(y), 1)[0])
            if len(base) > 1 and (y > 0).all()
            else math.nan
        )
        rows.append(
            check(
                f"exponent_{col}",
                "context",
                f"mean number of {what} ∝ β^a (the strong centres' frequency Θ(β^((d−1)/2)), "
                "a = 1/2 on the circle)",
                measured=b,
                threshold=0.5,
                rule="least-squares exponent of the mean over starts against β in log–log",
                source=SOURCE,
            )
        )
    rows += lifetime.context_rows(out, config)
    return checks_frame(rows)
