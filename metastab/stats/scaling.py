"""The exponential scaling law of escape times across β: one joint censored likelihood.

Per β value k there are d_k escapes in exposure E_k (:mod:`metastab.stats.rates`), and the law is
log E[T](β) = a + b β (+ c log β), fitted jointly so that β values with few or no escapes still
count (a Poisson / binomial regression with log-exposure offset), with Fisher and
profile-likelihood intervals for the exponent b, a likelihood-ratio test of the prefactor term
and deviance/df for overdispersion. :func:`fit_report` adds the per-β table.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..exceptions import DiagnosticWarning
from .censoring import CensoredSample, censored_sample, check_law
from .display import html_table, interval, number
from .intervals import ConfidenceInterval, check_level
from .memorylessness import memoryless_test
from .rates import (
    BOOTSTRAP_RESAMPLES,
    MEMORYLESS_LEVEL,
    EscapeRate,
    bootstrap_rates,
    rate_interval,
)

if TYPE_CHECKING:
    pass

__all__ = ["ScalingFit", "fit_report", "fit_scaling"]


# --------------------------------------------------------------------------- scaling law
#
# Joint likelihood over all x (= β) values. Per x value k: d_k events in exposure E_k, and
#     log E[T](x) = a + b x (+ c log x),   rate(x) = exp(−a − b x − c log x),
# with rate = λ (exponential law: Poisson likelihood d log λ − λE, the Poisson GLM of d_k with
# offset log E_k) or rate = p (geometric law: the exact d log p + (E − d) log(1 − p), a binomial
# GLM with log link, so that log E[T] = log(1/p) is exactly linear). Fitted by Newton's method
# on the centred design (x − x̄, log x − mean log x); intervals are in the uncentred (a, b, c).

_PARAMS = ("intercept", "slope", "prefactor")
# log of the largest float64, less a margin for the rounding of log E + η
_LOG_HUGE = math.log(np.finfo(np.float64).max) - 1e-6


def _terms(
    eta: np.ndarray, d: np.ndarray, E: np.ndarray, law: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row ℓ, dℓ/dη and −d²ℓ/dη² at η = log rate (exposure E > 0): ℓ = −inf where the
    rate is infeasible (p >= 1) or E·e^η passes the float range (far-out trial points of the
    profile search, which the caller rejects); never a floating-point warning."""
    from scipy import special  # scipy is imported where used: see the package notes

    if law == "exponential":
        huge = np.maximum(eta, eta + np.log(E)) >= _LOG_HUGE
        mean = np.where(huge, np.inf, E * np.exp(np.where(huge, 0.0, eta)))  # events expected
        return np.where(huge, -np.inf, d * eta - mean), d - mean, mean
    mu = np.exp(np.minimum(eta, 1.0))  # η > 1 is infeasible whatever mu > 1 is
    f = E - d
    ok = mu < 1
    m = np.where(ok, mu, 0.0)
    ll = np.where(
        ok, d * eta + special.xlog1py(f, -m), np.where((f == 0) & (mu == 1), 0.0, -np.inf)
    )
    q = m / (1 - m)
    return ll, d - f * q, f * q / (1 - m)


