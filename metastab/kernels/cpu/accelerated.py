"""Numba kernels of the event-driven SA_P chain (``first_passage(..., mode="accelerated")``).

Pure functions over arrays, like the other kernels, whose xoshiro256** streams, event test and
model codes they reuse. Equations: docs: models#models-rd (the chain SA_P) and #frozen-law
(the frozen configuration and its geometric exit law).

**Groups.** Tokens that sit on one point form a group (κ distinct points u_a, multiplicities
m_a). A pick of a token in one's own group is an exact no-op (x_i + γ(x_i − x_i) = x_i), so the
only steps that change the configuration are those with at least one *cross pick*. Before each
draw, points closer than ``tol`` (max-norm) are merged (:func:`merge_groups`): every token moves by
at most ``tol``.

**One token.** A token at u_a picks a token at u_b with probability
m_b e^{β<B u_a, u_b>} / Σ_c m_c e^{β<B u_a, u_c>} (docs: models#models-rd: coincident tokens add
their probabilities). With r_a = Σ_{b≠a} (m_b/m_a) e^{β(<B u_a, u_b> − <B u_a, u_a>)} it stays in
its group with probability q_a = 1/(1 + r_a) and crosses with c_a = r_a/(1 + r_a). Everything is
kept in log space: log q_a = −log(1 + r_a), log c_a = log r_a − log(1 + r_a) and
ℓ_a = log(−log q_a) = log log(1 + r_a), exact even when r_a underflows (β = 1e6).

**The waiting time.** Tokens draw independently (docs: models#models-rd), so a step has no cross
pick with probability P_stay = Π_i q_{a(i)} = e^L, L = −Σ_i log(1 + r_{a(i)}), and
log(−L) = logsumexp_i ℓ_{a(i)}.
The number of steps up to and including the first one with a cross pick is geometric,
P[W > k] = e^{kL}; it is drawn by inversion as W = 1 + ⌊E / (−L)⌋ with E ~ Exp(1) of full
relative precision (:func:`next_exponential`), so W is exact for any P_stay, also when
1 − P_stay is 1e-40 or underflows.

**The step with a cross pick.** Given at least one cross pick: the first crossing token J (in index
order) has P[J <= i] = (1 − e^{L_i}) / (1 − e^{L}), L_i the partial sum over tokens <= i; tokens
before J stay, J crosses, tokens after J cross independently with probability c_a (a two-stage
draw: first whether the token leaves its group, comparing log c_a with the log of a uniform of
full relative precision, :func:`next_log_uniform`; then where). A crossing token at u_a goes to
u_b, b ≠ a, with probability ∝ m_b e^{β<B u_a, u_b>}, drawn as an exponential race
argmin_b (log E_b − log w_b), exact however small a weight is. Every crossing token then moves to
x_i + γ (u_b − x_i) (or x_i + P (u_b − x_i)), synchronously. This is the one-step law of SA_P
conditioned on leaving the configuration, so the decomposition is exact, frozen or not: while a
group is spread its tokens are separate points and a step with a cross pick comes every step or
so; once the group is merged the chain waits geometrically.

**Time.** The step count is float64 with compensated (Neumaier) summation, exact to 2^-53
relative; it never overflows (the mean waiting time at β = 200 is ~1e80 steps).
"""

import math
from typing import NamedTuple

import numpy as np

from ..cache import njit_keyed
from ..params import JIT, JIT_NO_NRT, NO_EVENT, SPHERE_CHAIN
from ..streams import next_u64
from .euclidean_steps import _move
from .events import event_hit, hull_work
from .reach import chain_out_of_reach
from .sphere_steps import renormalise_moved
from .threads import over_chains

# cached only while the kernel files it calls into are unchanged (see cache)
_jit = njit_keyed()

_U = np.uint64
_TOP = _U(1) << _U(63)
_TWO_M52 = 1.0 / 4503599627370496.0
_LN2 = 0.6931471805599453
# A uniform of full relative precision reads up to this many all-zero 64-bit words before its
# leading one (U < 2^-1024 has probability 2^-1024 and is then taken as 2^-1025 (1 + f)).
_MAX_ZERO_WORDS = 16


# --------------------------------------------------------------------------------------------
# Random numbers of full relative precision (built on streams.next_u64)
# --------------------------------------------------------------------------------------------


@_jit(**JIT_NO_NRT)
def _binade(s):
    """(e, f): a uniform U on (0, 1) as U = 2^{−e−1} (1 + f), f in [0, 1) with 52 random bits.

    e is the number of leading zero bits of an unbounded random bit string (P[e] = 2^{−e−1}:
    the binade [2^{−e−1}, 2^{−e}) has exactly that probability) and f is uniform on it, so U has
    relative precision 2^-52 at every scale instead of the absolute 2^-53 of ``next_uniform``.
    """
    e = 0
    w = next_u64(s)
    while w == _U(0) and e < 64 * _MAX_ZERO_WORDS:
        e += 64
        w = next_u64(s)
    if w == _U(0):
        w = _TOP
    while w < _TOP:
        w = w << _U(1)
        e += 1
    f = float(next_u64(s) >> _U(12)) * _TWO_M52
    return e, f


