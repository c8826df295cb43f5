""":func:`track`: the number of clusters of every chain after every step, and the cluster
observables at recording times, computed on-line in the kernels (no trajectory is kept)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from .._validate import integer, real
from ..events import clusters_arrays
from ..kernels.params import CLUSTERS
from ..models.sphere import SPHERE_MODELS
from .backends import OBSERVABLES, observe
from .backends import order_parameters as observe_order
from .chains import check_model
from .exact import drive, record_plan, record_times
from .progress import announce_compile
from .run_setup import prepare_run

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ..results.track import Track
    from ..rng import SeedLike
    from .chains import Model

__all__ = ["track"]


def track(
    model: Model,
    x0: ArrayLike,
    *,
    steps: int,
    delta: float = 1e-3,
    chains: int | None = None,
    rng: SeedLike = None,
    record_every: int | None = None,
    record_at: Sequence[int] | None = None,
    energy_beta: float | None = None,
    merges: bool = True,
    order_parameters: bool = False,
    progress: bool | Callable | None = None,
    first_chain: int = 0,
    device: str = "cpu",
) -> Track:
    """Run ``chains`` chains of ``model`` for ``steps`` steps and follow their clusters.

    After every step (and at step 0) the kernel counts each chain's clusters, the connected
    components of the graph cos(x_i, x_j) >= 1 − ``delta`` (as :class:`~metastab.Clusters`), and
    records the first step at which the count is at most k, for every k: the merge times and
    plateau durations of :meth:`Track.to_frame`, right-censored at ``steps``. At the recording
    times (``record_every`` / ``record_at`` as in :func:`~metastab.simulate`; default steps 0
    and ``steps``) a kernel reduces each chain's state to the count, the fraction of clustered
    pairs, the cosine of tokens 1 and 2, the mean cosine and the energy E_β, and with
    ``order_parameters`` to the order parameters m_1 and m_2 too
    (:meth:`Track.observables_frame`). Chains, streams and bits are those of
    :func:`~metastab.simulate` with the same arguments: the same seed gives the same table on
    any thread count.

    Parameters
    ----------
    model, x0, steps, chains, rng, record_every, record_at, progress, first_chain, device
        As in :func:`~metastab.simulate`; x0 has n >= 2 tokens.
    delta : float in (0, 2]
        A pair is clustered when its cosine is at least 1 − delta (default 1e-3, GLPR Fig. 3).
    merges : bool
        False: skip the count after every step (O(n² d) per step; no plateaus), when only the
        observables at the recording times are wanted, as for a phase diagram.
    order_parameters : bool
        True: also record the order parameters m_1 and m_2 of each chain
        (:func:`~metastab.order_parameters`: 0 at the uniform state, 1 at one cluster) at the
        recording times, in ``Track.order`` and the columns m1, m2 of its observables; for the
        models on the sphere only.
    energy_beta : float > 0, optional
        The β of E_β (default: the model's ``beta``; the energies are NaN when that is 0 or
        infinite, or the model has none).

    Returns
    -------
    tracked : Track
        Each chain's merge levels (the first step at which it had at most k clusters), the
        observables at the recording times, the seed and the provenance
        (:class:`~metastab.Track`).

    Examples
    --------
    >>> import numpy as np
    >>> import metastab as ms
    >>> x0 = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    >>> tr = ms.track(ms.SoftmaxFlow(beta=1.0, gamma=0.5), x0, steps=40, rng=0)
    >>> tr.to_frame()[["chain", "k", "start", "end", "censored"]]
       chain  k  start  end  censored
    0      0  3      0    8     False
    1      0  1      8   40      True
    """
    steps = integer("steps", steps, 1)
    if merges is not True and merges is not False:
        raise ValueError(f"merges must be True or False, got {merges!r}")
    if order_parameters is not True and order_parameters is not False:
        raise ValueError(f"order_parameters must be True or False, got {order_parameters!r}")
    if order_parameters:
        check_model(model)  # a model first, then one on the sphere
    if order_parameters and not isinstance(model, SPHERE_MODELS):
        names = ", ".join(m.__name__ for m in SPHERE_MODELS)
        raise ValueError(
            f"order_parameters: m_1 and m_2 are order parameters of tokens on the unit sphere, "
            f"for the sphere models ({names}); got the model {model!r}"
        )
    threshold = 1.0 - real("delta", delta, low=0, low_open=True, high=2)
    if energy_beta is None:
        beta = float(getattr(model, "beta", math.nan))
        beta = beta if 0 < beta < math.inf else math.nan
    else:
        beta = real("energy_beta", energy_beta, low=0, low_open=True)
    plan = record_plan(record_every, record_at, steps)
    what, count, _ = plan
    times = record_times(plan, steps)
    if times is None:
        times, count = np.array([0, steps], dtype=np.int64), 2
    width = len(OBSERVABLES)

    def observables(x: np.ndarray, C: int) -> tuple[str | None, int]:
        n = x.shape[1]
        if n < 2:
            raise ValueError(f"x0 must hold n >= 2 tokens to have clusters, got n={n}")
        kept = 8 * C * count * (width + (2 if order_parameters else 0))
        return (f"{what}: the observables" if what else None, 8 * C * n + kept)

    run = prepare_run(
        model, x0, chains=chains, first_chain=first_chain, rng=rng, device=device,
        extra=observables,
    )  # fmt: skip
    X, C, n, d = run.X, run.chains, run.n, run.d
    announce_compile(progress, *run.backend.kernels("exact", run.launch(CLUSTERS)), observe)
    ev = clusters_arrays((n, d), float(delta), 0, chains=C)
    observed = np.empty((count, C, width))  # one contiguous block per recording time
    orders = np.empty((count, C, 2)) if order_parameters else None
    filled = [0]

    def on_chunk(t: int) -> None:
        if filled[0] < count and t == times[filled[0]]:
            observe(X, threshold, beta, observed[filled[0]])
            if orders is not None:
                observe_order(X, orders[filled[0]])
            filled[0] += 1

    on_chunk(0)
    tic = time.perf_counter()
    drive(run.backend, model, X, run.state, steps, ev if merges else None, progress, on_chunk,
          times)  # fmt: skip
    return run.track(
        tic,
        levels=ev.levels if merges else None,
        times=times,
        observables=np.ascontiguousarray(observed.transpose(1, 0, 2)),
        order=None if orders is None else np.ascontiguousarray(orders.transpose(1, 0, 2)),
        steps=steps,
        delta=float(delta),
        energy_beta=beta,
        arguments={
            "steps": steps,
            "delta": float(delta),
            "chains": C,
            "record_every": None if record_every is None else int(record_every),
            "record_at": None if record_at is None else [int(t) for t in record_at],
            "energy_beta": None if energy_beta is None else beta,
            "merges": merges,
            "order_parameters": order_parameters,
            "first_chain": run.first_chain,
            "device": device,
        },
    )