def _newton(
    Z: np.ndarray, offset: np.ndarray, d: np.ndarray, E: np.ndarray, law: str, theta: np.ndarray
) -> tuple[np.ndarray, float, np.ndarray]:
    """Maximise ℓ(θ) with log rate = offset − Zθ; returns (θ, ℓ, information ZᵀHZ)."""

    def loglik(th: np.ndarray) -> float:
        value = _terms(offset - Z @ th, d, E, law)[0].sum()
        return value if np.isfinite(value) else -np.inf

    theta = np.asarray(theta, dtype=np.float64)
    current = loglik(theta)
    if not np.isfinite(current):
        raise ValueError("infeasible start (a fitted per-step escape probability >= 1)")
    for _ in range(200):
        _, g, h = _terms(offset - Z @ theta, d, E, law)
        info = Z.T @ (h[:, None] * Z)
        step = np.linalg.lstsq(info, -Z.T @ g, rcond=None)[0]
        if not np.isfinite(step).all():  # the information underflowed: a far-out trial point
            raise ValueError("Newton's method found no ascent direction")
        t = 1.0
        while (new := loglik(theta + t * step)) < current - 1e-12 * abs(current):
            t /= 2
            if t < 1e-12:
                raise ValueError("Newton's method found no ascent direction")
        theta, current = theta + t * step, new
        if np.abs(theta).max() > 1e8:
            break
        if np.abs(t * step).max() < 1e-10 * (1 + np.abs(theta).max()):
            _, g, h = _terms(offset - Z @ theta, d, E, law)
            # the maximum only where the score vanishes on the scale of its terms: a step made
            # small by the line search or by an underflowed information is no convergence
            if (np.abs(Z.T @ g) > 1e-6 * (np.abs(Z).T @ (d + np.abs(d - g)))).any():
                raise ValueError("Newton's method stalled short of the maximum")
            return theta, current, Z.T @ (h[:, None] * Z)
    raise ValueError(
        "the scaling fit did not converge: the maximum-likelihood exponent is "
        "infinite (events at too few x values, zero events elsewhere)"
    )


class _Profile:
    """The profile log-likelihood ℓ_p(v) = max ℓ(θ) over the other parameters at θ_j = v.

    ℓ is concave in θ (concave in each η, and η is linear in θ), so ℓ_p is concave in v and
    Newton's ascent from any feasible start reaches the maximum; what fails is a start far from
    it (rates that overflow, an information that underflows). So each v starts from the solved
    point nearest to it, moved along the tangent of the profile path, dθ_f/dv = −I_ff⁻¹ I_fj
    (the derivative of the score equations; at θ̂ the regression Σ_fj/Σ_jj of the Wald
    ellipse): a continuation along the profile, which reaches points far out in the parameter
    without leaving the neighbourhood of the data. Where Newton's method still fails, the point
    halfway is solved first; where no choice of the others gives every p < 1 (geometric law,
    decided by :func:`_feasible`) ℓ_p = −inf. A failure is never read as a drop: a point that
    cannot be maximised raises.
    """

    def __init__(
        self,
        Z: np.ndarray,
        d: np.ndarray,
        E: np.ndarray,
        law: str,
        j: int,
        theta: np.ndarray,
    ) -> None:
        self.Z, self.d, self.E, self.law, self.j, self.name = Z, d, E, law, j, _PARAMS[j]
        self.free = [k for k in range(Z.shape[1]) if k != j]
        self.solved: dict[float, tuple[np.ndarray, np.ndarray]] = {}
        self._keep(float(theta[j]), np.asarray(theta, np.float64)[self.free])

    def _keep(self, v: float, th: np.ndarray) -> None:
        """Store the maximiser ``th`` at ``v`` with the path's tangent there."""
        Z, j, f = self.Z, self.j, self.free
        h = _terms(-Z @ np.insert(th, j, v), self.d, self.E, self.law)[2]
        info = Z.T @ (h[:, None] * Z)
        tangent = np.linalg.lstsq(info[np.ix_(f, f)], -info[f, j], rcond=None)[0]
        self.solved[v] = th, tangent if np.isfinite(tangent).all() else np.zeros_like(th)

    def __call__(self, v: float, depth: int = 0) -> float:
        near = min(self.solved, key=lambda u: (abs(u - v), u))
        th, tangent = self.solved[near]
        offset, Zf = -v * self.Z[:, self.j], self.Z[:, self.free]
        for start in (th + (v - near) * tangent, th):
            if self.j > 0 and not np.isfinite(
                _terms(offset - Zf @ start, self.d, self.E, self.law)[0].sum()
            ):
                start = start.copy()  # raise the intercept until every p < 1 (a feasible start)
                start[0] += max(float((offset - Zf @ start).max()), -1.0) + 1.0
            try:
                fitted, ll, _ = _newton(Zf, offset, self.d, self.E, self.law, start)
            except (ValueError, np.linalg.LinAlgError):
                continue
            self._keep(v, fitted)
            return ll
        if self.law == "geometric" and not _feasible(Zf, offset):
            return -math.inf  # every choice of the others has some p >= 1
        mid = (near + v) / 2  # a shorter step of the continuation first
        if depth == 60 or mid in (near, v):
            raise ValueError(
                f"the profile likelihood of {self.name} could not be maximised at "
                f"{self.name}={float(v)!r}; use method='wald'"
            )
        self(mid, depth + 1)
        return self(v, depth + 1)


