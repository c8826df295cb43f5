"""Cells and dominance geometry of [FW] (docs: models#polytopes), in parity with the paper's figure
scripts.

The paper's figures of cells, dominance cones, erosions and the quadratic landscape are drawn by
scripts that sample a polygon from a fixed seed and label a 1000 × 1000 grid by an argmax. This
study reproduces those samplers seed for seed, recomputes every set with :class:`metastab.Polytope`
and measures how far the two agree, then measures the claims behind the pictures:

- cells C_a = {x in K : <B x, v_a> = max_b <B x, v_b>} with raw or unit-normalised vertices,
  and how often a vertex owns its cell (<v_a, v_a> > <v_a, v_b>, b ≠ a);
- the dominance cone I_a(η) = {x in K : <v_a − v_b, x> >= η, b ≠ a} and its erosion I_a(η) ⊖ δ,
  against the exact polygons (half-plane intersections);
- the landscape J(x) = ½<B x, x> over K, whose maximum is attained at the vertices;
- with B-equinorm vertices (<B v_a, v_a> constant) the cells are the B-Voronoi cells of the
  vertices intersected with K: the fraction of grid points where both labels agree is 1.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.path import Path as MplPath
from scipy.optimize import linprog
from scipy.spatial import ConvexHull, HalfspaceIntersection

from metastab.results import write_table
from metastab.setups.polytopes import Polytope, random_polygon
from metastab.studies.runner import study_meta

from .config import Cells, Config, Dominance, Quadratic, Voronoi

# --------------------------------------------------------------------------- the paper's samplers


def paper_polygon(k, seed, *, equal_norm, radial_range=(0.4, 1.0), bijection=True, max_tries=500):
    """The vertex sampler of the paper's cell and cone scripts (``sample_vertices``).

    Angles i.i.d. uniform on [0, 2π) (not sorted), radii 1 or uniform in ``radial_range``, drawn
    from ``numpy.random.default_rng(seed)``; with ``bijection`` a draw is redone until all k
    points are hull vertices. Returns the hull vertices in counter-clockwise order (the order
    the scripts label and index), as a :class:`metastab.Polytope`.
    """
    gen = np.random.default_rng(seed)
    for _ in range(max_tries):
        theta = gen.uniform(0, 2 * np.pi, size=k)
        low, high = radial_range
        r = np.ones(k) if equal_norm else gen.uniform(low, high, size=k)
        V = r[:, None] * np.c_[np.cos(theta), np.sin(theta)]
        hull = ConvexHull(V)
        if bijection and len(hull.vertices) != k:
            continue
        return Polytope(V[hull.vertices], name=f"paper-{k}")
    raise RuntimeError(f"no {k}-gon with all points on the hull in {max_tries} draws")


def inverse_sqrt(B) -> np.ndarray:
    """B^{-1/2} of a symmetric positive definite B (eigendecomposition)."""
    w, U = np.linalg.eigh(np.asarray(B, dtype=float))
    return U @ np.diag(w**-0.5) @ U.T


def level_set_polygon(theta, B, radii=None) -> Polytope:
    """Vertices v = r B^{-1/2} (cos θ, sin θ): on the level set <B v, v> = r² (the paper's
    quadratic and Voronoi scripts use r = 1); returns the hull vertices in CCW order."""
    u = np.c_[np.cos(theta), np.sin(theta)]
    if radii is not None:
        u = u * np.asarray(radii)[:, None]
    V = u @ inverse_sqrt(B).T
    return Polytope(V[ConvexHull(V).vertices])


# --------------------------------------------------------------------------- grids and polygons


def bounding_grid(P: Polytope, size: int, pad: float = 0.1):
    """The scripts' grid: size × size points over the bounding box of K padded by ``pad``."""
    lo, hi = P.vertices.min(axis=0) - pad, P.vertices.max(axis=0) + pad
    xs, ys = np.linspace(lo[0], hi[0], size), np.linspace(lo[1], hi[1], size)
    xx, yy = np.meshgrid(xs, ys)
    cell = (xs[1] - xs[0]) * (ys[1] - ys[0])
    return np.c_[xx.ravel(), yy.ravel()], cell, (lo, hi)


