"""The report of the geometry study: the parts of ``report.md`` filled from the tables in ``out``
only."""

from __future__ import annotations

from pathlib import Path

from metastab.studies.render import md_cell
from metastab.studies.runner import read_tables
from metastab.studies.study import ReportTemplate


def _rel(a: float, b: float) -> str:
    """|a − b| / b for the text."""
    return f"{abs(a - b) / b:.1e}"


def report(out: Path, template: ReportTemplate) -> str:
    """Markdown report: measured geometry beside the paper's pictures and statements."""
    t = template
    out = Path(out)
    parity, own, sampler, dom, quad, vor = read_tables(
        out,
        "cells_parity.csv",
        "cells_ownership.csv",
        "sampler_parity.csv",
        "dominance.csv",
        "quadratic.csv",
        "voronoi.csv",
    )
    own, dom = own.iloc[0], dom.iloc[0]
    eq = vor[vor["vertices"] == "B-equinorm"]["agreement"]
    var = vor[vor["vertices"] == "varying norms"]["agreement"]
    same = dict(zip(sampler["equal_norm"], sampler["same_vertex_set"]))
    delta = float(dom["erosion"])
    cell_rows = [
        t(
            "cell_row",
            panel=md_cell(r["panel"]),
            k=r["k"],
            grid=r["grid"],
            agreement=f"{r['label_agreement']:.6f}",
            differs=r["inside_disagreements"],
            owning=r["vertices_owning"],
            empty=r["empty_cells"],
            smallest=f"{r['smallest_cell_area'] / r['area_K']:.3f}",
        )
        for _, r in parity.iterrows()
    ]
    quadratic_rows = [
        t(
            "quadratic_row",
            B=r["B"],
            max_grid=f"{r['J_max_grid']:.5f}",
            max_vertices=f"{r['J_max_vertices']:.5f}",
            min_vertices=f"{r['J_min_vertices']:.5f}",
            min_grid=f"{r['J_min_grid']:.2e}",
            origin=r["origin_in_K"],
        )
        for _, r in quad.iterrows()
    ]
    return (
        t(
            "report",
            cell_rows="\n".join(cell_rows),
            draws=int(own["draws"]),
            k=int(own["k"]),
            vertex_fraction=f"{own['vertex_fraction_owning']:.3f}",
            polygon_fraction=f"{own['polygon_fraction_all_owning']:.3f}",
            genericity=t("restrictive" if own["polygon_fraction_all_owning"] < 1 else "generic"),
            same_equal=same.get(True),
            same_varying=same.get(False),
            dom_k=int(dom["k"]),
            target=int(dom["target"]),
            eta=f"{dom['eta']:g}",
            erosion=f"{dom['erosion']:g}",
            grid=int(dom["grid"]),
            grid_step=f"{dom['grid_step']:.4f}",
            area_exact=f"{dom['area_exact']:.5f}",
            area_package=f"{dom['area_package_grid']:.5f}",
            area_script=f"{dom['area_script']:.5f}",
            eroded_exact=f"{dom['eroded_area_exact']:.5f}",
            eroded_package=f"{dom['eroded_area_package_grid']:.5f}",
            eroded_script=f"{dom['eroded_area_script']:.5f}",
            rel_package=_rel(dom["area_package_grid"], dom["area_exact"]),
            rel_package_eroded=_rel(dom["eroded_area_package_grid"], dom["eroded_area_exact"]),
            rel_script=_rel(dom["area_script"], dom["area_exact"]),
            rel_script_eroded=_rel(dom["eroded_area_script"], dom["eroded_area_exact"]),
            membership=f"{dom['membership_agreement']:.6f}",
            inside_own=bool(dom["cone_inside_own_cell"]),
            inradius=f"{dom['inradius_package']:.4f}",
            erosion_verdict=t(
                "non_empty" if dom["inradius_package"] >= delta else "empty",
                erosion=f"{delta:g}",
            ),
            quadratic_rows="\n".join(quadratic_rows),
            gap=f"{float((quad['J_max_grid'] - quad['J_max_vertices']).max()):.2e}",
            vertex_value=f"{quad['J_max_vertices'].max():.6f}",
            grid_min=f"{quad['J_min_grid'].max():.1e}",
            origin_in_K=bool(quad["origin_in_K"].all()),
            equinorm=len(eq),
            matrices=vor["B_matrix"].nunique(),
            ks=sorted(int(k) for k in vor["k"].unique()),
            eq_min=f"{eq.min():.6f}",
            eq_mean=f"{eq.mean():.6f}",
            var_min=f"{var.min():.3f}",
            var_mean=f"{var.mean():.3f}",
            var_max=f"{var.max():.3f}",
        )
        + "\n"
    )