def _feasible(Z: np.ndarray, offset: np.ndarray) -> bool:
    """Whether some θ has every log rate offset − Zθ < 0 (every p < 1): the linear programme
    max s subject to Zθ − s >= offset, s <= 1, has s > 0."""
    from scipy import optimize

    n, m = Z.shape
    res = optimize.linprog(
        np.r_[np.zeros(m), -1.0],
        A_ub=np.c_[-Z, np.ones(n)],
        b_ub=-offset,
        bounds=[(None, None)] * m + [(None, 1.0)],
    )
    return bool(res.status == 0 and -res.fun > 0)


@dataclass(frozen=True, eq=False)
class ScalingFit:
    """Maximum-likelihood fit of log E[T] = a + b·x (+ c·log x) across x = β.

    ``intercept`` a, ``slope`` b (the Arrhenius exponent), ``prefactor`` c (None when not
    fitted); ``cov`` is the inverse observed Fisher information of (a, b[, c]). ``deviance``
    on ``df`` degrees of freedom (and ``pearson``) measure overdispersion: deviance/df ≫ 1
    means the law does not fit and the intervals are too narrow. ``lrt_statistic`` and
    ``lrt_pvalue`` test c = 0 when the prefactor is fitted. ``wls_slope`` ± ``wls_stderr`` is
    the cross-check from weighted least squares on log(E_k/d_k) (x values with events only:
    biased when some have none). ``per_beta`` holds one row per x value. Made by
    :func:`fit_scaling`.

    Attributes
    ----------
    law : str
        The escape law, ``"geometric"`` or ``"exponential"``.
    x : str
        The covariate column (``"beta"``).
    intercept, slope : float
        a and b of log E[T] = a + b·x (+ c·log x); b is the Arrhenius exponent.
    prefactor : float or None
        c, or None when not fitted.
    cov : ndarray, shape (2, 2) or (3, 3)
        The inverse observed Fisher information of (a, b[, c]).
    loglik : float
        The maximised log-likelihood.
    deviance : float
        The deviance against the saturated model (one rate per x value).
    df : int
        Its degrees of freedom: the number of x values with exposure, less the parameters.
    pearson : float
        Pearson's statistic on the same degrees of freedom.
    lrt_statistic, lrt_pvalue : float or None
        The likelihood-ratio test of c = 0; None when the prefactor is not fitted.
    wls_slope, wls_stderr : float
        The slope from weighted least squares on log(E_k/d_k) and its standard error.
    confidence_level : float
        The default level of :meth:`confidence_interval`.
    per_beta : pandas.DataFrame
        One row per x value: chains, events, censored, exposure and the fitted rate.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from metastab.stats import fit_scaling
    >>> rng = np.random.default_rng(0)
    >>> beta = np.repeat([1.0, 2.0, 3.0], 200)
    >>> T = rng.geometric(np.exp(-1.0 - 1.5 * beta))
    >>> fit = fit_scaling(pd.DataFrame({"beta": beta, "steps": np.minimum(T, 100),
    ...                                 "censored": T > 100}))
    >>> round(fit.intercept, 2), round(fit.slope, 2), fit.df, fit.prefactor
    (1.22, 1.43, 1, None)
    """

    law: str
    x: str
    intercept: float
    slope: float
    prefactor: float | None
    cov: np.ndarray = field(repr=False)
    loglik: float
    deviance: float
    df: int
    pearson: float
    lrt_statistic: float | None
    lrt_pvalue: float | None
    wls_slope: float
    wls_stderr: float
    confidence_level: float
    per_beta: pd.DataFrame = field(repr=False)
    _data: tuple = field(repr=False)

    @property
    def params(self) -> np.ndarray:
        """The estimates (a, b[, c])."""
        return np.array(
            [self.intercept, self.slope] + ([self.prefactor] if self.prefactor is not None else [])
        )

    def _index(self, param: str) -> int:
        names = _PARAMS[: self.params.size]
        if param not in names:
            raise ValueError(f"param must be one of {names}, got {param!r}")
        return names.index(param)

    def stderr(self, param: str = "slope") -> float:
        """Wald standard error sqrt(I⁻¹_jj)."""
        j = self._index(param)
        return float(math.sqrt(self.cov[j, j]))

    def confidence_interval(
        self,
        param: str = "slope",
        confidence_level: float | None = None,
        *,
        method: str = "profile",
    ) -> ConfidenceInterval:
        """(low, high) for ``param`` in {"intercept", "slope", "prefactor"} (``None``: the level
        of the fit).

        ``method="wald"``: estimate ± z·stderr (Fisher information). ``method="profile"``:
        {θ_j : 2(ℓ̂ − max_{others} ℓ) <= χ²_1(level)}, an end is ±inf if ℓ does not drop that
        far within 2³⁰ standard errors; ValueError if the profile cannot be maximised somewhere.
        """
        from scipy import optimize, stats

        j = self._index(param)
        level = check_level(self.confidence_level if confidence_level is None else confidence_level)
        est, se = self.params[j], self.stderr(param)
        if method == "wald":
            z = stats.norm.ppf(0.5 + level / 2)
            return ConfidenceInterval(float(est - z * se), float(est + z * se))
        if method != "profile":
            raise ValueError(f"method must be 'profile' or 'wald', got {method!r}")
        x, d, E = self._data
        profile = _Profile(
            _design(x, self.params.size, center=False), d, E, self.law, j, self.params
        )
        target = self.loglik - stats.chi2.ppf(level, 1) / 2

        def gap(v: float) -> float:  # −inf (no p < 1 possible) as a finite number for brentq
            return max(profile(v) - target, -1e300)

        if not gap(est) > 0:
            raise ValueError(
                f"the profile likelihood of {param} could not be evaluated at the "
                "estimate; use method='wald'"
            )
        ends = []
        for sign in (-1.0, 1.0):
            k = 1.0
            while (inside := gap(est + sign * k * se) > 0) and k < 2.0**30:
                k *= 2
            far = est + sign * k * se
            ends.append(
                sign * math.inf
                if inside
                else optimize.brentq(gap, *sorted((est, far)), xtol=1e-10 * (1 + abs(est)))
            )
        return ConfidenceInterval(*ends)

    def log_mean(self, x: Any) -> np.ndarray:
        """Fitted log E[T] = a + b x (+ c log x)."""
        return _design(np.asarray(x, np.float64), self.params.size, center=False) @ self.params

    def band(self, x: Any, confidence_level: float | None = None) -> ConfidenceInterval:
        """Pointwise Wald band (low, high) for log E[T] at ``x``: ± z·sqrt(z(x)ᵀ I⁻¹ z(x))."""
        from scipy import stats

        level = check_level(self.confidence_level if confidence_level is None else confidence_level)
        Z = _design(np.asarray(x, np.float64), self.params.size, center=False)
        half = stats.norm.ppf(0.5 + level / 2) * np.sqrt(np.einsum("ij,jk,ik->i", Z, self.cov, Z))
        mid = Z @ self.params
        return ConfidenceInterval(mid - half, mid + half)

    def _law(self) -> str:
        return f"a + b·{self.x}" + (f" + c·log {self.x}" if self.prefactor is not None else "")

    def _rows(self) -> tuple[str, str, list[list[str]]]:
        """The profile intervals (Wald's where the profile cannot be evaluated) of the
        parameters, and the counts behind them."""
        rows, methods = [], set()
        for name, est in zip(_PARAMS, self.params):
            try:
                ci, how = self.confidence_interval(name), "profile"
            except ValueError:
                ci, how = self.confidence_interval(name, method="wald"), "Wald"
            methods.add(how)
            rows.append([name, number(est), number(self.stderr(name)), interval(*ci)])
        per = self.per_beta
        counts = (
            f"deviance {number(self.deviance)} on {self.df} df; {len(per)} {self.x} values, "
            f"{int(per['events'].sum())} events of {int(per['chains'].sum())} chains"
        )
        return counts, "/".join(sorted(methods)), rows

    def __repr__(self) -> str:
        counts, how, rows = self._rows()
        estimates = ", ".join(f"{r[0]}={r[1]} {r[3]}" for r in [rows[1], rows[0], *rows[2:]])
        return (
            f"ScalingFit({self.law}, log E[T] = {self._law()}: {estimates} "
            f"({self.confidence_level:.0%} {how} CI); {counts})"
        )

    def _repr_html_(self) -> str:
        counts, how, rows = self._rows()
        return html_table(
            f"log E[T] = {self._law()} ({self.law} law)",
            ["", "estimate", "stderr", f"{self.confidence_level:.0%} CI ({how})"],
            rows,
            counts,
        )

    def to_frame(self) -> pd.DataFrame:
        """One row per parameter: estimate, stderr, Wald and profile intervals, fit summary."""
        rows = []
        for name, est in zip(_PARAMS, self.params):
            wl, wh = self.confidence_interval(name, method="wald")
            pl, ph = self.confidence_interval(name, method="profile")
            rows.append(
                {
                    "parameter": name,
                    "estimate": est,
                    "stderr": self.stderr(name),
                    "wald_low": wl,
                    "wald_high": wh,
                    "profile_low": pl,
                    "profile_high": ph,
                    "confidence_level": self.confidence_level,
                    "law": self.law,
                    "deviance": self.deviance,
                    "df": self.df,
                    "pearson": self.pearson,
                    "lrt_pvalue": self.lrt_pvalue,
                }
            )
        return pd.DataFrame(rows)