def halfplane_polygon(A, b):
    """Vertices (CCW) and area of {x : A x <= b} in the plane, or (empty, 0) if it has no
    interior; the interior point is the Chebyshev centre (linear program)."""
    A, b = np.asarray(A, float), np.asarray(b, float)
    norms = np.linalg.norm(A, axis=1)
    res = linprog(
        np.r_[0.0, 0.0, -1.0],
        A_ub=np.c_[A, norms],
        b_ub=b,
        bounds=[(None, None)] * 2 + [(0, None)],
        method="highs",
    )
    if res.status != 0 or res.x[2] <= 1e-12:
        return np.zeros((0, 2)), 0.0
    hs = HalfspaceIntersection(np.c_[A, -b], res.x[:2])
    hull = ConvexHull(hs.intersections)
    return hs.intersections[hull.vertices], float(hull.volume)


def polygon_halfplanes(poly):
    """(A, b) with {x : A x <= b} the convex polygon with CCW vertices ``poly``, unit normals."""
    edges = np.roll(poly, -1, axis=0) - poly
    normals = np.c_[edges[:, 1], -edges[:, 0]]
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    return normals, np.einsum("ij,ij->i", normals, poly)


def dominance_halfplanes(P: Polytope, a: int, eta: float, delta: float = 0.0):
    """Half-planes of I_a(η) ⊖ δ: the facets of K moved in by δ and <v_b − v_a, x> + δ|v_a − v_b|
    <= −η for b ≠ a (docs: models#polytopes; a ball of radius δ fits iff every constraint has slack
    δ)."""
    A, b = polygon_halfplanes(P.vertices)
    diff = np.delete(P.vertices, a, axis=0) - P.vertices[a]
    return (np.vstack([A, diff]), np.r_[b - delta, -eta - delta * np.linalg.norm(diff, axis=1)])


# --------------------------------------------------------------------------- cells


def cell_labels(P: Polytope, grid, inside, *, unit=False, B=None):
    """σ(x) = argmax_a <B x, v_a> on the grid (−1 outside K); with ``unit`` the vertices are
    normalised first, as the scripts' ``normalize_inner_product`` option."""
    V = P.vertices / np.linalg.norm(P.vertices, axis=1, keepdims=True) if unit else P.vertices
    labels = Polytope(V).assign(grid, B).astype(np.int8)
    labels[~inside] = -1
    return labels


def script_labels(P: Polytope, grid, *, unit=False):
    """The scripts' own ``compute_cell_map``: argmax over ``grid @ basis.T`` and matplotlib's
    point-in-polygon test for K."""
    basis = P.vertices / np.linalg.norm(P.vertices, axis=1, keepdims=True) if unit else P.vertices
    inside = MplPath(P.vertices).contains_points(grid)
    labels = np.argmax(grid @ basis.T, axis=1).astype(np.int8)
    labels[~inside] = -1
    return labels


def cell_panel(name, P, size, *, unit) -> dict:
    """Package labels vs script labels on the parity grid, and the cells' sizes."""
    grid, cell, _ = bounding_grid(P, size)
    inside = P.contains(grid)
    ours = cell_labels(P, grid, inside, unit=unit)
    theirs = script_labels(P, grid, unit=unit)
    both = (ours >= 0) & (theirs >= 0)
    owned = P.owns_cells() if not unit else np.ones(P.n_vertices, bool)
    areas = np.bincount(ours[ours >= 0], minlength=P.n_vertices) * cell
    return {
        "panel": name,
        "k": P.n_vertices,
        "unit": unit,
        "grid": size,
        "equinorm": P.is_equinorm(),
        "points_in_K": int(inside.sum()),
        "label_agreement": float((ours[both] == theirs[both]).mean()),
        "inside_disagreements": int((inside != (theirs >= 0)).sum()),
        "vertices_owning": int(owned.sum()),
        "empty_cells": int((areas == 0).sum()),
        "smallest_cell_area": float(areas.min()),
        "area_K": float(inside.sum() * cell),
    }


