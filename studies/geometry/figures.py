"""Figures of the geometry study; reads only the tables that run.py wrote."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from metastab.results import read_table
from metastab.studies.figures import axes_row, draw


def _outline(ax, V, owns=None):
    """K's boundary, its vertices (open red circle: the vertex does not own its cell), the
    origin."""
    closed = np.vstack([V, V[:1]])
    ax.plot(closed[:, 0], closed[:, 1], "k-", lw=1)
    owns = np.ones(len(V), bool) if owns is None else np.asarray(owns, bool)
    ax.scatter(V[owns, 0], V[owns, 1], s=36, c="k", zorder=5, label="vertex owning its cell")
    if (~owns).any():
        ax.scatter(
            V[~owns, 0],
            V[~owns, 1],
            s=70,
            facecolors="none",
            edgecolors="red",
            linewidths=2,
            zorder=5,
            label="vertex NOT in its own cell",
        )
    ax.scatter([0], [0], marker="x", c="k", s=40, zorder=3)
    ax.set_aspect("equal")
    ax.set_xlabel("$x_1$")
    ax.set_ylabel("$x_2$")


def _labels_image(ax, labels, box, k):
    """Cell labels (−1 outside K) as an image over ``box`` = (xmin, xmax, ymin, ymax)."""
    import seaborn as sns
    from matplotlib.colors import ListedColormap

    size = int(round(np.sqrt(labels.size)))
    img = np.ma.masked_less(labels.reshape(size, size).astype(float), 0)
    cmap = ListedColormap(sns.color_palette("husl", k))
    ax.imshow(
        img,
        origin="lower",
        extent=box,
        cmap=cmap,
        vmin=-0.5,
        vmax=k - 0.5,
        interpolation="nearest",
        alpha=0.75,
    )


def cells_figure(out: Path):
    maps, _ = read_table(out / "cells_maps.parquet")
    verts, _ = read_table(out / "cells_vertices.csv")
    fig, axes = axes_row(3, 12.0, 4.6)
    for ax, (name, g) in zip(axes, verts.groupby("panel", sort=False)):
        box = g[["xmin", "xmax", "ymin", "ymax"]].iloc[0].to_numpy()
        _labels_image(ax, maps[name].to_numpy(), box, len(g))
        _outline(ax, g[["x", "y"]].to_numpy(), g["owns_cell"].to_numpy())
        ax.set_title(f"cells $C_a$, {name}")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=2)
    fig.savefig(out / "cells.png", dpi=110)


def dominance_figure(out: Path):
    polys, _ = read_table(out / "dominance_polygons.csv")
    labels, meta = read_table(out / "dominance_map.parquet")
    row = read_table(out / "dominance.csv")[0].iloc[0]
    box = np.array(meta["box"])[[0, 2, 1, 3]]
    fig, (ax,) = axes_row(1, 6.0, 6.2)
    lab = labels["label"].to_numpy()
    size = int(round(np.sqrt(lab.size)))
    grid = np.ma.masked_less(lab.reshape(size, size).astype(float), 0)
    target = np.ma.masked_not_equal(grid, row["target"])
    ax.imshow(
        target,
        origin="lower",
        extent=box,
        cmap="Greys",
        vmin=row["target"] - 2,
        vmax=row["target"] + 8,
        interpolation="nearest",
    )
    xs, ys = np.linspace(box[0], box[1], size), np.linspace(box[2], box[3], size)
    ax.contour(xs, ys, grid, levels=np.arange(grid.max()) + 0.5, colors="0.35", linewidths=0.6)
    fills = {
        "cone": ("tab:green", rf"$I_{{{int(row['target'])}}}(\eta)$, $\eta$ = {row['eta']:g}"),
        "eroded cone": ("magenta", rf"$I(\eta) \ominus {row['erosion']:g}$"),
    }
    for shape, (colour, label) in fills.items():
        p = polys.loc[polys["shape"] == shape, ["x", "y"]].to_numpy()
        if len(p):
            ax.fill(p[:, 0], p[:, 1], color=colour, alpha=0.55, ec="k", lw=0.6, label=label)
    _outline(ax, polys.loc[polys["shape"] == "K", ["x", "y"]].to_numpy())
    ax.set_title(
        f"dominance cone and its erosion, equinorm {int(row['k'])}-gon\n"
        f"(grey: the cell of the target vertex; lines: cell boundaries)"
    )
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=3)
    fig.savefig(out / "dominance.png", dpi=120)


def quadratic_figure(out: Path):
    field, _ = read_table(out / "quadratic_field.parquet")
    rows, _ = read_table(out / "quadratic.csv")
    fig, axes = axes_row(len(rows), 5.4 * len(rows), 5.4)
    for ax, (_, row) in zip(axes, rows.iterrows()):
        i = int(row["panel"])
        J = field[f"J{i}"].to_numpy()
        size = int(round(np.sqrt(J.size)))
        xs = np.linspace(row["xmin"], row["xmax"], size)
        ys = np.linspace(row["ymin"], row["ymax"], size)
        cs = ax.contourf(xs, ys, J.reshape(size, size), levels=25, cmap="plasma")
        fig.colorbar(
            cs,
            ax=ax,
            orientation="horizontal",
            fraction=0.05,
            pad=0.12,
            label=r"$J(x) = \frac{1}{2}\langle Bx, x\rangle$",
        )
        V = field[[f"vx{i}", f"vy{i}"]].dropna().to_numpy()
        _outline(ax, V)
        B = np.array(json.loads(row["B"]) if isinstance(row["B"], str) else row["B"])
        ax.set_title(f"B = {B.tolist()}, vertices on $\\langle Bv, v\\rangle = 1$")
    fig.savefig(out / "quadratic.png", dpi=110)


def voronoi_figure(out: Path):
    import seaborn as sns

    data, _ = read_table(out / "voronoi.csv")
    data = data.assign(B=data["B_matrix"].astype(str))
    fig, (ax,) = axes_row(1, 7.0, 4.4)
    sns.pointplot(
        data=data,
        x="k",
        y="agreement",
        hue="vertices",
        ax=ax,
        errorbar=("pi", 100),
        dodge=0.3,
        markers=["o", "s"],
        linestyles=["-", "--"],
        capsize=0.15,
    )
    ax.set_xlabel("number of vertices k")
    ax.set_ylabel("fraction of grid points of K\nwhere cell = B-Voronoi cell")
    ax.set_ylim(0, 1.05)
    ax.set_title(
        f"cells vs B-Voronoi cells ({data['draw'].nunique()} polygons per k and B, "
        f"{data['B'].nunique()} matrices B; bars: min–max)"
    )
    ax.legend(title="vertices", loc="lower left")
    fig.savefig(out / "voronoi.png", dpi=120)


def figures(out: Path) -> None:
    """Draw cells.png, dominance.png, quadratic.png and voronoi.png from the tables in ``out``."""
    draw(out, cells_figure, dominance_figure, quadratic_figure, voronoi_figure)
