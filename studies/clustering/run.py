"""Clustering phase of [FW] Thm 5.2, its first phase, measured with SA_P.

Tokens 0..κ−1 start on the vertices, every other token in its eroded dominance cone
I_σ(i)(β^{−1/8}) ⊖ β^{−1/4} (:func:`metastab.near_vertices`). With m = min_{i>κ} |x_i^0 − v_σ(i)|,
τ = min{min_{a≠b} c0/(2|v_a − v_b|), √(2c0)/2, (1−γ)m} and T1 = ⌊log(τ/m)/log(1−γ)⌋
(:func:`metastab.theory.clustering_phase`), the theorem claims

    P[at step T1: vertex tokens within β^{−1/4} of their vertex,
      the others within Cτ] >= 1 − β^{−1/8}

for some universal C > 1. Every chain is recorded at every step, so the event can be evaluated
for any C afterwards: per chain we store the smallest C that makes the event hold at T1
(``C_at_T1``) and the hitting time of the event for the configured ``C_event``.

Besides the published m (a minimum over tokens) the same quantities are stored for the variant
with M = max_{i>κ} |x_i^0 − v_σ(i)| in place of m (``*_max`` columns): the data show that the
published constant C cannot be universal, and that this variant is the correction.

Initial conditions: ``draws`` random configurations per (polytope, β), plus one "extreme"
configuration per β that puts, for every vertex, one token at the admissible point closest to
the vertex and one at the farthest (computed exactly from the cone's half-spaces).
Where the eroded cones are empty at β (below the existence threshold) the configurations are
drawn at ``margin`` times the threshold and the rows are flagged ``cones_ok = False``.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import brentq, linprog, minimize
from scipy.spatial import ConvexHull, HalfspaceIntersection

from metastab import theory
from metastab.engine import first_passage, simulate
from metastab.events import ReachVertices
from metastab.models import SoftmaxChain
from metastab.registry import polytope_from_dict
from metastab.results import provenance, read_table, write_table
from metastab.setups.initial import near_vertices
from metastab.setups.polytopes import Polytope, random_polygon

from .config import Config

# --------------------------------------------------------------------------- geometry


def build_polytope(spec: dict) -> Polytope:
    """The polytope of a config entry: a kind of :data:`metastab.registry.POLYTOPES`, or a
    ``random-acute`` equinorm polygon.

    An equinorm convex polygon with k >= 4 vertices always has an interior angle >= π/2 (they sum
    to (k − 2)π), so the acute-cone hypothesis of Thm 5.2 forces k = 3 in the plane: random
    equinorm triangles are drawn until one has acute cones.
    """
    if spec["kind"] != "random-acute":
        return polytope_from_dict(spec)
    k = int(spec["k"])
    if k != 3:
        raise ValueError(f"an equinorm polygon with acute cones is a triangle, got k={k}")
    gen = np.random.default_rng(int(spec["seed"]))
    for _ in range(10_000):
        P = random_polygon(3, equal_norm=True, rng=gen)
        if P.has_acute_cones():
            return Polytope(P.vertices, name="random-acute-3")
    raise RuntimeError("no acute equinorm triangle in 10000 draws")


def cone_slack(P: Polytope, beta: float) -> float:
    """min_a (inradius of I_a(β^{−1/8})) − β^{−1/4}: >= 0 iff every eroded cone is non-empty."""
    eta, delta = beta ** (-1 / 8), beta ** (-1 / 4)
    return min(P.dominance_inradius(a, eta) for a in range(P.n_vertices)) - delta


def existence_threshold(P: Polytope) -> float:
    """Smallest β at which every eroded cone I_a(β^{−1/8}) ⊖ β^{−1/4} is non-empty.

    The cones grow with β (η and δ both shrink), so the slack is monotone and a root in log β
    is the threshold.
    """
    lo, hi = 0.0, 12.0
    if cone_slack(P, 10**lo) >= 0:
        return 10**lo
    if cone_slack(P, 10**hi) < 0:
        raise ValueError(f"{P.name}: eroded cones empty up to beta = 1e12")
    return 10 ** brentq(lambda lb: cone_slack(P, 10**lb), lo, hi, xtol=1e-6)


def geometric_scale(P: Polytope) -> float:
    """The β- and γ-free part of τ: min{min_{a≠b} c0/(2|v_a − v_b|), √(2c0)/2}."""
    V = P.vertices
    dist = np.linalg.norm(V[:, None] - V[None], axis=-1)[~np.eye(P.n_vertices, dtype=bool)]
    return min(float((P.c0 / (2 * dist)).min()), math.sqrt(2 * P.c0) / 2)


def assignment(P: Polytope, x0: np.ndarray) -> np.ndarray:
    """σ(i): vertex tokens own their vertex, the others their initial cell."""
    k = P.n_vertices
    return np.concatenate([np.arange(k), P.assign(x0[k:])])


def phase_constants(P: Polytope, x0: np.ndarray, gamma: float, beta: float) -> dict:
    """Published m, τ, T1 (theory.clustering_phase) and the variant with M = max distance."""
    ph = theory.clustering_phase(P, x0, gamma, beta=beta)
    k = P.n_vertices
    r = np.linalg.norm(x0[k:] - P.vertices[assignment(P, x0)[k:]], axis=1)
    M = float(r.max())
    tau_max = min(geometric_scale(P), (1 - gamma) * M)
    T1_max = math.floor(math.log(tau_max / M) / math.log1p(-gamma) * (1 + 1e-12))
    return {
        "m": ph.m,
        "M": M,
        "tau": ph.tau,
        "T1": ph.T1,
        "tau_max": tau_max,
        "T1_max": int(T1_max),
        "cones_ok": ph.hypotheses["eroded_cones"],
    }


# --------------------------------------------------------------------------- initial conditions


def random_starts(P, n, beta, draws, gen) -> np.ndarray:
    """``draws`` configurations of Thm 5.2 at ``beta`` (shape draws × n × d).

    One :func:`metastab.near_vertices` call for all draws (its rejection sampler pays per call),
    cut into consecutive blocks of the round-robin order, so draw r is itself a valid start.
    """
    k = P.n_vertices
    per = n - k
    pool = near_vertices(P, k + per * draws, beta, max_tries=10**8, rng=gen)
    return np.stack(
        [np.vstack([P.vertices, pool[k + r * per : k + (r + 1) * per]]) for r in range(draws)]
    )


def eroded_cone(P: Polytope, a: int, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """I_a(β^{−1/8}) ⊖ β^{−1/4} as {x : G x <= h} (docs: models#polytopes).

    A closed ball B(x, δ) lies in {z : <g, z> <= c} iff <g, x> + δ|g| <= c; the facets of K come
    from its convex hull with unit normals.
    """
    eta, delta = beta ** (-1 / 8), beta ** (-1 / 4)
    hull = ConvexHull(P.vertices)
    A, b = hull.equations[:, :-1], hull.equations[:, -1]
    diff = P.vertices[a] - np.delete(P.vertices, a, axis=0)  # rows v_a − v_b
    G = np.vstack([A, -diff])
    h = np.concatenate([-b - delta, -eta - delta * np.linalg.norm(diff, axis=1)])
    return G, h


def extreme_points(P: Polytope, a: int, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """The points of the eroded cone of vertex a closest to and farthest from v_a.

    The farthest is a vertex of the polyhedron (a convex function is maximised at a vertex);
    the closest solves the convex QP min |x − v_a|² subject to G x <= h.
    """
    G, h = eroded_cone(P, a, beta)
    norms = np.linalg.norm(G, axis=1)
    cheb = linprog(
        np.r_[np.zeros(P.dim), -1.0],
        A_ub=np.column_stack([G, norms]),
        b_ub=h,
        bounds=[(None, None)] * P.dim + [(0, None)],
        method="highs",
    )
    if cheb.status != 0 or cheb.x[-1] <= 0:
        raise ValueError(f"eroded cone of vertex {a} is empty at beta={beta!r}")
    center, v = cheb.x[:-1], P.vertices[a]
    corners = HalfspaceIntersection(np.column_stack([G, -h]), center).intersections
    far = corners[np.argmax(np.linalg.norm(corners - v, axis=1))]
    near = minimize(
        lambda x: np.sum((x - v) ** 2),
        center,
        jac=lambda x: 2 * (x - v),
        constraints=[{"type": "ineq", "fun": lambda x: h - G @ x, "jac": lambda x: -G}],
        method="SLSQP",
        options={"ftol": 1e-14, "maxiter": 500},
    ).x
    # pull both a hair (1e-7 of the way) towards the centre: on the boundary, roundoff would make
    # the package's membership test reject them
    return near + 1e-7 * (center - near), far + 1e-7 * (center - far)


def extreme_start(P: Polytope, tokens_per_vertex: int, beta: float) -> np.ndarray:
    """Per vertex, one token at the admissible point closest to the vertex and the others at
    the farthest: M/m as large as the admissible set allows, the worst case for the published
    constant C."""
    ends = [extreme_points(P, a, beta) for a in range(P.n_vertices)]
    rows = [P.vertices]
    for j in range(tokens_per_vertex):
        rows.append(np.array([e[0] if j == 0 else e[1] for e in ends]))
    return np.vstack(rows)


# --------------------------------------------------------------------------- measurement


def deviations(traj: np.ndarray, P: Polytope, sigma: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per chain and recorded step: the largest distance of a non-vertex token to its vertex
    (D) and of a vertex token to its vertex (V); traj is chains × steps × n × d, sigma per
    chain (chains × n)."""
    k = P.n_vertices
    centers = P.vertices[sigma][:, None]  # chains × 1 × n × d
    dist = np.linalg.norm(traj - centers, axis=-1)  # chains × steps × n
    return dist[..., k:].max(axis=-1), dist[..., :k].max(axis=-1)


def first_true(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First index of True along the last axis, and whether there was none (censored)."""
    hit = mask.any(axis=-1)
    return np.where(hit, mask.argmax(axis=-1), mask.shape[-1] - 1), np.asarray(~hit)


def event_hitting_times(P, starts, consts, model, C_event, beta, chains, horizon, seq):
    """The same chains' hitting times from :func:`metastab.first_passage` with the package's
    event ReachVertices (radius C_event·τ, vertex radius β^{−1/4}), −1 where censored.

    Chain k's stream depends only on the seed and k, so start i's chains are numbered from
    i·chains as in the recorded run, and the two computations must agree exactly.
    """
    out = []
    for i, (x0, c) in enumerate(zip(starts, consts)):
        event = ReachVertices(P, radius=C_event * c["tau"], vertex_radius=beta ** (-1 / 4))
        fp = first_passage(
            model, x0, event, max_steps=horizon, chains=chains, rng=seq, first_chain=i * chains
        )
        out.append(np.where(fp.censored, -1, fp.times))
    return np.concatenate(out)


def measure(
    P, starts, labels, gamma, beta, config: Config, seq
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run SA_P from every start (``chains`` each) and tabulate the event per chain, plus the
    median decay profile D_t / M per start kind."""
    chains = int(config.chains)
    consts = [phase_constants(P, x0, gamma, beta) for x0 in starts]
    horizon = max(
        [int(config.steps)] + [c["T1"] + 1 for c in consts] + [c["T1_max"] + 1 for c in consts]
    )
    x0 = np.repeat(starts, chains, axis=0)
    model = SoftmaxChain(beta=beta, gamma=gamma)
    run = simulate(model, x0, steps=horizon, record_every=1, rng=seq)
    sigma = np.stack([assignment(P, x) for x in x0])
    assert run.trajectory is not None  # a recorded run
    D, V = deviations(run.trajectory, P, sigma)
    frame = pd.DataFrame(
        [dict(c, start=lab, draw=i) for i, (c, lab) in enumerate(zip(consts, labels))]
    ).loc[np.repeat(np.arange(len(starts)), chains)]
    frame = frame.reset_index(drop=True)
    frame["chain"] = np.arange(len(frame))
    rows = np.arange(len(frame))
    vertex_radius = beta ** (-1 / 4)
    T1, T1m = frame["T1"].to_numpy(), frame["T1_max"].to_numpy()
    frame["C_at_T1"] = D[rows, T1] / frame["tau"].to_numpy()
    frame["vertex_ok_at_T1"] = V[rows, T1] <= vertex_radius
    frame["C_max_at_T1"] = D[rows, T1m] / frame["tau_max"].to_numpy()
    frame["vertex_ok_at_T1_max"] = V[rows, T1m] <= vertex_radius
    near = (D <= config.C_event * frame["tau"].to_numpy()[:, None]) & (V <= vertex_radius)
    frame["hit_step"], frame["censored"] = first_true(near)
    frame["hit_step_event"] = event_hitting_times(
        P, starts, consts, model, float(config.C_event), beta, chains, horizon, seq
    )
    frame["max_steps"] = horizon
    ratio = D / frame["M"].to_numpy()[:, None]
    profile = []
    for lab in dict.fromkeys(labels):
        sel = frame["start"].to_numpy() == lab
        q = np.quantile(ratio[sel], [0.1, 0.5, 0.9], axis=0)
        profile.append(
            pd.DataFrame(
                {"start": lab, "step": run.times, "q10": q[0], "median": q[1], "q90": q[2]}
            )
        )
    return frame, pd.concat(profile, ignore_index=True)


def smallest_C(C: np.ndarray, vertex_ok: np.ndarray, level: float) -> float:
    """Smallest C with P̂[event at T1] >= level for one start: the ``level`` quantile (upper
    order statistic) of the per-chain C needed, where a chain whose vertex tokens strayed
    beyond β^{−1/4} needs C = inf."""
    need = np.where(vertex_ok, C, np.inf)
    return float(np.quantile(need, level, method="higher"))


def summarise(chains: pd.DataFrame, C_event: float) -> pd.DataFrame:
    """Per (polytope, γ, β): T1, hitting times, P̂[event at T1] against 1 − β^{−1/8}, and the
    smallest C the data support, for the published m (a minimum) and for M (a maximum)."""
    rows = []
    for (name, gamma, beta), g in chains.groupby(["polytope", "gamma", "beta"], sort=True):
        level = 1 - beta ** (-1 / 8)
        rnd, ext = g[g["start"] == "random"], g[g["start"] == "extreme"]
        per_start = (
            g.groupby(["start", "draw"])
            .apply(
                lambda s, level=level: pd.Series(
                    {
                        "C": smallest_C(s["C_at_T1"], s["vertex_ok_at_T1"], level),
                        "C_max": smallest_C(s["C_max_at_T1"], s["vertex_ok_at_T1_max"], level),
                    }
                ),
                include_groups=False,
            )
            .reset_index()
        )
        hit = rnd["hit_step"].where(~rnd["censored"], np.inf).to_numpy(float)
        q10, q50, q90 = np.quantile(hit, [0.1, 0.5, 0.9], method="inverted_cdf")
        event = rnd["vertex_ok_at_T1"] & (rnd["C_at_T1"] <= C_event)
        event_max = rnd["vertex_ok_at_T1_max"] & (rnd["C_max_at_T1"] <= 1 / (1 - gamma))
        rows.append(
            {
                "polytope": name,
                "gamma": gamma,
                "beta": beta,
                "bound": level,
                "cones_ok": bool(g["cones_ok"].all()),
                "beta_draw": g["beta_draw"].iloc[0],
                "T1_median": rnd["T1"].median(),
                "T1_min": rnd["T1"].min(),
                "T1_max": rnd["T1"].max(),
                "T1_extreme": int(ext["T1"].iloc[0]),
                "hit_q10": q10,
                "hit_median": q50,
                "hit_q90": q90,
                "hit_extreme_median": ext["hit_step"].where(~ext["censored"], np.inf).median(),
                "censored": int(g["censored"].sum()),
                "chains": len(g),
                "P_event_T1": event.mean(),
                "P_event_T1_max": event_max.mean(),
                "C_hat_random": per_start.loc[per_start["start"] == "random", "C"].max(),
                "C_hat_extreme": per_start.loc[per_start["start"] == "extreme", "C"].max(),
                "C_max_hat": per_start["C_max"].max(),
                "M_over_m_random": (rnd["M"] / rnd["m"]).max(),
                "M_over_m_extreme": float((ext["M"] / ext["m"]).iloc[0]),
                "m_extreme": float(ext["m"].iloc[0]),
            }
        )
    return pd.DataFrame(rows)


def polytope_row(P: Polytope, threshold: float) -> dict:
    return {
        "polytope": P.name,
        "vertices": P.vertices.round(6).tolist(),
        "c0": P.c0,
        "diameter": P.diameter,
        "equinorm": P.is_equinorm(),
        "acute_cones": P.has_acute_cones(),
        "max_cone_angle_deg": float(np.degrees(P.cone_angles()).max()),
        "geometric_scale": geometric_scale(P),
        "beta_threshold": threshold,
    }


def analyse(out: Path, config: Config) -> None:
    """The summary of the simulated chains: ``summary.csv`` (:func:`summarise`) from
    ``chains.parquet``, with the run's provenance."""
    out = Path(out)
    chains, meta = read_table(out / "chains.parquet")
    write_table(
        summarise(chains, float(config.C_event)),
        out / "summary.csv",
        dict(
            meta,
            table="per polytope, gamma, beta: T1, hitting times of the event with "
            "C_event (random starts), P[event at T1] against 1 - beta^(-1/8), smallest C "
            "supported (published m = min; variant M = max)",
        ),
    )


def run(config: Config, out: Path) -> None:
    """Simulate: the chain table, decay profiles and polytope table of the clustering study (the
    summary of the chains: :func:`analyse`)."""
    out = Path(out)
    seed = int(config.seed)
    chains, profiles, polys = [], [], []
    for ip, spec in enumerate(config.polytopes):
        P = build_polytope(spec)
        threshold = existence_threshold(P)
        polys.append(polytope_row(P, threshold))
        k = P.n_vertices
        n = k * (1 + int(config.tokens_per_vertex))
        for ib, beta in enumerate(config.betas):
            beta = float(beta)
            beta_draw = max(beta, config.margin * threshold)
            gen = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(ip, ib)))
            starts = random_starts(P, n, beta_draw, int(config.draws), gen)
            extreme = extreme_start(P, int(config.tokens_per_vertex), beta_draw)
            starts = np.concatenate([starts, extreme[None]])
            labels = ["random"] * int(config.draws) + ["extreme"]
            for ig, gamma in enumerate(config.gammas):
                seq = np.random.SeedSequence(seed, spawn_key=(ip, ib, ig, 1))
                frame, profile = measure(P, starts, labels, float(gamma), beta, config, seq)
                for f in (frame, profile):
                    f.insert(0, "beta_draw", beta_draw)
                    f.insert(0, "beta", beta)
                    f.insert(0, "gamma", float(gamma))
                    f.insert(0, "polytope", P.name)
                chains.append(frame)
                profiles.append(profile)
    meta = {
        "study": "clustering",
        "config": config.to_dict(),
        "provenance": provenance(),
        "seeds": "initial conditions: SeedSequence(seed, spawn_key=(polytope, beta)); "
        "SA_P chains: SeedSequence(seed, spawn_key=(polytope, beta, gamma, 1)), "
        "indices into the config lists",
        "theorem": "[FW] Thm 5.2, its first phase",
    }
    chains = pd.concat(chains, ignore_index=True)
    write_table(
        chains,
        out / "chains.parquet",
        dict(
            meta,
            table="one row per SA_P chain: phase constants of its start, the "
            "smallest C making the event hold at T1, hitting time for C_event",
        ),
    )
    write_table(
        pd.concat(profiles, ignore_index=True),
        out / "profiles.csv",
        dict(
            meta,
            table="quantiles over chains of D_t / M (largest distance of a "
            "non-vertex token to its vertex, over its initial value)",
        ),
    )
    write_table(
        pd.DataFrame(polys),
        out / "polytopes.csv",
        dict(
            meta, table="polytopes, hypotheses of Thm 5.2, existence threshold of the eroded cones"
        ),
    )