def ownership_statistics(k, draws, seed, radial_range):
    """Over ``draws`` polygons of the paper's sampler (varying norms, all points on the hull):
    the fraction of vertices, and of polygons, where every vertex owns its raw-product cell.
    With unit-normalised vertices ownership always holds (<u_a, v_a> = |v_a| > <u_b, v_a>)."""
    seeds = np.random.SeedSequence(seed).spawn(draws)
    own = np.array(
        [
            paper_polygon(k, s, equal_norm=False, radial_range=radial_range).owns_cells()
            for s in seeds
        ]
    )
    return {
        "k": k,
        "draws": draws,
        "vertex_fraction_owning": float(own.mean()),
        "polygon_fraction_all_owning": float(own.all(axis=1).mean()),
    }


def sampler_parity(k, seed, radial_range):
    """Whether metastab.random_polygon (own_cells=False) returns the scripts' vertex set."""
    rows = []
    for equal in (True, False):
        ours = random_polygon(
            k, equal_norm=equal, radial_range=radial_range, own_cells=False, rng=seed
        ).vertices
        theirs = paper_polygon(k, seed, equal_norm=equal, radial_range=radial_range).vertices
        same = ours.shape == theirs.shape and np.allclose(
            np.sort(ours, axis=0), np.sort(theirs, axis=0), atol=1e-12
        )
        rows.append({"equal_norm": equal, "same_vertex_set": bool(same)})
    return rows


def run_cells(cfg: Cells, seed, out, meta):
    k, rr = cfg.k, tuple(cfg.radial_range)
    P_var = paper_polygon(k, seed, equal_norm=False, radial_range=rr)
    P_eq = paper_polygon(k, seed, equal_norm=True)
    panels = [
        ("varying norms, raw <x, v>", P_var, False),
        ("varying norms, unit <x, v/|v|>", P_var, True),
        ("equal norms, raw <x, v>", P_eq, False),
    ]
    rows, maps, verts = [], {}, []
    for name, P, unit in panels:
        rows.append(cell_panel(name, P, cfg.grid, unit=unit))
        grid, _, (lo, hi) = bounding_grid(P, cfg.stored_grid)
        maps[name] = cell_labels(P, grid, P.contains(grid), unit=unit)
        for a, v in enumerate(P.vertices):
            verts.append(
                {
                    "panel": name,
                    "vertex": a,
                    "x": v[0],
                    "y": v[1],
                    "owns_cell": bool(unit or P.owns_cells()[a]),
                    "xmin": lo[0],
                    "xmax": hi[0],
                    "ymin": lo[1],
                    "ymax": hi[1],
                }
            )
    write_table(pd.DataFrame(rows), out / "cells_parity.csv", meta)
    write_table(pd.DataFrame(verts), out / "cells_vertices.csv", meta)
    write_table(
        pd.DataFrame(maps),
        out / "cells_maps.parquet",
        {
            **meta,
            "layout": f"row-major {cfg.stored_grid}² grid over the panel's "
            "box in cells_vertices.csv; -1 outside K",
        },
    )
    stats = ownership_statistics(k, cfg.draws, seed, rr)
    write_table(pd.DataFrame([stats]), out / "cells_ownership.csv", meta)
    write_table(pd.DataFrame(sampler_parity(k, seed, rr)), out / "sampler_parity.csv", meta)


# --------------------------------------------------------------------------- dominance cone


