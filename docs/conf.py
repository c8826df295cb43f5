"""Sphinx configuration of the metastab documentation.

Build from the repository root: ``python -m sphinx -W -b html docs docs/_build/html``.
"""

import re
import shutil
import sys
from pathlib import Path

import docutils.parsers.rst.roles

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOCS / "_ext"))

from inventories import xref_aliases  # noqa: E402
from study_pages import (  # noqa: E402
    CITATION,
    cite,
    label_texts,
    reference_keys,
    statements,
    study_page,
)

import metastab  # noqa: E402

project = "metastab"
author = "metastab contributors"
copyright = "the metastab contributors"
release = version = metastab.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    # MathJax shipped with the build (no CDN): the formulas render offline too
    "sphinx-mathjax-offline",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "sphinxarg.ext",
    "sphinx.ext.intersphinx",
    "inventories",  # docs/_ext/inventories.py: the inventories, written offline
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "**.ipynb_checkpoints", "auto_examples/*.ipynb", "auto_examples/*.py"]
templates_path = ["_templates"]

html_theme = "pydata_sphinx_theme"
html_title = f"metastab {release}"
html_theme_options = {
    "navigation_depth": 2,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_show_sourcelink = False
html_static_path = ["_static"]

myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
# a reference to a numbered display equation reads "eq. (3)"
math_eqref_format = "eq. ({number})"

# API reference
autosummary_generate = True
autosummary_imported_members = True
autosummary_ignore_module_all = False
# names of ``metastab.__all__`` are documented once, at the top level (api/index.rst)
autosummary_context = {"toplevel": [n for n in metastab.__all__ if not n.startswith("_")]}
autodoc_default_options = {"members": True, "inherited-members": False}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
# type fields link numpy, pandas, Python... through intersphinx; the inventories are written by
# docs/_ext/inventories.py into the build (nothing is fetched), which sets intersphinx_mapping
numpydoc_xref_param_type = True
numpydoc_xref_aliases = xref_aliases()
numpydoc_xref_ignore = "all"
intersphinx_mapping: dict[str, tuple[str, str]] = {}


# The examples gallery: every examples/*.py runs, except those whose names start with "nr_"
# (not run: they need a GPU or take longer than a documentation build should).
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/(?!nr_)[^/]+\.py$",
    "ignore_pattern": r"__init__\.py",
    "within_subsection_order": "gallery_order.ResearcherOrder",  # docs/_ext/gallery_order.py
    "download_all_examples": False,
    "remove_config_comments": True,
    "matplotlib_animations": False,
    "image_scrapers": ("metastab_scraper", "matplotlib"),  # ours first: see metastab_scraper
    "abort_on_example_error": True,
    "reference_url": {"metastab": None},
    # its timing page loads jQuery and DataTables from a CDN (the site must work offline)
    "write_computation_times": False,
}

# numba and the package itself warn about nothing here; keep the build strict
suppress_warnings = ["myst.header"]


# The studies gallery: data/<name>/report.md and its figures, as committed, copied into
# docs/studies/generated/<name>/ before reading (studies are never rerun by the build).
STUDIES_OUT = DOCS / "studies" / "generated"


def _headlines() -> dict[str, str]:
    """The headline column of the studies' table (docs/studies/index.md), per study."""
    text = (DOCS / "studies" / "index.md").read_text(encoding="utf-8")
    row = re.compile(r"^\| \{ref\}`[^<]+<study-([a-z-]+)>` \|[^|]*\|[^|]*\| (.*?) \|[^|]*\|$", re.M)
    return {m.group(1): m.group(2) for m in row.finditer(text)}


def _copy_studies(app) -> None:
    if STUDIES_OUT.exists():
        shutil.rmtree(STUDIES_OUT)
    headlines = _headlines()
    for report in sorted((ROOT / "data").glob("*/report.md")):
        name = report.parent.name
        dest = STUDIES_OUT / name
        dest.mkdir(parents=True)
        text = report.read_text(encoding="utf-8")
        # links to tables of the study point at the repository's files, not at documents
        text = re.sub(
            r"(?<!!)\[([^\]]+)\]\((?!https?://|#)([^)]+)\)", r"\1 (`data/" + name + r"/\2`)", text
        )
        pngs = sorted(p.name for p in report.parent.glob("*.png"))
        page = study_page(
            text, pngs, headlines.get(name), LABEL_TEXTS, STATEMENTS.get(name), REFERENCE_KEYS
        )
        (dest / "report.md").write_text(f"(study-{name})=\n" + page, encoding="utf-8")
        for png in pngs:
            shutil.copy2(report.parent / png, dest / png)


# Citations "docs: PAGE#LABEL" in docstrings (plain text in help()) become links in the API
# reference: the label of a section, or the page itself.
LABEL_TEXTS = label_texts(DOCS / "user")
# the statement each study tests, with its numbered equations (the model page's own LaTeX)
STATEMENTS = statements((DOCS / "user" / "models.md").read_text(encoding="utf-8"))
# the bracketed keys of the papers ([FW]), made links to the references page on study pages
REFERENCE_KEYS = reference_keys((DOCS / "user" / "references.md").read_text(encoding="utf-8"))


def _link_citations(app, what, name, obj, options, lines) -> None:
    lines[:] = [
        CITATION.sub(lambda m: cite(m.group(1), m.group(2), LABEL_TEXTS, "rst"), line)
        for line in lines
    ]


def setup(app):
    app.connect("builder-inited", _copy_studies)
    app.connect("autodoc-process-docstring", _link_citations)
    app.add_css_file("metastab.css")
    # matplotlib's docstrings (inherited by metastab.plotting.InlineFigure) use its own role
    app.add_role("mpltype", docutils.parsers.rst.roles.code_role)
