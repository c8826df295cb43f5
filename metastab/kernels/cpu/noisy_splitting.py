"""Numba kernel of adaptive multilevel splitting for the noisy sphere
(:mod:`metastab.engine.ams_noisy`): :func:`noisy_excursions`, the twin of
:func:`.splitting.excursions` for :class:`~metastab.NoisySphere` with a LeaveUniform event.

A step is the noisy model's step as the chain loop takes it (``sphere_family.stepper``, which
runs ``noisy_steps._noisy``: projected Euler–Maruyama with renormalisation, the normals from the
replica's stream), so a replica is, step for step and bit for bit, the chain that
:func:`metastab.first_passage` runs from the same state and stream. The score is the event's
order parameter ξ = m_degree (:func:`.order.order_parameter`); the event is decided by
:func:`~.events.event_hit` itself (m_degree >= level), so that it is exactly that of
``first_passage``. The stops, the records and the statuses are those of
:func:`.splitting.excursions`.
"""

import functools

import numpy as np

from ..cache import njit_keyed
from ..params import JIT, LEAVE_UNIFORM_1, NOISY_SPHERE
from .events import event_hit, hull_work
from .order import order_parameter
from .sphere_family import stepper
from .splitting import IN_B, out_of_room, record, scored
from .threads import over_chains

# cached only while the kernel files it calls into are unchanged (see cache)
_jit = njit_keyed()


def noisy_excursions(X, state, dyn, dt, ev, bounds, walk, records, *, threads=1):
    """Advance every replica c of the noisy model from ``X[c]`` (in place) until it stops;
    ``walk.status[c]`` says why (IN_A, IN_B, ABOVE, BUDGET, FULL, as in
    :func:`.splitting.excursions`).

    ``dyn`` is the model's :class:`~..params.SphereDynamics`, ``dt`` its step, ``ev`` the
    compiled LeaveUniform event (its degree is the score's). After each step (``clock[c]`` += 1),
    in this order: the event holds -> IN_B (recorded with level inf); ξ = m_degree >
    ``level[c]`` -> a record (ξ, clock, configuration); ξ <= ``bounds.low`` -> IN_A;
    ξ > ``bounds.high`` -> ABOVE. Before each step: ``clock[c] >= bounds.max_steps`` -> BUDGET;
    a full record buffer -> FULL (call again to continue: the stream resumes where it stopped).

    The replicas run in slices on ``threads`` threads (:func:`.threads.over_chains`); each draws
    from its own stream, so its path does not depend on the slices.
    """
    n, d = X.shape[1:]
    kernel = _noisy_excursions_for(stepper(NOISY_SPHERE, ev.code, n, d, dyn, False))
    args = (X, state, dyn, dt, ev, bounds, walk, records)
    over_chains(kernel, args, X.shape[0], threads)


@functools.cache
def _noisy_excursions_for(noisy):
    """The kernel of :func:`noisy_excursions` for the replicas lo <= c < hi, with the noisy
    model's stepper ``noisy`` (a ``chain_loop.Stepper``: its scratch and its step, inlined)."""
    work, step, enter, leave = noisy

    @_jit(**JIT)
    def noisy_excursions_slice(X, state, dyn, dt, ev, bounds, walk, records, lo, hi):
        n, d = X.shape[1:]
        degree = 1 if ev.code == LEAVE_UNIFORM_1 else 2
        clock = walk.clock
        status = walk.status
        hw = hull_work(n, d)
        w = work(n, d, None)
        for c in range(lo, hi):
            x = X[c]
            st = state[c]
            records.written[c] = 0
            enter(x, w)
            while True:
                if out_of_room(c, bounds, walk, records):
                    break
                step(x, st, dyn, None, dt, 0, w, None)
                clock[c] += 1.0
                if event_hit(ev, c, x, hw):
                    record(c, np.inf, x, walk, records)
                    status[c] = IN_B
                    break
                xi = order_parameter(x, degree)
                if scored(c, xi, x, bounds, walk, records):
                    break
            leave(x, w)

    return noisy_excursions_slice
