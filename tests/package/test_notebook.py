"""The first-hour example runs as the notebook the gallery makes of it: its cells (the blocks
between ``# %%`` lines, as sphinx-gallery splits them) in order in one namespace, as a kernel runs
them (the kernel itself, nbclient and ipykernel, are not dependencies), with the value of each
cell's last expression kept as the notebook would display it. Warnings fail the test (pytest's
filterwarnings = error)."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "plot_first_hour.py"
_CELL = re.compile(r"^# %%.*$", re.M)


def run_cells(path: Path) -> tuple[list[object], dict]:
    """Each cell's displayed value (None when it ends in a statement), and the namespace."""
    namespace: dict = {"__name__": "__main__"}
    values = []
    for source in _CELL.split(path.read_text()):
        tree = ast.parse(source)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        if last is not None and isinstance(last.value, ast.Constant):  # a docstring: text
            last = None
        exec(compile(tree, str(path), "exec"), namespace)
        values.append(
            eval(compile(ast.Expression(last.value), str(path), "eval"), namespace)
            if last is not None
            else None
        )
    return values, namespace


@pytest.fixture(scope="module")
def cells() -> tuple[list[object], dict]:
    return run_cells(EXAMPLE)


def test_the_figure_cell_makes_an_image(cells):
    values, namespace = cells
    assert values[-1] is None  # assigned: the gallery shows the figure, not its repr
    png = namespace["fig"]._repr_png_()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert (
        "matplotlib.pyplot" not in sys.modules or not sys.modules["matplotlib.pyplot"].get_fignums()
    )  # no figure left open


def test_the_result_cells_show_short_reprs(cells):
    shown = [repr(v) for v in cells[0] if v is not None]
    assert [text.split("(")[0] for text in shown] == [
        "FirstPassage",
        "EscapeRate",
        "ScalingFit",
        "Survival",
    ]
    assert all(len(text) < 400 for text in shown)
    assert "slope=" in shown[2] and "95% profile CI" in shown[2]


def test_run_cells_keeps_the_last_expression_only(tmp_path):
    """The harness itself: a cell's value is its last expression; a cell ending in a statement
    or a docstring shows nothing (negative control)."""
    path = tmp_path / "plot_x.py"
    path.write_text('"""Title."""\nx = 2\n# %%\n# text\nx + 1\n# %%\ny = x * 5\n# %%\ny\n')
    assert run_cells(path)[0] == [None, 3, None, 10]