def _design(x: np.ndarray, p: int, center: bool = True) -> np.ndarray:
    cols = [np.ones_like(x), x] + ([np.log(x)] if p == 3 else [])
    Z = np.column_stack(cols)
    if center:
        Z[:, 1:] -= Z[:, 1:].mean(axis=0)
    return Z


def _start(Z: np.ndarray, d: np.ndarray, E: np.ndarray) -> np.ndarray:
    """Weighted least squares on log(E/(d + 1/2)): a feasible Newton start."""
    w = np.sqrt(d + 0.5)
    theta = np.linalg.lstsq(Z * w[:, None], np.log(E / (d + 0.5)) * w, rcond=None)[0]
    if (Z @ theta <= 0).any():  # a per-step probability >= 1: start flat instead
        theta = np.zeros(Z.shape[1])
        theta[0] = max(math.log(E.sum() / max(d.sum(), 0.5)), 1e-3)
    return theta


def _aggregate(
    frame: pd.DataFrame, x: str, law: str, start: Any
) -> tuple[pd.DataFrame, CensoredSample]:
    """Per x value: chains, events, censored, exposure (validated, events at 0 excluded)."""
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"frame must be a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in (x, "steps", "censored") if c not in frame]
    if missing:
        raise ValueError(f"frame lacks the columns {missing} (has {list(frame.columns)})")
    fixed = {"chain", "steps", "censored", "absorbed", "max_steps", x}
    if isinstance(start, str):
        if start not in frame:
            raise ValueError(f"start={start!r} is not a column of frame")
        fixed.add(start)
        start = frame[start].to_numpy()
    varying = [c for c in frame.columns if c not in fixed and frame[c].nunique(dropna=False) > 1]
    if "point" in varying and frame.groupby(x)["point"].nunique().max() == 1:
        varying.remove("point")  # a sweep's grid-point index: one per x value, not a parameter
    if varying:
        raise ValueError(
            f"the columns {varying} vary within frame: fit one setting at a time "
            "(filter the frame) or drop them"
        )
    xs = frame[x].to_numpy(dtype=np.float64)
    if not np.isfinite(xs).all():
        raise ValueError(f"column {x!r} must be finite")
    s = censored_sample(
        frame["steps"].to_numpy(),
        frame["censored"].to_numpy(),
        law=law,
        start=start,
        max_steps=frame["max_steps"].to_numpy() if "max_steps" in frame else None,
        absorbed=frame["absorbed"].to_numpy(dtype=bool) if "absorbed" in frame else None,
    )
    g = pd.DataFrame(
        {
            x: xs[s.kept],
            "chains": 1,
            "events": s.event.astype(np.int64),
            "censored": (~s.event).astype(np.int64),
            "exposure": s.time,
        }
    )
    table = g.groupby(x, sort=True).sum().reset_index()
    # the absorbed chains (left out of the sample) counted per x value, 0 where none
    gone = (
        frame["absorbed"].to_numpy(dtype=bool) if "absorbed" in frame else np.zeros(len(xs), bool)
    )
    counts = pd.Series(gone.astype(np.int64)).groupby(xs).sum()
    table["absorbed"] = counts.reindex(table[x].to_numpy(), fill_value=0).to_numpy()
    return table, s