@_jit(**JIT_NO_NRT)
def next_log_uniform(s):
    """log U for U uniform on (0, 1) with full relative precision (see :func:`_binade`).

    ``next_log_uniform(s) < log c`` has probability c (up to 2^-52 relative) for any c, also
    c = 1e-40 or c = e^{-1000}, where a 53-bit uniform gives 0 or 2^-53.
    """
    e, f = _binade(s)
    return math.log1p(f) - (e + 1) * _LN2


@_jit(**JIT_NO_NRT)
def next_exponential(s):
    """E ~ Exp(1) with full relative precision near 0 and an exact tail.

    E = k log 2 + E', with k ~ Geometric(1/2) on {0, 1, ...} (the memoryless property:
    P[E >= k log 2] = 2^{-k}) and E' = −log(1 − V/2) the inverse of the law of E given
    E < log 2, V uniform with full relative precision.
    """
    k, _ = _binade(s)
    e, f = _binade(s)
    v = math.ldexp(1.0 + f, -e - 1)
    return k * _LN2 - math.log1p(-0.5 * v)


# --------------------------------------------------------------------------------------------
# Log-space helpers
# --------------------------------------------------------------------------------------------


@_jit(**JIT_NO_NRT)
def _logaddexp(a, b):
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    if a > b:
        return a + math.log1p(math.exp(b - a))
    return b + math.log1p(math.exp(a - b))


@_jit(**JIT_NO_NRT)
def stay_cross_logs(log_r):
    """(log q, log c, ℓ) of a token with odds r = c/q of crossing: log q = −log(1 + r),
    log c = log r − log(1 + r), ℓ = log(−log q) = log log(1 + r); stable for any log r,
    −inf and inf included."""
    if log_r > 0.0:
        t = math.log1p(math.exp(-log_r))  # log(1 + 1/r)
        return -(log_r + t), -t, math.log(log_r + t)
    t = math.log1p(math.exp(log_r))  # log(1 + r)
    if log_r < -30.0:  # log log(1 + r) = log r + log(1 − r/2 + ...)
        ell = log_r + math.log1p(-0.5 * math.exp(log_r))
    else:
        ell = math.log(t)
    return -t, log_r - t, ell


@_jit(**JIT_NO_NRT)
def log1mexp_neg(lm):
    """log(1 − e^{L}) from lm = log(−L), L <= 0: the log-probability of at least one cross pick.

    For −L < 2e-9 it is lm + log(1 − y/2 + y²/6), y = −L (error y³); exact where e^L rounds to 1.
    """
    if lm == -np.inf:
        return -np.inf
    y = math.exp(lm)
    if lm < -20.0:
        return lm + math.log1p(y * (y / 6.0 - 0.5))
    if y < _LN2:
        return math.log(-math.expm1(-y))
    return math.log1p(-math.exp(-y))


# --------------------------------------------------------------------------------------------
# Groups and their exit probabilities
# --------------------------------------------------------------------------------------------


@_jit(**JIT_NO_NRT)
def merge_groups(x, tol, label, points, mult, count, order):
    """Merge tokens into groups, in place; returns κ, the number of groups.

    Tokens are visited by decreasing number of tokens exactly at their position (ties: lower
    index first); a token within max-norm distance ``tol`` of an existing group's point joins it
    and is moved onto that point, otherwise it founds a group at its position. So every token
    moves by at most ``tol`` (with ``tol = 0`` nothing moves and groups are exact coincidences),
    and a crowded point never moves towards a stray token. ``label[i]`` is token i's group,
    ``points[a]`` and ``mult[a]`` the groups' points and sizes.
    """
    n, d = x.shape
    for i in range(n):
        c = 0
        for j in range(n):
            same = True
            for k in range(d):
                if x[i, k] != x[j, k]:
                    same = False
                    break
            if same:
                c += 1
        count[i] = c
    for i in range(n):  # insertion sort: count descending, index ascending (stable)
        order[i] = i
    for p in range(1, n):
        v = order[p]
        q = p - 1
        while q >= 0 and count[order[q]] < count[v]:
            order[q + 1] = order[q]
            q -= 1
        order[q + 1] = v
    kappa = 0
    for p in range(n):
        i = order[p]
        found = -1
        for a in range(kappa):
            dist = 0.0
            for k in range(d):
                dist = max(dist, abs(x[i, k] - points[a, k]))
            if dist <= tol:
                found = a
                break
        if found < 0:
            for k in range(d):
                points[kappa, k] = x[i, k]
            mult[kappa] = 0
            found = kappa
            kappa += 1
        label[i] = found
        mult[found] += 1
        for k in range(d):
            x[i, k] = points[found, k]
    return kappa