def script_cone_area(P, grid, cell_area, a, eta, delta):
    """The scripts' construction: grid points of the cell of v_a with <v_a − v_b, x> > η,
    their convex hull, then the polygon eroded by δ (here: its edges moved in by δ, exactly
    what shapely's negative buffer does to a convex polygon). Returns (area, eroded area)."""
    labels = script_labels(P, grid)
    pts = grid[labels == a]
    diffs = P.vertices[a] - np.delete(P.vertices, a, axis=0)
    pts = pts[np.all(pts @ diffs.T > eta, axis=1)]
    if len(pts) < 3:
        return 0.0, 0.0
    hull = ConvexHull(pts)
    A, b = polygon_halfplanes(pts[hull.vertices])
    return float(hull.volume), halfplane_polygon(A, b - delta)[1]


def run_dominance(cfg: Dominance, seed, out, meta):
    P = paper_polygon(cfg.k, seed, equal_norm=True)
    a, eta, delta = cfg.target, cfg.eta, cfg.erosion
    grid, cell, (lo, hi) = bounding_grid(P, cfg.grid)
    cone_poly, cone_area = halfplane_polygon(*dominance_halfplanes(P, a, eta))
    eroded_poly, eroded_area = halfplane_polygon(*dominance_halfplanes(P, a, eta, delta))
    script_area, script_eroded = script_cone_area(P, grid, cell, a, eta, delta)
    in_cone = P.in_dominance_cone(grid, a, eta)
    in_eroded = P.in_eroded_cone(grid, a, eta, delta)
    exact = np.all(
        grid @ dominance_halfplanes(P, a, eta)[0].T <= dominance_halfplanes(P, a, eta)[1], axis=1
    )
    row = {
        "k": P.n_vertices,
        "target": a,
        "eta": eta,
        "erosion": delta,
        "grid": cfg.grid,
        "grid_step": float(grid[1, 0] - grid[0, 0]),
        "area_exact": cone_area,
        "area_package_grid": float(in_cone.sum() * cell),
        "area_script": script_area,
        "eroded_area_exact": eroded_area,
        "eroded_area_package_grid": float(in_eroded.sum() * cell),
        "eroded_area_script": script_eroded,
        "membership_agreement": float((in_cone == exact).mean()),
        "inradius_package": P.dominance_inradius(a, eta),
        "cone_inside_own_cell": bool(np.all(P.assign(grid[in_cone]) == a)),
    }
    write_table(pd.DataFrame([row]), out / "dominance.csv", meta)
    shapes = [("K", P.vertices), ("cone", cone_poly), ("eroded cone", eroded_poly)]
    frame = pd.concat(
        [pd.DataFrame({"shape": s, "x": p[:, 0], "y": p[:, 1]}) for s, p in shapes],
        ignore_index=True,
    )
    write_table(frame, out / "dominance_polygons.csv", meta)
    mgrid, _, (mlo, mhi) = bounding_grid(P, cfg.stored_grid)
    labels = cell_labels(P, mgrid, P.contains(mgrid))
    write_table(
        pd.DataFrame({"label": labels}),
        out / "dominance_map.parquet",
        {
            **meta,
            "box": [*mlo, *mhi],
            "layout": f"row-major {cfg.stored_grid}² grid; -1 outside K",
        },
    )


# --------------------------------------------------------------------------- quadratic landscape


