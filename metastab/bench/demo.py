"""The demo experiment: escape times of SA_P from the clustered pentagon grow exponentially in β.

Setup (the package's default configuration, ``metastab demo``): the regular pentagon K on the
unit circle, n = 20 tokens, tokens 0..4 at the vertices v_0..v_4 and tokens 5..19 at 0.5·v_a,
round robin a = (i − 5) mod 5, so three interior tokens sit on the segment of each vertex. The
finite-β chain SA_P runs with γ = 0.1. The escape time is the T2 of [FW] Thm 5.4: the first step
at which some token leaves conv{x_j^0 : σ(j) = σ(i)} + B(0, ε), with groups σ the initial cells
and ε = 2γ·d(K), the smallest radius the theorem allows (ε/γ ≥ 2 d(K)). Chains that have not
escaped after ``max_steps`` steps are right-censored.

The mean escape time is estimated by exposure, Σ_c steps_c / #escapes (total observed steps over
the number of escapes, censored chains included in the numerator): the maximum-likelihood mean of
a geometric law under right-censoring, i.e. of a constant escape rate, valid without it as the
sample mean when no chain is censored; the metastability study rejects the geometric law for the
exit time at nearly every β, so the demo reports the median beside it).
"""

from __future__ import annotations

import math
import time
import warnings
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pandas as pd

    from ..rng import SeedLike

# The library is imported inside the functions: the command line reads the constants below
# for its --help without loading numba, scipy or pandas.

__all__ = ["escape_demo", "DEMO_BETAS", "DEMO_SEED"]

DEMO_BETAS = (7.0, 10.0, 13.0, 16.0)
DEMO_CHAINS = 300
DEMO_MAX_STEPS = 20_000
DEMO_SEED = 20250601
DEMO_N = 20
DEMO_GAMMA = 0.1
DEMO_FACTOR = 0.5


def escape_demo(
    betas: Sequence[float] = DEMO_BETAS,
    *,
    chains: int = DEMO_CHAINS,
    max_steps: int = DEMO_MAX_STEPS,
    seed: SeedLike = DEMO_SEED,
    progress: bool = False,
) -> pd.DataFrame:
    """Run the demo: escape times T2 of SA_P from the clustered pentagon, one row per β.

    Every β uses the same root ``seed`` (chain k draws the same uniforms at every β: common random
    numbers), so the table is reproducible bit for bit on any thread count; only ``wall_s``
    varies. ``wall_s`` is the time of that β's run alone: the kernels are compiled (or loaded
    from numba's cache) by a small warm-up run first.

    Parameters
    ----------
    betas : sequence of float
        The β values (default :data:`DEMO_BETAS`).
    chains : int
        The chains at each β (default 300).
    max_steps : int
        The step budget: chains that have not escaped by then are censored (default 20 000).
    seed : None, int, SeedSequence or Generator
        The root seed, the same at every β (default :data:`DEMO_SEED`).
    progress : bool
        Show each run's progress bar on stderr.

    Returns
    -------
    table : pandas.DataFrame
        One row per β, with columns beta, chains, escapes, absorbed, censored, median_escape,
        mean_escape, wall_s; ``attrs`` holds the setup (polytope, n, gamma, epsilon, max_steps,
        seed), the exponent b of the joint censored fit log E[T] = a + b·β with its interval
        (slope, slope_low, slope_high; absent with fewer than two β values with escapes) and
        the Thm 5.4 exponent (bound_exponent).

    Examples
    --------
    >>> from metastab.bench.demo import escape_demo
    >>> table = escape_demo([4.0, 6.0], chains=16, max_steps=500, seed=1)   # a tiny run
    >>> table[["beta", "chains", "escapes", "censored"]]
       beta  chains  escapes  censored
    0   4.0      16       16         0
    1   6.0      16       16         0
    >>> table.columns.tolist()[4:], table.attrs["polytope"]
    (['censored', 'median_escape', 'mean_escape', 'wall_s'], 'regular-5')
    >>> "slope" in table.attrs   # two β values with escapes: the exponent is fitted
    True
    """
    import pandas as pd
    from scipy import stats

    from ..engine import announce_compile_for, first_passage
    from ..events import LeaveHull
    from ..exceptions import DiagnosticWarning
    from ..models import SoftmaxChain
    from ..setups.initial import shrunk
    from ..setups.polytopes import regular_polygon
    from ..stats import escape_summary, fit_scaling
    from ..theory import metastability_exponent

    polytope = regular_polygon(5)
    x0 = shrunk(polytope, DEMO_N, DEMO_FACTOR)
    epsilon = 2 * DEMO_GAMMA * polytope.diameter
    event = LeaveHull(groups=polytope.assign(x0), radius=epsilon)
    models = [SoftmaxChain(beta=b, gamma=DEMO_GAMMA) for b in betas]  # validate before running
    rows, frames = [], []
    if models:  # warm-up: compile or load the kernels outside the timed runs
        announce_compile_for(progress, "passage")
        with warnings.catch_warnings():  # the timed run warns, if there is cause
            warnings.simplefilter("ignore")
            first_passage(models[0], x0, event, max_steps=2, chains=1, rng=seed)
    for model in models:
        tic = time.perf_counter()
        fp = first_passage(
            model, x0, event, max_steps=max_steps, chains=chains, rng=seed, progress=progress
        )
        rows.append({"beta": model.beta, **escape_summary(fp), "wall_s": time.perf_counter() - tic})
        frames.append(fp.to_frame())
    table = pd.DataFrame(rows)
    table.attrs.update(
        polytope=polytope.name,
        n=DEMO_N,
        init=f"shrunk:{DEMO_FACTOR}",
        gamma=DEMO_GAMMA,
        epsilon=epsilon,
        max_steps=max_steps,
        seed=seed,
        bound_exponent=metastability_exponent(polytope.c0, epsilon, DEMO_GAMMA),
    )
    chains_frame = pd.concat(frames, ignore_index=True)
    if (table["escapes"] > 0).sum() >= 2:  # the exponent is identifiable
        with warnings.catch_warnings():  # a poor fit is reported through deviance and df
            warnings.simplefilter("ignore", DiagnosticWarning)
            fit = fit_scaling(chains_frame)
        low, high = fit.confidence_interval("slope")
        table.attrs.update(
            slope=fit.slope,
            slope_low=low,
            slope_high=high,
            confidence_level=fit.confidence_level,
            deviance=fit.deviance,
            df=fit.df,
            fit_pvalue=float(stats.chi2.sf(fit.deviance, fit.df)) if fit.df else math.nan,
        )
    return table
