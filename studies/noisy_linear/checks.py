"""Checks of the noisy-linear study, from ``modes.parquet`` only.

The linear theory ([MR-d]; :func:`metastab.theory.noisy.noisy_growth_rates`): at the uniform state
the degree-ℓ amplitude a_ℓ = N^{−1/2} Σ_i Y_ℓ(x_i) is, to leading order in 1/N, the
Ornstein–Uhlenbeck process da = λ_ℓ a dt + dM of the linearised McKean–Vlasov equation, with

    λ_ℓ = ℓ(ℓ + d − 2)(2K Ŵ_ℓ − 1),
    E[a(t + h) | a(t)] = e^{λ_ℓ h} a(t),
    E|a(t)|² / E|a(0)|² = e^{2λ_ℓ t} + (1 − e^{2λ_ℓ t}) / (1 − 2K Ŵ_ℓ)

(the noise M has d⟨M⟩/dt = 2ℓ(ℓ + d − 2) dim_ℓ in trace, as for N independent Brownian tokens,
and E|a(0)|² = dim_ℓ for i.i.d. uniform starts: the level dim_ℓ / (1 − 2K Ŵ_ℓ) below K_#).

Claims: the fitted rates of degrees 1 and 2 are λ_ℓ (power: the rate without the noise term,
ℓ(ℓ + d − 2) 2K Ŵ_ℓ); the zero of the degree-1 rates, a weighted least-squares line in K
(λ_1 is linear in K) through the grid's K > 0, is K_# within 2 % (power: K_# of the other
dimension); the second moment follows the formula above (power: without its noise-driven level,
e^{2λ t}). Control: at K = 0 the rates are Brownian motion's −ℓ(ℓ + d − 2). Context: the dt and
N effects, the bracketing interpolation of the sign change, the autocorrelation at t = 0.25.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from metastab.results import read_table
from metastab.studies.compare import Bound, declare
from metastab.studies.verdict import check, checks_frame
from metastab.theory.noisy import critical_coupling_linear, funk_hecke_coefficients

from .config import Config

SOURCE = "Mun, Rosenzweig (arXiv 2606.05140)"
KEYS = ["set", "d", "factor", "n", "dt", "degree"]


def eigen(degree: int, d: int) -> int:
    """ℓ(ℓ + d − 2): minus the Laplace–Beltrami eigenvalue of the degree-ℓ harmonics."""
    return degree * (degree + d - 2)


def coupling(K: float, beta: float, d: int, degree: int) -> float:
    """2K Ŵ_ℓ (0 at K = 0)."""
    return 2 * K * float(funk_hecke_coefficients(beta, d, [degree])[0])


def rate(K: float, beta: float, d: int, degree: int, noise: bool = True) -> float:
    """λ_ℓ = ℓ(ℓ + d − 2)(2K Ŵ_ℓ − 1), or without the noise term (``noise=False``)."""
    return eigen(degree, d) * (coupling(K, beta, d, degree) - (1.0 if noise else 0.0))


def moment(t, K: float, beta: float, d: int, degree: int, noise: bool = True):
    """E|a(t)|² / E|a(0)|² = e^{2λt} + (1 − e^{2λt}) / (1 − 2K Ŵ_ℓ); without the noise-driven
    level (``noise=False``) e^{2λt}. At K = 0 it is 1 (the uniform law is stationary)."""
    lam = rate(K, beta, d, degree)
    grow = np.exp(2 * lam * np.asarray(t, dtype=float))
    if not noise:
        return grow
    return grow + (1 - grow) / (1 - coupling(K, beta, d, degree))


def _jackknife(values: np.ndarray) -> float:
    """Jackknife standard error of a statistic from its leave-one-batch-out values."""
    b = values.size
    return float(np.sqrt((b - 1) / b * np.sum((values - values.mean()) ** 2)))


def estimates(modes: pd.DataFrame, config: Config) -> pd.DataFrame:
    """Per (set, d, K, N, dt, degree): the fit window t_fit (the grid times where the predicted
    E|a(t)|²/E|a(0)|² ≤ ``amplitude``), the fitted rate λ̂ = log(Σ<a(t + h), a(t)> /
    Σ|a(t)|²) / h over t + h ≤ t_fit (h the spacing: the lag regression of an
    Ornstein–Uhlenbeck process, pooled over chains and times), the second moment at t_fit and
    the autocorrelation Ĉ(0.25) = Σ<a(0.25), a(0)> / Σ|a(0)|², each with its jackknife standard
    error over batches; and the predictions."""
    beta, amp = float(config.beta), float(config.checks.amplitude)
    h = float(config.grid.spacing)
    rows = []
    for key, g in modes.groupby(KEYS, sort=False):
        keyd = dict(zip(KEYS, key))
        d, degree, K = int(keyd["d"]), int(keyd["degree"]), float(g["K"].iloc[0])
        times = np.sort(g["t"].unique())
        ok = moment(times, K, beta, d, degree) <= amp
        t_fit = float(times[: int(np.argmin(ok)) if not ok.all() else times.size][-1])
        batches = g.pivot(index="batch", columns="t")
        window = times[times + h <= t_fit + 1e-9]
        lag = batches["lag"][window].sum(axis=1).to_numpy()
        s0 = batches["s0"][window].sum(axis=1).to_numpy()
        at_fit = batches["s0"][times[np.isclose(times, t_fit)][0]].to_numpy()
        start = batches["s0"][times[0]].to_numpy()
        quarter = times[np.isclose(times, 0.25)]
        auto = batches["auto"][quarter[0]].to_numpy() if quarter.size else np.full(lag.size, np.nan)

        def stats(num: np.ndarray, den: np.ndarray, f=lambda x: x) -> tuple[float, float]:
            whole = f(num.sum() / den.sum())
            loo = np.array([f((num.sum() - a) / (den.sum() - b)) for a, b in zip(num, den)])
            return float(whole), _jackknife(loo)

        lam, lam_se = stats(lag, s0, lambda x: math.log(x) / h)
        mom, mom_se = stats(at_fit, start)
        cor, cor_se = stats(auto, start)
        rows.append(
            {
                **keyd,
                "K": K,
                "k_sharp": float(g["k_sharp"].iloc[0]),
                "chains": int(batches["chains"][times[0]].sum()),
                "t_fit": t_fit,
                "rate": lam,
                "rate_se": lam_se,
                "predicted": rate(K, beta, d, degree),
                "no_noise": rate(K, beta, d, degree, noise=False),
                "moment": mom,
                "moment_se": mom_se,
                "moment_predicted": float(moment(t_fit, K, beta, d, degree)),
                "moment_no_noise": float(moment(t_fit, K, beta, d, degree, noise=False)),
                "correlation": cor,
                "correlation_se": cor_se,
            }
        )
    return pd.DataFrame(rows)


def allowance(est: pd.DataFrame, tol) -> np.ndarray:
    """z standard errors + ℓ(ℓ + d − 2) · rate_bias + rate_relative · |λ| (the dt and 1/N
    budget of config.toml)."""
    e = est["degree"] * (est["degree"] + est["d"] - 2)
    return (
        tol.z * est["rate_se"] + e * tol.rate_bias + tol.rate_relative * est["predicted"].abs()
    ).to_numpy()


def zero(est: pd.DataFrame) -> tuple[float, float]:
    """K/K_# where the weighted least-squares line of the degree-1 rates in K/K_# (K > 0)
    crosses 0, and its standard error (delta method)."""
    x, y, w = est["factor"].to_numpy(), est["rate"].to_numpy(), est["rate_se"].to_numpy() ** -2
    X = np.column_stack([np.ones_like(x), x])
    cov = np.linalg.inv(X.T @ (w[:, None] * X))
    a, b = cov @ X.T @ (w * y)
    root = -a / b
    grad = np.array([-1 / b, a / b**2])
    return float(root), float(math.sqrt(grad @ cov @ grad))


def trend(est: pd.DataFrame) -> tuple[float, float, float]:
    """(slope, intercept, slope's standard error) of the weighted least-squares line of the
    rates in 1/N."""
    x, y, w = 1 / est["n"].to_numpy(), est["rate"].to_numpy(), est["rate_se"].to_numpy() ** -2
    X = np.column_stack([np.ones_like(x), x])
    cov = np.linalg.inv(X.T @ (w[:, None] * X))
    icpt, slope = cov @ X.T @ (w * y)
    return float(slope), float(icpt), float(math.sqrt(cov[1, 1]))


def bracket(est: pd.DataFrame) -> float:
    """K/K_# of the sign change of the degree-1 rates, linear between the two grid K around it
    (NaN without a sign change)."""
    e = est.sort_values("factor")
    x, y = e["factor"].to_numpy(), e["rate"].to_numpy()
    s = np.flatnonzero((y[:-1] < 0) & (y[1:] >= 0))
    if s.size == 0:
        return math.nan
    i = s[0]
    return float(x[i] - y[i] * (x[i + 1] - x[i]) / (y[i + 1] - y[i]))


def _points(est: pd.DataFrame) -> str:
    return ", ".join(
        f"d = {r.d}, K = {r.factor:g} K_#: {r.rate:.3f} ± {r.rate_se:.3f} (λ = {r.predicted:.3f})"
        for r in est.itertuples()
    )


def rows(est: pd.DataFrame, config: Config) -> list[dict]:
    """The checks rows, from the estimates."""
    tol, beta = config.checks, float(config.beta)
    grid = est[est["set"] == "grid"]
    out: list[dict] = []
    for degree in sorted(grid["degree"].unique()):
        g = grid[(grid["degree"] == degree) & (grid["factor"] > 0)]

        def rates(noise: bool, g: pd.DataFrame = g) -> Bound:
            want = g["predicted"] if noise else g["no_noise"]
            return Bound(
                "largest |λ̂ − λ"
                + ("" if noise else " without the noise term")
                + "| / (z SE + ℓ(ℓ + d − 2) rate_bias + rate_relative |λ|) over d and K > 0",
                float(((g["rate"] - want).abs().to_numpy() / allowance(g, tol)).max()),
                "≤",
                1.0,
                tail="; " + _points(g),
            )

        out += declare(
            rates,
            True,
            False,
            "the rate without the noise term, ℓ(ℓ + d − 2) 2K Ŵ_ℓ",
            criterion=f"rate_degree{degree}",
            role="claim",
            statement=f"the degree-{degree} harmonics grow at λ_{degree} = "
            "ℓ(ℓ + d − 2)(2K Ŵ_ℓ − 1) at the uniform state (linearised McKean–Vlasov, Funk–Hecke)",
            source=f"{SOURCE}, linear stability; metastab.theory.noisy.noisy_growth_rates",
        )
    one = grid[(grid["degree"] == 1) & (grid["factor"] > 0)]
    for d in sorted(one["d"].unique()):
        g = one[one["d"] == d]
        root, se = zero(g)
        other = 3 if d == 2 else 2
        scale = critical_coupling_linear(beta, other) / critical_coupling_linear(beta, d)

        def locate(ratio: float, root: float = root, se: float = se, g: pd.DataFrame = g) -> Bound:
            return Bound(
                f"|K_sim / {'K_#' if ratio == 1 else f'({ratio:.4g} K_#)'} − 1|",
                abs(root / ratio - 1),
                "≤",
                float(tol.kstar_tolerance),
                than="threshold",
                tail=f", K_sim = {root:.4f} K_# the zero of the weighted least-squares line of "
                f"λ̂_1 in K over K/K_# ∈ {sorted(g['factor'])} (interval: ± 2 SE, delta method)",
                low=root / ratio - 1 - 2 * se / ratio,
                high=root / ratio - 1 + 2 * se / ratio,
            )

        out += declare(
            locate,
            1.0,
            scale,
            f"K_# of d = {other} ({scale:.4g} K_#(d = {d}))",
            criterion=f"k_sharp_d{d}",
            role="claim",
            statement=f"K_# = β^(d/2) / (2^(d/2) Γ(d/2) I_(d/2)(β)) is where λ_1 changes sign "
            f"(d = {d})",
            source=f"{SOURCE}, abstract; metastab.theory.noisy.critical_coupling_linear",
        )
        shift = float(config.power.kstar_shift)
        out.append(
            check(
                f"k_sharp_d{d}_shifted",
                "context",
                f"the K_# check against a K_# {shift - 1:+.0%} off",
                measured=abs(root / shift - 1),
                rule=f"|K_sim / ({shift:g} K_#) − 1| would "
                + ("pass" if abs(root / shift - 1) <= tol.kstar_tolerance else "fail"),
                source="this study",
            )
        )
        out.append(
            check(
                f"k_sharp_d{d}_bracket",
                "context",
                "the sign change of λ̂_1 interpolated linearly between the grid K around it",
                measured=bracket(g),
                threshold=1.0,
                rule="K/K_#; N/(N − 1) = "
                f"{g['n'].iloc[0] / (g['n'].iloc[0] - 1):.4f} is the self-term's shift (the field "
                "a token feels is (N − 1)/N of the mean field)",
                source="this study",
            )
        )
    mom = grid[grid["factor"] > 0]

    def second(noise: bool) -> Bound:
        want = mom["moment_predicted"] if noise else mom["moment_no_noise"]
        allow = tol.z * mom["moment_se"] + tol.moment_tolerance * want
        return Bound(
            "largest |M̂(t_fit) − M(t_fit)| / (z SE + moment_tolerance · M) over d, ℓ, K > 0",
            float(((mom["moment"] - want).abs() / allow).max()),
            "≤",
            1.0,
            tail=("" if noise else ", M without the noise-driven level (e^(2λt))")
            + "; "
            + ", ".join(
                f"d = {r.d}, ℓ = {r.degree}, K = {r.factor:g} K_#, t = {r.t_fit:g}: "
                f"{r.moment:.3f} ± {r.moment_se:.3f} ({r.moment_predicted:.3f})"
                for r in mom.itertuples()
            ),
        )

    out += declare(
        second,
        True,
        False,
        "without the noise-driven level, e^(2λt)",
        criterion="second_moment",
        role="claim",
        statement="E|a_ℓ(t)|² / E|a_ℓ(0)|² = e^(2λt) + (1 − e^(2λt)) / (1 − 2K Ŵ_ℓ): growth or "
        "decay towards the noise-driven level",
        source=f"{SOURCE}, linearisation; this study's Ornstein–Uhlenbeck reading",
    )
    k0 = grid[grid["factor"] == 0]
    if len(k0):
        out.append(
            Bound(
                "largest |λ̂ − λ| / allowance over d, ℓ",
                float(((k0["rate"] - k0["predicted"]).abs().to_numpy() / allowance(k0, tol)).max()),
                "≤",
                1.0,
                tail="; "
                + ", ".join(
                    f"d = {r.d}, ℓ = {r.degree}: {r.rate:.3f} ± {r.rate_se:.3f}"
                    for r in k0.itertuples()
                ),
            ).row(
                "brownian_k0",
                "control",
                "at K = 0 the tokens are Brownian: λ_ℓ = −ℓ(ℓ + d − 2)",
                source="Brownian motion on the sphere (generator Δ)",
            )
        )
    dts = est[(est["set"] == "dt") & (est["degree"] == 1)].sort_values("dt")
    if len(dts) >= 2:
        slope, icpt = np.polyfit(dts["dt"], dts["rate"], 1, w=1 / dts["rate_se"])
        out.append(
            check(
                "dt_effect",
                "context",
                f"the dt effect at K = {dts['factor'].iloc[0]:g} K_# (d = {dts['d'].iloc[0]}, "
                f"N = {dts['n'].iloc[0]}): λ̂_1 against dt, λ_1 = "
                f"{round(dts['predicted'].iloc[0], 12) + 0.0:.3g}",
                measured=float(icpt),
                rule="intercept (dt → 0) of the weighted line; slope "
                f"{slope:.3f}; "
                + ", ".join(
                    f"dt = {r.dt:g}: {r.rate:.4f} ± {r.rate_se:.4f}" for r in dts.itertuples()
                ),
                source="this study",
            )
        )
    two = est[(est["set"] == "n") & (est["degree"] == 2)].sort_values("n")
    if len(two) >= 2:
        slope, icpt, se = trend(two)
        out.append(
            check(
                "n_effect_degree2",
                "context",
                f"the degree-2 rate against N at K = {two['factor'].iloc[0]:g} K_# "
                f"(d = {two['d'].iloc[0]}), λ_2 = {two['predicted'].iloc[0]:.4g}: the degree-2 "
                "amplitude is also driven by the square of the degree-1 one, a term of order "
                "|a_1|²/√N",
                measured=float(two["rate"].iloc[-1]),
                low=float(two["rate"].min()),
                high=float(two["rate"].max()),
                rule="; ".join(
                    f"N = {r.n}: λ̂ = {r.rate:.3f} ± {r.rate_se:.3f}" for r in two.itertuples()
                )
                + f"; weighted line in 1/N: slope {slope:.4g} ± {se:.2g}, intercept {icpt:.4g}",
                source="this study",
            )
        )
    ns = est[(est["set"] == "n") & (est["degree"] == 1)].sort_values("n")
    if len(ns):
        out.append(
            check(
                "n_effect",
                "context",
                f"the N effect at K = {ns['factor'].iloc[0]:g} K_# (d = {ns['d'].iloc[0]}): "
                f"λ̂_1 over t ≤ t_fit and Ĉ(0.25) against N, λ_1 = {ns['predicted'].iloc[0]:.4g}, "
                f"e^(0.25 λ_1) = {math.exp(0.25 * ns['predicted'].iloc[0]):.4f}",
                measured=float(ns["rate"].iloc[-1]),
                low=float(ns["rate"].min()),
                high=float(ns["rate"].max()),
                rule="; ".join(
                    f"N = {r.n}: λ̂ = {r.rate:.3f} ± {r.rate_se:.3f}, "
                    f"Ĉ(0.25) = {r.correlation:.4f} ± {r.correlation_se:.4f}"
                    for r in ns.itertuples()
                )
                + f" (t_fit = {ns['t_fit'].iloc[0]:g})",
                source="this study",
            )
        )
    return out


def load(out: Path) -> pd.DataFrame:
    return read_table(Path(out) / "modes.parquet")[0]


def checks(out: Path, config: Config) -> pd.DataFrame:
    """The checks table of the study (columns of :mod:`metastab.studies.verdict`)."""
    return checks_frame(rows(estimates(load(out), config), config))