@_jit(**JIT_NO_NRT)
def group_logs(points, mult, kappa, B, beta, bu, logw, log_q, log_c, ell):
    """Per group a < κ: log q_a, log c_a, ℓ_a (module notes) and the log-weights
    logw[a, b] = log m_b + β(<B u_a, u_b> − <B u_a, u_a>) of the points a token at u_a picks."""
    d = points.shape[1]
    for a in range(kappa):
        for k in range(d):
            acc = 0.0
            for m in range(d):
                acc += B[k, m] * points[a, m]
            bu[k] = acc
        self_score = 0.0
        for k in range(d):
            self_score += bu[k] * points[a, k]
        top = -np.inf
        for b in range(kappa):
            acc = 0.0
            for k in range(d):
                acc += bu[k] * points[b, k]
            logw[a, b] = math.log(mult[b]) + beta * (acc - self_score)
            if b != a and logw[a, b] > top:
                top = logw[a, b]
        if top == -np.inf or top != top:
            log_r = -np.inf
        else:
            tot = 0.0
            for b in range(kappa):
                if b != a:
                    tot += math.exp(logw[a, b] - top)
            log_r = top + math.log(tot) - math.log(mult[a])
        log_q[a], log_c[a], ell[a] = stay_cross_logs(log_r)


@_jit(**JIT_NO_NRT)
def _destination(s, a, kappa, logw):
    """b ≠ a with probability ∝ e^{logw[a, b]}: the exponential race argmin_b log E_b − logw[a, b]
    (E_b ~ Exp(1) of full relative precision), exact for weights of any size."""
    best, pick = np.inf, -1
    for b in range(kappa):
        if b == a or logw[a, b] == -np.inf:
            continue
        key = math.log(next_exponential(s)) - logw[a, b]
        if key < best:
            best, pick = key, b
    return pick


@_jit(**JIT)
def jump_work(n, d):
    """Scratch buffers of :func:`jump` for n tokens in R^d."""
    return (
        np.empty(n, np.int64),
        np.empty((n, d)),
        np.empty(n, np.int64),
        np.empty(n, np.int64),
        np.empty(n, np.int64),
        np.empty(d),
        np.empty((n, n)),
        np.empty(n),
        np.empty(n),
        np.empty(n),
        np.empty((n, d)),
    )


@_jit(**JIT_NO_NRT)
def jump(x, B, beta, gamma, P, use_P, sphere, tol, s, remaining, work):
    """One event of the accelerated chain, in place: merge groups, draw the waiting time W, move.
    With ``sphere`` (the chain on the unit sphere, V = I) a crossing token's move is followed by
    LayerNorm, as in ``sphere.chain_step``.

    Returns W (float64 >= 1, the steps from the current time to the step with a cross pick,
    that step included), or ``inf`` without moving when that step would come after ``remaining``
    steps (the chain is then censored; the configuration at the budget is the current one, since
    every step before W is a no-op). Module notes give the law; it is exact for any configuration
    up to the merge (each token moves by at most ``tol``).
    """
    n, d = x.shape
    label, points, mult, count, order, bu, logw, log_q, log_c, ell, out = work
    kappa = merge_groups(x, tol, label, points, mult, count, order)
    group_logs(points, mult, kappa, B, beta, bu, logw, log_q, log_c, ell)
    lm = -np.inf  # log(−L), L = log P_stay
    for i in range(n):
        lm = _logaddexp(lm, ell[label[i]])
    if lm == -np.inf:  # one group, or weights below e^-745 everywhere
        return np.inf
    log_wait = math.log(next_exponential(s)) - lm  # log(E / (−L)); W = 1 + floor(E / (−L))
    if not log_wait < math.log(remaining):
        return np.inf
    wait = 1.0 + math.floor(math.exp(log_wait))
    # first crossing token J: first i with log(1 − e^{L_i}) >= log(1 − e^L) + log U
    target = log1mexp_neg(lm) + next_log_uniform(s)
    run = -np.inf
    first = n - 1
    for i in range(n):
        run = _logaddexp(run, ell[label[i]])
        if log1mexp_neg(run) >= target:
            first = i
            break
    for i in range(n):
        for k in range(d):
            out[i, k] = x[i, k]
    for i in range(first, n):
        a = label[i]
        if i > first and not next_log_uniform(s) < log_c[a]:
            continue
        b = _destination(s, a, kappa, logw)
        if b >= 0:
            _move(x, i, points[b], gamma, P, use_P, out)
            if sphere:
                renormalise_moved(x, i, out)
    for i in range(n):
        for k in range(d):
            x[i, k] = out[i, k]
    return wait