def fit_scaling(
    frame: pd.DataFrame,
    *,
    x: str = "beta",
    law: str = "geometric",
    confidence_level: float = 0.95,
    prefactor: bool = False,
    start: str | Any = None,
) -> ScalingFit:
    """Fit the Arrhenius law log E[T] = a + b·β (+ c·log β) to censored escape times.

    One joint likelihood over all β values (the module notes): β values with few or no events
    still count through their exposure. Newton's method on the centred design.

    Parameters
    ----------
    frame : DataFrame
        One row per chain with columns ``x``, steps, censored (as ``FirstPassage.to_frame()``,
        concatenated over β); other columns must be constant.
    x : str, optional
        The covariate column (default ``"beta"``).
    law : {"geometric", "exponential"}, optional
        Geometric (default): exact d log p + (E − d) log(1 − p) with p = 1/E[T]. Exponential:
        the Poisson regression of event counts with offset log(exposure).
    confidence_level : float, optional
        The default level of the fit's intervals, in (0, 1) (default 0.95).
    prefactor : bool, optional
        Also fit c·log β and test c = 0 by the likelihood ratio (β > 0 needed; default False).
    start : str or array_like, optional
        A column name or per-chain array subtracted from steps (initial transient).

    Returns
    -------
    fit : ScalingFit
        The parameters, their covariance and the goodness of fit.

    Warns
    -----
    DiagnosticWarning
        When the deviance rejects the law (p < 0.001): the intervals then understate the error.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from metastab.stats import fit_scaling
    >>> rng = np.random.default_rng(0)
    >>> beta = np.repeat([1.0, 2.0, 3.0], 200)
    >>> T = rng.geometric(np.exp(-1.0 - 1.5 * beta))
    >>> frame = pd.DataFrame({"beta": beta, "steps": np.minimum(T, 100), "censored": T > 100})
    >>> fit = fit_scaling(frame)
    >>> round(fit.slope, 1), [round(v, 2) for v in fit.confidence_interval("slope")]
    (1.4, [1.3, 1.56])
    """
    law = check_law(law)
    level = check_level(confidence_level)
    return _fit_table(_aggregate(frame, x, law, start)[0], x, law, level, prefactor)