def run_quadratic(cfg: Quadratic, seed, out, meta):
    """J(x) = ½<B x, x> over K for vertices on <B v, v> = 1 (the paper's quadratic script:
    legacy ``np.random.seed``, k uniform angles). J is convex, so its maximum over K is
    attained at vertices: grid max <= vertex max, and it equals ½ at every vertex here."""
    theta = np.random.RandomState(seed).uniform(0, 2 * np.pi, cfg.k)
    rows, fields = [], {}
    for i, matrix in enumerate(cfg.B):
        B = np.asarray(matrix, float)
        P = level_set_polygon(theta, B)
        grid, _, (lo, hi) = bounding_grid(P, cfg.grid)
        inside = P.contains(grid)
        J = 0.5 * np.einsum("ij,jk,ik->i", grid, B, grid)
        Jv = 0.5 * np.einsum("ij,jk,ik->i", P.vertices, B, P.vertices)
        rows.append(
            {
                "panel": i,
                "B": B.tolist(),
                "k": P.n_vertices,
                "J_max_grid": float(J[inside].max()),
                "J_max_vertices": float(Jv.max()),
                "J_min_vertices": float(Jv.min()),
                "J_min_grid": float(J[inside].min()),
                "origin_in_K": bool(P.contains([0.0, 0.0])),
                "all_own_cells_B": P.all_own_cells(B),
                "xmin": lo[0],
                "xmax": hi[0],
                "ymin": lo[1],
                "ymax": hi[1],
            }
        )
        fields[f"J{i}"] = np.where(inside, J, np.nan).astype(np.float32)
        fields[f"vx{i}"] = np.r_[P.vertices[:, 0], np.full(len(J) - P.n_vertices, np.nan)]
        fields[f"vy{i}"] = np.r_[P.vertices[:, 1], np.full(len(J) - P.n_vertices, np.nan)]
    write_table(pd.DataFrame(rows), out / "quadratic.csv", meta)
    write_table(
        pd.DataFrame(fields),
        out / "quadratic_field.parquet",
        {
            **meta,
            "layout": f"row-major {cfg.grid}² grid; J NaN outside K; "
            "vx, vy: the vertices in the first rows",
        },
    )


# --------------------------------------------------------------------------- Voronoi agreement


def b_voronoi(V, grid, B):
    """argmin_a <B (x − v_a), x − v_a>: the B-Voronoi cell of each grid point."""
    diff = grid[:, None, :] - V[None]
    return np.argmin(np.einsum("gai,ij,gaj->ga", diff, B, diff), axis=1)


def voronoi_agreement(P, B, size):
    """Fraction of grid points of K where σ(x) (cells) equals the B-Voronoi label."""
    grid, _, _ = bounding_grid(P, size, pad=0.0)
    inside = P.contains(grid)
    g = grid[inside]
    return float((P.assign(g, B) == b_voronoi(P.vertices, g, B)).mean()), int(inside.sum())


def run_voronoi(cfg: Voronoi, seed, out, meta):
    rows = []
    for bi, matrix in enumerate(cfg.B):
        B = np.asarray(matrix, float)
        for k in cfg.ks:
            for draw, ss in enumerate(np.random.SeedSequence([seed, bi, k]).spawn(cfg.draws)):
                gen = np.random.default_rng(ss)
                theta = np.sort(gen.uniform(0, 2 * np.pi, k))
                radii = gen.uniform(0.4, 1.0, k)
                for kind, r in (("B-equinorm", None), ("varying norms", radii)):
                    P = level_set_polygon(theta, B, r)
                    frac, pts = voronoi_agreement(P, B, cfg.grid)
                    rows.append(
                        {
                            "B": bi,
                            "B_matrix": B.tolist(),
                            "k": k,
                            "draw": draw,
                            "vertices": kind,
                            "hull_vertices": P.n_vertices,
                            "agreement": frac,
                            "grid_points": pts,
                        }
                    )
    write_table(pd.DataFrame(rows), out / "voronoi.csv", meta)


# --------------------------------------------------------------------------- entry point


def run(config: Config, out: Path) -> None:
    """Compute every table of the geometry study into ``out``."""
    seed = int(config.seed)
    meta = study_meta("geometry", config)
    run_cells(config.cells, seed, out, meta)
    run_dominance(config.dominance, seed, out, meta)
    run_quadratic(config.quadratic, seed, out, meta)
    run_voronoi(config.voronoi, seed, out, meta)
