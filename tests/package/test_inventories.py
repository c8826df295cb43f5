"""The intersphinx inventories written offline by ``docs/_ext/inventories.py``: they parse back
as Sphinx inventories, every URI follows the page pattern confirmed on its project's site (with
a negative control), and a small build links a numpydoc type field to numpy.org without the
network."""

import re
import sys
from pathlib import Path
from typing import Any

import pytest

sphinx = pytest.importorskip("sphinx")
pytest.importorskip("numpydoc")
from sphinx.util.inventory import InventoryFile  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

import inventories  # noqa: E402

# each project's URL pattern per kind of page, as found on its site ({name}: the object's name)
CONFIRMED = {
    "python": (r"library/\w+\.html#{name}", r"glossary\.html#term-{name}"),
    "numpy": (
        r"reference/generated/{name}\.html#{name}",
        r"reference/random/generator\.html#{name}",
        r"reference/random/bit_generators/generated/{name}\.html#{name}",
        r"glossary\.html#term-{name}",
        r"reference/{name}\.html",
    ),
    "scipy": (r"reference/generated/{name}\.html#{name}",),
    "pandas": (r"reference/api/{name}\.html#{name}",),
    "matplotlib": (r"api/_as_gen/{name}\.html#{name}",),
}


def _confirmed(project: str, name: str, uri: str) -> bool:
    base = inventories.PROJECTS[project][0]
    return any(
        re.fullmatch(re.escape(base) + p.format(name=re.escape(name)), uri)
        for p in CONFIRMED[project]
    )


def _parsed(tmp_path):
    mapping = inventories.write_inventories(tmp_path)
    assert set(mapping) == set(CONFIRMED)
    for project, (base, path) in mapping.items():
        loaded = InventoryFile.loads(Path(path).read_bytes(), uri=base)
        # sphinx >= 8.2 returns an _Inventory holding the mapping, older versions the mapping
        rows: Any = getattr(loaded, "data", loaded)
        rows = rows.items()
        yield project, {(name, role): it.uri for role, items in rows for name, it in items.items()}


def test_the_inventories_parse_back_with_every_row_and_a_confirmed_uri(tmp_path):
    for project, parsed in _parsed(tmp_path):
        rows = inventories.PROJECTS[project][1]
        assert set(parsed) == {(name, role) for name, role, _ in rows}
        for (name, _), uri in parsed.items():
            assert _confirmed(project, name, uri), (project, name, uri)


def test_a_uri_off_its_projects_pattern_is_caught():
    # negative control: pandas' pages are under reference/api/, numpy's anchors name the object
    base = inventories.PROJECTS["pandas"][0]
    assert not _confirmed("pandas", "pandas.DataFrame", base + "reference/pandas.DataFrame.html")
    uri = inventories.PROJECTS["numpy"][0] + "reference/generated/numpy.ndarray.html#ndarray"
    assert not _confirmed("numpy", "numpy.ndarray", uri)


def test_every_alias_of_the_type_fields_is_in_an_inventory(tmp_path):
    listed = {name for _, parsed in _parsed(tmp_path) for name, _ in parsed}
    targets = {re.sub(r"^:obj:`(.*)`$", r"\1", t) for t in inventories.xref_aliases().values()}
    assert targets <= listed


def test_a_build_links_a_type_field_to_numpy_and_pandas_offline(tmp_path, monkeypatch):
    from sphinx.application import Sphinx

    src = tmp_path / "src"
    src.mkdir()
    (src / "mod_isph.py").write_text(
        'def f(x, rng):\n    """Sum.\n\n    Parameters\n    ----------\n    x : ndarray\n'
        "        Values.\n    rng : numpy.random.Generator\n        Stream.\n\n"
        '    Returns\n    -------\n    pandas.DataFrame\n        The table.\n    """\n'
    )
    (src / "conf.py").write_text(
        "import sys\n"
        f"sys.path[:0] = [{str(src)!r}, {str(ROOT / 'docs' / '_ext')!r}]\n"
        "from inventories import xref_aliases\n"
        "extensions = ['sphinx.ext.autodoc', 'numpydoc', 'sphinx.ext.intersphinx', 'inventories']\n"
        "numpydoc_xref_param_type = True\n"
        "numpydoc_xref_aliases = xref_aliases()\n"
        "numpydoc_xref_ignore = 'all'\n"
        "numpydoc_show_class_members = False\n"
    )
    (src / "index.rst").write_text("Mod\n===\n\n.. autofunction:: mod_isph.f\n")

    def no_network(*args, **kwargs):
        raise AssertionError("the build reached for the network")

    monkeypatch.setattr("socket.socket.connect", no_network)
    out = tmp_path / "html"
    app = Sphinx(src, src, out, tmp_path / "doctrees", "html", warningiserror=True, status=None)
    app.build()
    html = (out / "index.html").read_text(encoding="utf-8")
    for link in (
        "https://numpy.org/doc/stable/reference/generated/numpy.ndarray.html#numpy.ndarray",
        "https://numpy.org/doc/stable/reference/random/generator.html#numpy.random.Generator",
        "https://pandas.pydata.org/docs/reference/api/pandas.DataFrame.html#pandas.DataFrame",
    ):
        assert f'href="{link}"' in html


def test_doctests(monkeypatch):
    import doctest

    monkeypatch.chdir(ROOT)  # the examples import the module from docs/_ext
    failed, tried = doctest.testmod(inventories)
    assert tried > 0 and failed == 0