def _fit_table(table: pd.DataFrame, x: str, law: str, level: float, prefactor: bool) -> ScalingFit:
    from scipy import stats

    table = table[table["exposure"] > 0].reset_index(drop=True)
    xs, d, E = (table[c].to_numpy(np.float64) for c in (x, "events", "exposure"))
    p = 3 if prefactor else 2
    if prefactor and (xs <= 0).any():
        raise ValueError(f"prefactor=True needs {x} > 0, got {xs.min()!r}")
    if law == "geometric" and (d == E).any():
        raise ValueError(
            f"every chain escaped at its first step at {x}="
            f"{xs[d == E].tolist()}: p̂ = 1 is the boundary of the geometric law "
            "(no metastability there); drop these values or use law='exponential'"
        )
    if (d > 0).sum() < p:
        raise ValueError(
            f"the exponent is not identifiable: events at {(d > 0).sum()} {x} "
            f"value(s) ({xs[d > 0].tolist()}), need >= {p}"
        )
    Z = _design(xs, p)
    theta, ll, info = _newton(Z, np.zeros_like(d), d, E, law, _start(Z, d, E))
    J = np.eye(p)  # uncentred a = a_c − b x̄ (− c mean log x)
    J[0, 1:] = -_design(xs, p, center=False)[:, 1:].mean(axis=0)
    params = J @ theta
    cov = J @ np.linalg.inv(info) @ J.T
    mu = np.exp(-Z @ theta)
    with np.errstate(all="ignore"):
        saturated = _terms(np.log(d / E), d, E, law)[0]
    deviance = float(2 * (np.where(d > 0, saturated, 0.0).sum() - ll))
    var = E * mu * (1 - mu) if law == "geometric" else E * mu
    pearson = float(((d - E * mu) ** 2 / var).sum())
    df = int(len(d) - p)
    lrt_stat = lrt_p = None
    if prefactor:
        Z2 = _design(xs, 2)
        ll0 = _newton(Z2, np.zeros_like(d), d, E, law, _start(Z2, d, E))[1]
        lrt_stat = float(max(2 * (ll - ll0), 0.0))
        lrt_p = float(stats.chi2.sf(lrt_stat, 1))
    if df > 0 and stats.chi2.sf(deviance, df) < 1e-3:
        warnings.warn(
            f"deviance {deviance:.4g} on {df} df (p = {stats.chi2.sf(deviance, df):.2g}"
            f"): log E[T] = a + b·{x}{' + c·log ' + x if prefactor else ''} does not "
            "fit (overdispersion or a missing term); the intervals understate the error",
            DiagnosticWarning,
            stacklevel=3,
        )
    pos = d > 0  # cross-check: WLS on log mean, weights d
    wls_slope = wls_se = math.nan
    if pos.sum() > p:
        Zp = _design(xs[pos], p)
        W = d[pos]
        A = np.linalg.inv(Zp.T @ (W[:, None] * Zp))
        wls_slope = float((A @ Zp.T @ (W * np.log(E[pos] / d[pos])))[1])
        wls_se = float(math.sqrt(A[1, 1]))
    per = table.copy()
    ci = [rate_interval(int(dk), Ek, law, level, "exact") for dk, Ek in zip(d, E)]
    per["rate"] = d / E
    per["rate_low"], per["rate_high"] = [c[0] for c in ci], [c[1] for c in ci]
    with np.errstate(divide="ignore"):
        per["mean"] = E / d
        per["mean_low"] = 1 / per["rate_high"]
        per["mean_high"] = 1 / per["rate_low"]
    per["one_sided"] = d == 0
    return ScalingFit(
        law=law,
        x=x,
        intercept=float(params[0]),
        slope=float(params[1]),
        prefactor=float(params[2]) if prefactor else None,
        cov=cov,
        loglik=float(ll),
        deviance=deviance,
        df=df,
        pearson=pearson,
        lrt_statistic=lrt_stat,
        lrt_pvalue=lrt_p,
        wls_slope=wls_slope,
        wls_stderr=wls_se,
        confidence_level=level,
        per_beta=per,
        _data=(xs, d, E),
    )


