"""Checks of the geometry study ([FW] §2 and the paper's figure scripts), from the tables only.

Claims that can fail: equinorm cells are B-Voronoi cells on every grid point (with a negative
control: varying norms must disagree somewhere), and the package's dominance cone and its erosion
have the exact polygons' areas to grid accuracy. Context, which cannot fail in practice: the
labels equal the scripts' (the same argmax rule, re-implemented), the maximum of the convex J at
the vertices, the cone inside its own cell (both structural), and the samplers' parity.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from metastab.studies.compare import Bound, declare
from metastab.studies.runner import read_tables
from metastab.studies.verdict import check, checks_frame

from .config import Config

SOURCE = "[FW] §2"


def checks(out: Path, config: Config) -> pd.DataFrame:
    """The checks table of the study (columns of :mod:`metastab.studies.verdict`)."""
    out = Path(out)
    parity, sampler, dom, quad, vor = read_tables(
        out,
        "cells_parity.csv",
        "sampler_parity.csv",
        "dominance.csv",
        "quadratic.csv",
        "voronoi.csv",
    )
    dom = dom.iloc[0]
    var = vor[vor["vertices"] == "varying norms"]["agreement"]

    def voronoi(vertices: str) -> Bound:
        agree = vor[vor["vertices"] == vertices]["agreement"]
        return Bound(
            f"smallest fraction of grid points of K with argmax_a <Bx, v_a> = "
            f"argmin_a <B(x − v_a), x − v_a>, over {len(agree)} {vertices} polygons,",
            float(agree.min()),
            "=",
            1.0,
        )

    rows = declare(
        voronoi,
        "B-equinorm",
        config.power.voronoi_vertices,
        f"the cells are B-Voronoi cells for {config.power.voronoi_vertices} too (the equinorm "
        "hypothesis dropped)",
        criterion="voronoi_equinorm",
        role="claim",
        statement="with equal <B v_a, v_a>, the cells C_a are Vor_B(v_a) ∩ K",
        source=SOURCE,
    )
    rows.append(
        Bound(
            f"largest agreement over {len(var)} polygons of varying norms",
            float(var.max()),
            "<",
            1.0,
            tail=" (the check detects a violated hypothesis)",
            low=float(var.min()),
            high=float(var.max()),
        ).row(
            "voronoi_control",
            "control",
            "with varying norms the cells are not Voronoi cells",
            source=SOURCE,
        )
    )
    # a convex set inside the unit disc has perimeter <= 2π: its grid area is within
    # perimeter × step of the true one
    for name, grid, exact in (
        ("dominance_area", "area_package_grid", "area_exact"),
        ("erosion_area", "eroded_area_package_grid", "eroded_area_exact"),
    ):

        def area(scale: float, grid: str = grid, exact: str = exact) -> Bound:
            predicted = scale * dom[exact]
            return Bound(
                "relative difference between the package's grid area and the exact polygon's",
                abs(dom[grid] - predicted) / predicted,
                "≤",
                2 * math.pi * dom["grid_step"] / predicted,
                than="2π × grid step / area",
                tail=" (the grid error of a convex set in the unit disc)",
            )

        error = config.power.area_error
        rows += declare(
            area,
            1.0,
            1.0 + error,
            f"the exact area {error:.0%} larger",
            criterion=name,
            role="claim",
            statement="I_a(η) = {x ∈ K : <v_a − v_b, x> ≥ η ∀ b ≠ a}"
            + (" ⊖ δ" if "eroded" in grid else ""),
            source=SOURCE + ", dominance-cone script",
        )
    worst = float(parity["label_agreement"].min())
    rows.append(
        check(
            "labels_as_scripts",
            "context",
            "cell labels equal the figure scripts' labels",
            measured=worst,
            threshold=1.0,
            rule="smallest agreement of `Polytope.assign` with the scripts' argmax rule as written "
            "(the same rule re-implemented: it cannot fail in practice)",
            source="the paper's figure scripts",
        )
    )
    gap = float((quad["J_max_grid"] - quad["J_max_vertices"]).max())
    rows.append(
        check(
            "J_max_at_vertices",
            "context",
            "J(x) = ½<Bx, x> is maximal over K at vertices",
            measured=gap,
            threshold=0.0,
            rule="largest (max J on the grid − max J at the vertices); J is convex, so this "
            "cannot be positive beyond roundoff (structural)",
            source=SOURCE,
        )
    )
    rows.append(
        check(
            "cone_in_own_cell",
            "context",
            "I_a(η) ⊂ C_a",
            measured=float(bool(dom["cone_inside_own_cell"])),
            rule="1 if every grid point of the cone lies in the target's cell; structural "
            "(<v_a − v_b, x> ≥ η > 0 is the cell's inequality)",
            source=SOURCE,
        )
    )
    same = int(sampler["same_vertex_set"].sum())
    rows.append(
        check(
            "sampler_parity",
            "context",
            "`random_polygon(k, own_cells=False, rng=seed)` draws the scripts' polygons",
            measured=same,
            threshold=float(len(sampler)),
            rule="samplers (equal / varying norms) returning the scripts' vertex set",
            source="the paper's figure scripts",
        )
    )
    return checks_frame(rows)