class Tally(NamedTuple):
    """Per-chain counters of :func:`advance_accelerated` (arrays of length C, updated in place)."""

    time: np.ndarray  # float64 step count (with comp: Neumaier-compensated)
    comp: np.ndarray  # float64 compensation term of time
    done: np.ndarray  # bool: met the event, censored or absorbed
    censored: np.ndarray  # bool: the next move would come after max_steps
    jumps: np.ndarray  # int64: events drawn
    absorbed: np.ndarray  # bool: the event out of reach (kernels.cpu.reach), at step time + comp


def advance_accelerated(X, state, dyn, gamma, tols, max_steps, max_jumps, ev, tally, *, threads=1):
    """Run every chain c with ``tally.done[c]`` False for up to ``max_jumps`` events, in place.

    ``dyn`` is the SA_P model's :class:`~metastab.kernels.params.Dynamics` (kind SPHERE_CHAIN:
    the chain on the unit sphere with V = I), ``gamma`` its constant scalar step (unused with a
    step matrix). ``tols`` (1 or C,) holds the absolute merge distance,
    shared or per chain (each chain's own from its own x0, so that a chain does not depend on the
    others). ``time[c] + comp[c]`` is chain c's step count (float64, Neumaier-compensated);
    after each event the stopping event ``ev`` is checked on the new configuration, and a chain
    that meets it is ``done`` at that step. A chain whose next move would come after
    ``max_steps`` is ``done`` and ``censored`` with the step count set to ``max_steps``.
    ``jumps[c]`` counts the events drawn. The chains' streams live in ``state``; a call resumes
    where the last stopped, so a chain's path depends only on its seed, not on the thread count
    or the number of calls. The chains run in slices on ``threads`` threads
    (:func:`.threads.over_chains`).
    """
    args = (X, state, dyn, gamma, tols, max_steps, max_jumps, ev, tally)
    over_chains(advance_slice, args, X.shape[0], threads)


@_jit(**JIT)
def advance_slice(X, state, dyn, gamma, tols, max_steps, max_jumps, ev, tally, lo, hi):
    """:func:`advance_accelerated` for the chains lo <= c < hi."""
    n, d = X.shape[1:]
    B, P, beta, use_P = dyn.B, dyn.P, dyn.beta, dyn.use_P
    sphere = dyn.model_code == SPHERE_CHAIN
    time = tally.time
    comp = tally.comp
    done = tally.done
    censored = tally.censored
    jumps = tally.jumps
    absorbed = tally.absorbed
    # the absorption test needs convex steps: a scalar step (never a step matrix), in R^d
    reachable = not use_P and not sphere
    work = jump_work(n, d)
    hwork = hull_work(n, d)
    for c in range(lo, hi):
        if done[c]:
            continue
        x = X[c]
        st = state[c]
        tol = tols[c] if tols.shape[0] > 1 else tols[0]
        for _ in range(max_jumps):
            remaining = max_steps - (time[c] + comp[c])
            wait = jump(x, B, beta, gamma, P, use_P, sphere, tol, st, remaining, work)
            jumps[c] += 1
            if wait == np.inf:
                time[c] = max_steps
                comp[c] = 0.0
                done[c] = True
                censored[c] = True
                break
            t = time[c] + wait  # Neumaier: the rounding error goes to comp
            if abs(time[c]) >= wait:
                comp[c] += (time[c] - t) + wait
            else:
                comp[c] += (wait - t) + time[c]
            time[c] = t
            if ev.code != NO_EVENT and event_hit(ev, c, x, hwork):
                done[c] = True
                break
            # the configuration changes only at events: out of reach now, from this step on
            if reachable and chain_out_of_reach(ev, c, x, hwork):
                done[c] = True
                absorbed[c] = True
                break


@_jit(**JIT)
def cross_logs(X, B, beta, tols, out):
    """out[c, i] = log of the probability that token i of configuration X[c] picks a token outside
    its group in one step (groups merged at ``tols[c]`` on a copy: X is not changed). Serial: it
    runs on a few configurations per run, and a parallel loop cost more to compile than it saved."""
    C, n, d = X.shape
    for c in range(C):
        x = X[c].copy()
        tol = tols[c]
        label, points, mult, count, order, bu, logw, log_q, log_c, ell, _ = jump_work(n, d)
        kappa = merge_groups(x, tol, label, points, mult, count, order)
        group_logs(points, mult, kappa, B, beta, bu, logw, log_q, log_c, ell)
        for i in range(n):
            out[c, i] = log_c[label[i]]
