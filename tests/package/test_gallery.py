"""The examples gallery's order (docs/_ext/gallery_order.py): a researcher's path, every listed
example present, an example not listed placed before the GPU's, the GPU last."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

import gallery_order  # noqa: E402

EXAMPLES = sorted(p.name for p in (ROOT / "examples").glob("*.py"))


def test_every_listed_example_exists():
    assert set(gallery_order.PATH + gallery_order.LAST) <= set(EXAMPLES)


def test_the_order_starts_with_a_first_run_and_ends_with_the_gpu():
    order = sorted(EXAMPLES, key=gallery_order.ResearcherOrder(str(ROOT / "examples")))
    assert order[: len(gallery_order.PATH)] == list(gallery_order.PATH)
    assert order[-1] == "nr_gpu_run.py"


def test_an_example_not_listed_comes_before_the_gpu():
    key = gallery_order.ResearcherOrder("examples")
    order = sorted(["nr_gpu_run.py", "plot_new.py", "plot_first_hour.py"], key=key)
    assert order == ["plot_first_hour.py", "plot_new.py", "nr_gpu_run.py"]
    # negative control: the file names' order, which the gallery used before, puts the GPU first
    assert sorted(EXAMPLES)[0] == "nr_gpu_run.py"
