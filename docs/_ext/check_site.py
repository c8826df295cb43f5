"""Check a built documentation site for what a reader would trip on.

    python docs/_ext/check_site.py BUILD_DIR [DATA_DIR]

Exits 1 with one line per problem when a page loads a script from the network (a CDN: the
formulas would not render offline), shows a raw ``docs: PAGE#LABEL`` citation instead of a link,
cites a paper by a LaTeX label key (``thm. exp.fast.polytope``: a reader of the paper cannot look
it up), has a Parameters entry with no description, is a model page with an unnumbered display
equation (the API reference cites them by number), or is a study page without one of its
figures (every PNG in ``DATA_DIR/NAME/``, default ``data/`` beside ``docs/``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

_REMOTE_SCRIPT = re.compile(r"<script[^>]*\bsrc=\"((?:https?:)?//[^\"]+)\"", re.I)
_RAW_CITATION = re.compile(r"\bdocs: [a-z]+(?:/[a-z-]+)?(?:#[a-z0-9-]+)?")
_PARAMETERS = re.compile(r">Parameters<.*?</dd>\s*</dl>", re.S)
_EMPTY_ENTRY = re.compile(r"<dt>((?:(?!<dt>).)*?)</dt>\s*<dd>\s*</dd>", re.S)
_TAG = re.compile(r"<[^>]+>")
# a LaTeX label key after a theorem-like word: "thm. ode", "eq. (softmax.ODE)", "lem. metastab.1"
# (printed numbers such as "eq. (6.9)" and tags such as "eq. (SA)" start otherwise)
_LABEL_KEY = re.compile(r"\b(?:thm|lem|prop|cor|rem|def|eq)\. \(?[a-z][A-Za-z]*(?:\.[A-Za-z0-9]+)*")
_DISPLAY_MATH = re.compile(r'<div class="math[^"]*"[^>]*>(.*?)</div>', re.S)
# the pages whose display equations must all be numbered
MODEL_PAGES = ("user/models.html",)


def page_problems(html: str, model_page: bool = False) -> list[str]:
    """The problems of one HTML page (without its study figures); ``model_page``: a page whose
    display equations must all be numbered.

    >>> page_problems('<script src="https://cdn.example/mathjax.js"></script>')
    ['loads a script from the network: https://cdn.example/mathjax.js']
    >>> page_problems("<p>(docs: models#polytopes)</p>")
    ['raw citation: docs: models#polytopes']
    >>> page_problems('<dt>Parameters<span>:</span></dt><dd><dl><dt><strong>x</strong></dt>'
    ...               '<dd></dd></dl></dd></dl>')
    ['undescribed parameter: x']
    >>> page_problems("<p>([FW] thm. exp.fast.polytope; eq. (6.9), eq. (SA))</p>")
    ['LaTeX label key: thm. exp.fast.polytope']
    >>> page_problems('<div class="math">x</div>', model_page=True)
    ['unnumbered display equation: x']
    >>> page_problems('<div class="math"><span class="eqno">(1)</span>x</div>', model_page=True)
    []
    >>> page_problems('<script src="_static/mathjax.js"></script><p>see Polytopes</p>')
    []
    """
    problems = [
        "loads a script from the network: " + m.group(1) for m in _REMOTE_SCRIPT.finditer(html)
    ]
    text = _TAG.sub(" ", re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S))
    problems += [f"raw citation: {m.group(0)}" for m in _RAW_CITATION.finditer(text)]
    problems += [f"LaTeX label key: {m.group(0)}" for m in _LABEL_KEY.finditer(text)]
    if model_page:
        for m in _DISPLAY_MATH.finditer(html):
            if 'class="eqno"' not in m.group(1):
                tex = " ".join(_TAG.sub(" ", m.group(1)).split())
                problems.append(f"unnumbered display equation: {tex[:60]}")
    for block in _PARAMETERS.finditer(html):
        for entry in _EMPTY_ENTRY.finditer(block.group(0)):
            problems.append("undescribed parameter: " + _TAG.sub("", entry.group(1)).strip())
    return problems


def study_problems(build: Path, data: Path) -> list[str]:
    """Study pages that do not show every figure of their study."""
    problems = []
    for folder in sorted(p for p in data.iterdir() if (p / "report.md").exists()):
        page = build / "studies" / "generated" / folder.name / "report.html"
        if not page.exists():
            problems.append(f"studies/{folder.name}: no page")
            continue
        shown = re.findall(r"<img[^>]*\bsrc=\"(?:[^\"]*/)?([^\"/]+\.png)\"", page.read_text())
        for png in sorted(p.name for p in folder.glob("*.png")):
            # Sphinx copies a second random.png of the site as random1.png
            copy = re.compile(re.escape(png[: -len(".png")]) + r"\d*\.png")
            if not any(copy.fullmatch(name) for name in shown):
                problems.append(f"studies/{folder.name}: figure {png} not shown")
    return problems


def site_problems(build: Path, data: Path) -> list[str]:
    problems = []
    for page in sorted(build.rglob("*.html")):
        if "_static" in page.parts or "_sources" in page.parts:
            continue
        name = page.relative_to(build).as_posix()
        html = page.read_text(encoding="utf-8")
        problems += [f"{name}: {p}" for p in page_problems(html, name in MODEL_PAGES)]
    return problems + study_problems(build, data)


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2):
        print("usage: check_site.py BUILD_DIR [DATA_DIR]", file=sys.stderr)
        return 2
    build = Path(argv[0])
    data = Path(argv[1]) if len(argv) == 2 else Path(__file__).resolve().parents[2] / "data"
    if not (build / "index.html").exists():
        print(f"check_site.py: no built site in {build} (index.html not found)", file=sys.stderr)
        return 2
    problems = site_problems(build, data)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
