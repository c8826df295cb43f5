"""The lifetime of the metastable clusters: plateau lengths as right-censored durations.

Per (β, start) the plateau length T (:func:`studies.causal_parking.run.plateau`: from the reading
time t0 to the first frame with fewer clusters than at t0) is an event when the count fell
before the horizon, and right-censored at horizon − t0 otherwise. Estimated here:

- per β, the Kaplan–Meier curve (:func:`metastab.stats.survival`), its median with the
  Brookmeyer–Crowley interval, and the restricted mean ∫_0^τ Ŝ(t) dt up to τ = horizon − t0 with
  the Greenwood-type variance Σ_j A_j² d_j / (n_j (n_j − d_j)), A_j = ∫_{u_j}^τ Ŝ (Klein and
  Moeschberger, *Survival Analysis*, 2nd ed., §4.5, eq. 4.5.2), :func:`per_beta`;
- the exponent b of β by the censored Weibull regression (accelerated failure time)
  S(t | β) = exp(−(t / λ(β))^k), λ(β) = e^a β^b (Kalbfleisch and Prentice, *The Statistical
  Analysis of Failure Time Data*, 2nd ed., §2.2.2 and §3.2; every quantile of T is ∝ β^b), by
  maximum likelihood with the profile-likelihood interval, :func:`weibull_fit`.

The Weibull likelihood is maximised in closed form over the scale and by one root over the shape
at fixed b: with y_i = T_i β_i^(−b), d events, the log-likelihood
ℓ = Σ_ev [log k − log T_i + k(log y_i − a)] − Σ_all (y_i e^(−a))^k has its maximum over a at
e^(ak) = Σ y_i^k / d, and its score in k, d/k + Σ_ev log y_i − d Σ y_i^k log y_i / Σ y_i^k,
decreases in k, so the shape is one root (:func:`_shape`). The profile ℓ_p(b) is unimodal: ℓ is
jointly concave in (k, ka, kb) (the extreme-value error density is log-concave), and
b = (kb)/k is a linear-fractional image, which keeps its superlevel sets intervals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from metastab import stats as mstats
from metastab.results import read_table
from metastab.studies.compare import PASS_IF, Bound, declare
from metastab.studies.measurement import quiet
from metastab.studies.render import fmt
from metastab.studies.verdict import check

from .config import Config

# |b| beyond this is no exponent of β on a grid of β within a factor of ~10: the maximum or an
# end of the interval out there is reported as unbounded (infinite)
EXPONENT_LIMIT = 20.0


@dataclass(frozen=True)
class WeibullFit:
    """The censored Weibull regression of T on log β: exponent ``b`` with its profile interval
    (``low``, ``high``, ±inf where the profile does not drop far enough within
    :data:`EXPONENT_LIMIT`), scale ``a`` (λ(β) = e^a β^b), ``shape`` k, log-likelihood,
    ``shape_p`` (likelihood ratio of k = 1, the exponential law) and ``common_p`` (likelihood
    ratio of one shape and a power law of β against a shape and a scale per β)."""

    b: float
    low: float
    high: float
    a: float
    shape: float
    loglik: float
    shape_p: float
    common_p: float
    events: int
    chains: int

    def median(self, beta: np.ndarray | float) -> np.ndarray:
        """The fitted median λ(β) (log 2)^(1/k)."""
        return np.exp(self.a) * np.asarray(beta, float) ** self.b * math.log(2) ** (1 / self.shape)

    def survival(self, t: np.ndarray, beta: float) -> np.ndarray:
        """The fitted S(t | β)."""
        return np.exp(-((np.asarray(t, float) / self.median(beta)) ** self.shape) * math.log(2))


def _weights(k: float, logy: np.ndarray) -> tuple[float, np.ndarray]:
    """(log Σ y^k, the weights y^k / Σ y^k), without overflow."""
    z = k * logy
    top = float(z.max())
    w = np.exp(z - top)
    total = float(w.sum())
    return top + math.log(total), w / total


def _score(k: float, logy: np.ndarray, event: np.ndarray) -> float:
    """∂ℓ/∂k at the best scale: d/k + Σ_ev log y − d Σ y^k log y / Σ y^k."""
    d = int(event.sum())
    _, w = _weights(k, logy)
    return d / k + float(logy[event].sum()) - d * float((w * logy).sum())


def _shape(logy: np.ndarray, event: np.ndarray) -> float:
    """The maximum-likelihood shape k at fixed y: the root of the decreasing score, searched in
    log k (ValueError where there is none: all events at one y)."""
    from scipy import optimize

    lo, hi = -12.0, 12.0  # k in [e^-12, e^12]: a shape outside is a degenerate sample
    if _score(math.exp(hi), logy, event) > 0 or _score(math.exp(lo), logy, event) < 0:
        raise ValueError("the Weibull shape has no finite maximum (events at one time only)")
    return math.exp(optimize.brentq(lambda u: _score(math.exp(u), logy, event), lo, hi, xtol=1e-12))


def _profile_k(logt: np.ndarray, event: np.ndarray, k: float) -> tuple[float, float]:
    """(ℓ, a) at shape k, the scale at its maximum; log t centred by the caller."""
    d = int(event.sum())
    log_sum, _ = _weights(k, logt)
    a = (log_sum - math.log(d)) / k
    ll = d * math.log(k) + (k - 1) * float(logt[event].sum()) - d * k * a - d
    return ll, a


def _loglik(b: float, logt: np.ndarray, logbeta: np.ndarray, event: np.ndarray) -> float:
    """ℓ_p(b): the log-likelihood of the lengths maximised over the scale and the shape at
    exponent b."""
    logy = logt - b * logbeta
    ll, _ = _profile_k(logy, event, _shape(logy, event))
    return ll - b * float(logbeta[event].sum())  # the Jacobian dy/dT = β^(−b) of the events


def _single(logt: np.ndarray, event: np.ndarray) -> float:
    """The largest log-likelihood of one Weibull sample."""
    return _profile_k(logt, event, _shape(logt, event))[0]


def weibull_fit(
    length: np.ndarray, censored: np.ndarray, beta: np.ndarray, level: float
) -> WeibullFit | None:
    """The censored Weibull regression of the plateau lengths on log β (module notes); None
    where it has no finite maximum (no event, or events that do not identify the exponent)."""
    from scipy import optimize, stats

    length = np.asarray(length, float)
    event = ~np.asarray(censored, bool)
    beta = np.asarray(beta, float)
    if not (length > 0).all():
        raise ValueError(f"plateau lengths must be > 0, got {float(length.min())!r}")
    if event.sum() < 2 or np.unique(beta[event]).size < 2:
        return None
    centre = float(np.log(length).mean())  # centred log times: the same b, k; a shifted back
    logt, logbeta = np.log(length) - centre, np.log(beta)

    def ll(b: float) -> float:
        return _loglik(b, logt, logbeta, event)

    try:
        best = optimize.minimize_scalar(
            lambda b: -ll(b),
            bounds=(-EXPONENT_LIMIT, EXPONENT_LIMIT),
            method="bounded",
            options={"xatol": 1e-9},
        )
    except ValueError:
        return None
    b = float(best.x)
    if EXPONENT_LIMIT - abs(b) < 1e-3:
        return None  # the maximum at an end: no finite exponent
    top = ll(b)
    drop = float(stats.chi2.ppf(level, 1)) / 2

    def gap(v: float) -> float:
        try:
            return ll(v) - (top - drop)
        except ValueError:  # a degenerate shape far from the data: below any level
            return -math.inf

    ends = []
    for sign in (-1.0, 1.0):
        step, inside = 0.05, True
        while inside and step < 2 * EXPONENT_LIMIT:
            step *= 2
            inside = gap(b + sign * step) > 0
        far = b + sign * step
        ends.append(
            sign * math.inf
            if inside
            else optimize.brentq(lambda v: max(gap(v), -1e300), *sorted((b, far)), xtol=1e-10)
        )
    logy = logt - b * logbeta
    k = _shape(logy, event)
    _, a_c = _profile_k(logy, event, k)
    # k = 1: the exponential law, b maximised at k = 1 (a one-dimensional profile again)
    exp1 = optimize.minimize_scalar(
        lambda v: -(_profile_k(logt - v * logbeta, event, 1.0)[0] - v * logbeta[event].sum()),
        bounds=(-EXPONENT_LIMIT, EXPONENT_LIMIT),
        method="bounded",
        options={"xatol": 1e-9},
    )
    shape_p = float(stats.chi2.sf(max(2 * (top + float(exp1.fun)), 0.0), 1))
    common_p = math.nan
    groups = [beta == v for v in np.unique(beta)]
    if len(groups) > 2:  # a shape and a scale per β: 2B parameters against 3
        try:
            sat = sum(_single(logt[g], event[g]) for g in groups)
            common_p = float(stats.chi2.sf(max(2 * (sat - top), 0.0), 2 * len(groups) - 3))
        except ValueError:  # a β without events has no shape of its own
            pass
    return WeibullFit(
        b=b,
        low=float(ends[0]),
        high=float(ends[1]),
        a=a_c + centre,
        shape=k,
        loglik=top,
        shape_p=shape_p,
        common_p=common_p,
        events=int(event.sum()),
        chains=int(event.size),
    )


def restricted_mean(km: mstats.Survival, tau: float, level: float) -> tuple[float, float, float]:
    """(mean, low, high): the restricted mean ∫_0^τ Ŝ(t) dt of a Kaplan–Meier curve with the
    normal interval of the Greenwood-type variance Σ_{u_j ≤ τ} A_j² d_j / (n_j (n_j − d_j)),
    A_j = ∫_{u_j}^τ Ŝ (Klein and Moeschberger §4.5; a term with n_j = d_j has A_j = 0).

    >>> km = mstats.survival([1.0, 2.0, 4.0], [False, False, True])
    >>> restricted_mean(km, 4.0, 0.95)[0]  # 1 + 2/3 + 2 · 1/3
    2.333333333333333
    """
    from scipy import stats

    u = np.concatenate([[0.0], km.time[km.time < tau], [tau]])
    s = np.concatenate([[1.0], km.probability[km.time < tau]])  # Ŝ on [u_j, u_j+1)
    pieces = s * np.diff(u)
    mean = float(pieces.sum())
    tail = np.cumsum(pieces[::-1])[::-1][1:]  # A_j = ∫_{u_j}^τ Ŝ at each observed u_j < τ
    at = km.time < tau
    n, d = km.at_risk[at].astype(float), km.events[at].astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(n > d, tail**2 * d / (n * (n - d)), 0.0)
    half = float(stats.norm.ppf(0.5 + level / 2) * math.sqrt(terms.sum()))
    return mean, mean - half, mean + half


def per_beta(lengths: pd.DataFrame, tau: float, level: float) -> pd.DataFrame:
    """Per β: starts, events, the censored fraction, the Kaplan–Meier median with its
    Brookmeyer–Crowley interval (inf where Ŝ or the band's end stays above ½) and the restricted
    mean up to τ with its interval, from the columns beta, length, censored."""
    rows = []
    for beta, g in lengths.groupby("beta"):
        cens = g["censored"].to_numpy(bool)
        km, _ = quiet(mstats.survival, g["length"].to_numpy(float), cens, confidence_level=level)
        low, high = km.median_interval()
        mean, mlow, mhigh = restricted_mean(km, tau, level)
        rows.append(
            {
                "beta": float(beta),
                "starts": len(g),
                "events": int((~cens).sum()),
                "censored": float(cens.mean()),
                "median": km.median,
                "median_low": low,
                "median_high": high,
                "rmst": mean,
                "rmst_low": mlow,
                "rmst_high": mhigh,
            }
        )
    return pd.DataFrame(rows)


def censor_at(lengths: pd.DataFrame, span: float) -> pd.DataFrame:
    """The plateaus as a shorter run would have seen them: censored at ``span`` (horizon − t0)
    where longer (a drop at exactly ``span`` stays an event, as at the horizon)."""
    longer = lengths["length"] > span
    return lengths.assign(
        length=np.where(longer, span, lengths["length"]),
        censored=np.where(longer, 1, lengths["censored"]),
    )


def exponential_fit(lengths: pd.DataFrame, span: float, level: float) -> dict:
    """The exponential regression log E[T] = a + b log β of :func:`metastab.stats.fit_scaling`
    (law ``"exponential"``, x = log β): b with its profile interval, deviance and df, and the
    diagnostics it raised (NaN where it cannot be fitted)."""
    frame = pd.DataFrame(
        {
            "log_beta": np.log(lengths["beta"].to_numpy(float)),
            "steps": lengths["length"].to_numpy(float),
            "censored": lengths["censored"].to_numpy(bool),
            "max_steps": span,
        }
    )
    try:
        fit, notes = quiet(
            mstats.fit_scaling, frame, x="log_beta", law="exponential", confidence_level=level
        )
        low, high = fit.confidence_interval("slope")
    except ValueError as exc:
        return {
            "b": math.nan,
            "low": math.nan,
            "high": math.nan,
            "deviance": math.nan,
            "df": 0,
            "notes": [str(exc)],
        }
    return {
        "b": fit.slope,
        "low": low,
        "high": high,
        "deviance": fit.deviance,
        "df": fit.df,
        "notes": notes,
    }


# --------------------------------------------------------------------------- the study's rows


def lifetime_fit(
    out: Path, fraction: float, t0: float, level: float, horizon: float | None = None
) -> dict:
    """The plateau lengths from ``t0`` (clusters of ≥ fraction · n tokens), censored at
    ``horizon`` (default: the run's): the Weibull regression (None where it has no finite
    maximum), its b, low, high (NaN then), the per-β Kaplan–Meier table, the exponential
    regression and the span horizon − t0."""
    life = read_table(Path(out) / "lifetimes.csv")[0]
    life = life[(life["fraction"] == fraction) & (life["t0"] == t0)]
    if life.empty:
        raise ValueError(f"no plateau lengths at fraction={fraction!r}, t0={t0!r}")
    full = float(life["horizon"].iloc[0])
    horizon = full if horizon is None else float(horizon)
    if not t0 < horizon <= full:
        raise ValueError(f"horizons: each must lie in ({t0:g}, {full:g}], got {horizon!r}")
    span = horizon - t0
    life = censor_at(life, span)
    fit = weibull_fit(life["length"], life["censored"], life["beta"], level)
    return {
        "weibull": fit,
        "b": math.nan if fit is None else fit.b,
        "low": math.nan if fit is None else fit.low,
        "high": math.nan if fit is None else fit.high,
        "per_beta": per_beta(life, span, level),
        "exponential": exponential_fit(life, span, level),
        "span": span,
        "horizon": horizon,
    }


def exponent_miss(fit: dict, b: float) -> float:
    """How far the interval of the fitted exponent lies from b (0 inside; NaN unmeasured)."""
    if math.isnan(fit["low"]):
        return math.nan
    return max(0.0, fit["low"] - b, b - fit["high"])


def censored_text(fit: dict) -> str:
    """'β = 16: 60 %, ...': the censored fraction per β."""
    return ", ".join(
        f"β = {r.beta:g}: {100 * r.censored:.0f} %" for r in fit["per_beta"].itertuples()
    )


def fit_text(fit: dict) -> str:
    """The Weibull fit's numbers for a rule: b, shape, events."""
    w = fit["weibull"]
    if w is None:
        return "no finite maximum (too few events, or events at one β only)"
    return f"b = {fmt(w.b, 4)}, shape k = {fmt(w.shape, 3)}, {w.events} events of {w.chains} starts"


def claim_rows(out: Path, config: Config, where: str, source: str) -> list[dict]:
    """The claim ``lifetime`` and its power row (the module notes; config.toml's comment),
    ``where`` the setting's words, ``source`` the statement's."""
    level, tol = float(config.confidence_level), float(config.exponent_tolerance)
    fit = lifetime_fit(out, float(config.min_fraction), float(config.reading_time), level)

    def lifetime(exponents: list[float]) -> Bound:
        misses = [exponent_miss(fit, b) for b in exponents]
        measured = math.nan if any(math.isnan(m) for m in misses) else min(misses)
        return Bound(
            f"{where}: per start the plateau length T from t (time until the cluster count "
            "first falls below its value at t), right-censored at horizon − t = "
            f"{fit['span']:g}; the censored Weibull regression S(t | β) = exp(−(t/(e^a β^b))^k), "
            f"every quantile ∝ β^b, by maximum likelihood over all starts ({fit_text(fit)}), "
            f"interval: {level:g} profile likelihood; measured: the distance of the interval "
            "from b = " + " or ".join(f"{b:g}" for b in exponents),
            measured,
            "<",
            tol,
            than="threshold (`exponent_tolerance`)",
            tail=f"; censored: {censored_text(fit)}",
            low=fit["low"],
            high=fit["high"],
            template=PASS_IF,
            testable=not math.isnan(measured),
        )

    wrong = [float(b) for b in config.power.lifetime_exponents]
    return declare(
        lifetime,
        [float(config.lifetime_exponent)],
        wrong,
        "b = "
        + " or ".join(f"{b:g}" for b in wrong)
        + " (the worst-case speed bound against a radius ∝ δ; a persistence ∝ β)",
        criterion="lifetime",
        role="claim",
        statement="the metastable clusters persist for a time that does not depend on β at "
        f"δ = 4β^(−1/2) (exponent of β: {float(config.lifetime_exponent):g})",
        source=source,
    )


def sensitivity(config: Config) -> list[tuple[str, float, float, float]]:
    """The settings of the lifetime fit beside the claim's, one changed at a time:
    (criterion, minimum fraction, reading time, horizon)."""
    f, t, h = float(config.min_fraction), float(config.reading_time), float(config.horizon)
    rows = [(f"lifetime_fraction_{g:g}", g, t, h) for g in map(float, config.min_fractions)]
    rows += [(f"lifetime_t_{s:g}", f, s, h) for s in map(float, config.reading_times) if s < h]
    rows += [(f"lifetime_horizon_{g:g}", f, t, g) for g in map(float, config.horizons) if g > t]
    return [r for r in rows if (r[1], r[2], r[3]) != (f, t, h)]


def context_rows(out: Path, config: Config) -> list[dict]:
    """The lifetime's context: per β the Kaplan–Meier medians and restricted means, the
    exponent of the medians, the exponential regression, the Weibull shape, and the exponent
    at the other settings (:func:`sensitivity`)."""
    level, tol = float(config.confidence_level), float(config.exponent_tolerance)
    b0, t = float(config.lifetime_exponent), float(config.reading_time)
    fit = lifetime_fit(out, float(config.min_fraction), t, level)
    per, w, span = fit["per_beta"], fit["weibull"], fit["span"]
    rows = []
    finite = per[np.isfinite(per["median"])]
    slope = (
        float(np.polyfit(np.log(finite["beta"]), np.log(finite["median"]), 1)[0])
        if len(finite) >= 2
        else math.nan
    )
    rows.append(
        check(
            "lifetime_where_measured",
            "context",
            "exponent of the Kaplan–Meier median plateau length over the β where it is measured",
            measured=slope,
            rule="least squares in log–log over β = "
            + (", ".join(f"{b:g}" for b in finite["beta"]) or "none")
            + f"; where Ŝ stays above ½ the median exceeds {span:g} (horizon − t): β = "
            + (", ".join(f"{b:g}" for b in per["beta"][~np.isfinite(per["median"])]) or "none"),
            source="this study",
        )
    )
    ex = fit["exponential"]
    rows.append(
        check(
            "lifetime_exponential",
            "context",
            "exponent b of β of the mean plateau length under the exponential law",
            measured=ex["b"],
            low=ex["low"],
            high=ex["high"],
            threshold=b0,
            rule="metastab.stats.fit_scaling(law='exponential') of log E[T] = a + b log β, "
            f"the joint censored likelihood; interval: {level:g} profile likelihood; deviance "
            f"{fmt(ex['deviance'], 3)} on {ex['df']} df"
            + (f"; {'; '.join(ex['notes'])}" if ex["notes"] else ""),
            source="this study",
        )
    )
    rows.append(
        check(
            "lifetime_shape",
            "context",
            "shape k of the Weibull regression of `lifetime` (1: the exponential law; < 1: "
            "a falling hazard, a long tail)",
            measured=math.nan if w is None else w.shape,
            threshold=1.0,
            rule="likelihood ratio of k = 1: p = "
            + fmt(math.nan if w is None else w.shape_p, 3)
            + "; of one shape and a power of β against a shape and a scale per β: p = "
            + fmt(math.nan if w is None else w.common_p, 3),
            source="this study",
        )
    )
    for r in per.itertuples():
        rows.append(
            check(
                f"lifetime_beta_{r.beta:g}",
                "context",
                f"Kaplan–Meier median plateau length from t = {t:g} at β = {r.beta:g}",
                measured=r.median,
                low=r.median_low,
                high=r.median_high,
                rule=f"{r.events} drops of {r.starts} starts ({100 * r.censored:.0f} % censored "
                f"at horizon − t = {span:g}); interval: {level:g} Brookmeyer–Crowley (inf: the "
                f"band stays above ½); restricted mean up to {span:g}: {fmt(r.rmst, 4)} "
                f"[{fmt(r.rmst_low, 4)}, {fmt(r.rmst_high, 4)}]",
                source="this study",
            )
        )
    for name, f, s, h in sensitivity(config):
        other = lifetime_fit(out, f, s, level, h)
        miss = exponent_miss(other, b0)
        rows.append(
            check(
                name,
                "context",
                f"exponent b of `lifetime` with clusters of ≥ {f:g} n tokens, read from "
                f"t = {s:g}, censored at the horizon {h:g}",
                measured=other["b"],
                low=other["low"],
                high=other["high"],
                threshold=b0,
                rule=f"as `lifetime` ({fit_text(other)}); distance of the interval from "
                f"{b0:g}: {fmt(miss, 3)}, the claim's rule would give "
                + ("NA" if math.isnan(miss) else "pass" if miss < tol else "fail")
                + f"; censored: {censored_text(other)}",
                source="this study",
            )
        )
    return rows
