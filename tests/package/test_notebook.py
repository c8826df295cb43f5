"""The example notebook runs: its code cells in order in one namespace, as a kernel runs them
(the kernel itself, nbclient and ipykernel, are not dependencies), with the value of each cell's
last expression kept as the notebook would display it. Warnings fail the test (pytest's
filterwarnings = error)."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "first-hour.ipynb"


def run_cells(path: Path) -> list[object]:
    """Each code cell's displayed value (None when it ends in a statement)."""
    namespace: dict = {"__name__": "__main__"}
    values = []
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] != "code":
            continue
        tree = ast.parse("".join(cell["source"]))
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        exec(compile(tree, str(path), "exec"), namespace)
        values.append(
            eval(compile(ast.Expression(last.value), str(path), "eval"), namespace)
            if last is not None
            else None
        )
    return values


@pytest.fixture(scope="module")
def values() -> list[object]:
    return run_cells(NOTEBOOK)


def test_the_figure_cell_displays_an_image(values):
    figure = values[-1]
    assert figure._repr_png_().startswith(b"\x89PNG\r\n\x1a\n")
    assert (
        "matplotlib.pyplot" not in sys.modules or not sys.modules["matplotlib.pyplot"].get_fignums()
    )  # no figure left open


def test_the_result_cells_show_short_reprs(values):
    shown = [repr(v) for v in values if v is not None][:-1]
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
    shows nothing (negative control)."""
    cells = [
        {"cell_type": "code", "source": ["x = 2\n", "x + 1"]},
        {"cell_type": "markdown", "source": ["# text"]},
        {"cell_type": "code", "source": ["y = x * 5"]},
        {"cell_type": "code", "source": ["y"]},
    ]
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": cells}))
    assert run_cells(path) == [3, None, 10]