def _note(row: dict) -> str:
    """The per-β table's note on the counts."""
    if row["events"] == 0:
        return "no events: the rate is a one-sided upper bound"
    return "most chains censored" if row["censored"] > row["chains"] / 2 else ""


def fit_report(
    frame: pd.DataFrame,
    *,
    x: str = "beta",
    law: str = "geometric",
    confidence_level: float = 0.95,
    prefactor: bool = False,
    start: str | Any = None,
    memoryless: bool = True,
    n_resamples: int = 499,
    rng: Any = 0,
) -> tuple[pd.DataFrame, ScalingFit]:
    """Everything the ``metastab fit`` command prints: a per-β table and the scaling fit.

    Parameters
    ----------
    frame, x, law, confidence_level, prefactor, start
        As for :func:`fit_scaling`: the chains (one row each, with columns ``x``, steps,
        censored), the covariate, the law, the level, whether to fit c·log β and the clock
        start.
    memoryless : bool, optional
        Add the :func:`~metastab.stats.exponentiality_test` p-value per β, and the bootstrap's
        intervals at the β where it rejects (default True).
    n_resamples : int, optional
        The resamples of each memorylessness test (default 499).
    rng : None, int, SeedSequence or Generator, optional
        Seeds the tests and the bootstrap (default 0: the same table every call).

    Returns
    -------
    per_beta : DataFrame
        Per x value: chains, events, censored, exposure, rate, mean, median with exact
        intervals -- mean and median of the fitted law, not sample statistics (the Kaplan-Meier
        median is :func:`metastab.stats.survival`'s) --, one_sided (no events: upper bound
        only), ``interval`` (the method of the intervals: ``"exact"``, or ``"bootstrap"`` where
        the memorylessness test rejects at :data:`~metastab.stats.rates.MEMORYLESS_LEVEL`, as
        :func:`~metastab.stats.escape_rate` does; the law's median is then NaN),
        memoryless_p and a note.
    fit : ScalingFit
        The scaling fit, as :func:`fit_scaling` makes it.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from metastab.stats import fit_report
    >>> rng = np.random.default_rng(0)
    >>> beta = np.repeat([1.0, 2.0, 3.0], 100)
    >>> T = rng.geometric(np.exp(-1.0 - 1.5 * beta))
    >>> frame = pd.DataFrame({"beta": beta, "steps": np.minimum(T, 100), "censored": T > 100,
    ...                       "max_steps": 100})
    >>> table, fit = fit_report(frame, n_resamples=99)
    >>> table.columns[:5].tolist()
    ['beta', 'chains', 'events', 'censored', 'exposure']
    """
    law = check_law(law)
    level = check_level(confidence_level)
    table, s = _aggregate(frame, x, law, start)
    fit = _fit_table(table, x, law, level, prefactor)
    per = fit.per_beta.copy()
    gen = np.random.default_rng(rng)
    xs = frame[x].to_numpy(np.float64)[s.kept]
    notes, pvals, rows = [], [], []
    for row in per.to_dict("records"):
        d, E = int(row["events"]), float(row["exposure"])
        p, note, reps = math.nan, _note(row), None
        if memoryless and d > 0:
            sub = s.subset(xs == row[x])
            try:
                p = memoryless_test(sub, law, False, int(n_resamples), gen).pvalue
            except ValueError as exc:  # budgets unknown: say so in the table
                note = "; ".join(filter(None, [note, str(exc)]))
            if p <= MEMORYLESS_LEVEL:  # the law's interval is wrong here: the law-free one
                reps = bootstrap_rates(sub.time, sub.event, law, False, BOOTSTRAP_RESAMPLES, gen)
        res = EscapeRate(
            law=law,
            rate=d / E,
            events=d,
            exposure=E,
            chains=int(row["chains"]),
            censored=int(row["censored"]),
            confidence_level=level,
            method="exact" if reps is None else "bootstrap",
            memoryless_p=p,
            bootstrap=reps,
        )
        rows.append(res.to_frame().iloc[0])
        pvals.append(p)
        notes.append(note)
    law_free = pd.DataFrame(rows, index=per.index)
    cols = ["rate_low", "rate_high", "mean_low", "mean_high", "median", "median_low", "median_high"]
    per[cols] = law_free[cols].to_numpy(np.float64)
    per["interval"] = law_free["method"].to_numpy()
    per["memoryless_p"] = pvals
    per["note"] = notes
    return per, fit
