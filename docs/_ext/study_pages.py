"""The documentation's page of a study, made from its committed ``data/NAME/report.md``.

A report is written for a terminal and a repository: its verdict is its last line, its figures
are named in a ``Figures:`` paragraph, its long checks table comes last. The page puts the
verdict (a coloured box, with the headline of the studies' table) under the title, embeds every
figure with its caption where the report names it, and folds the checks table. The report's
text is otherwise kept as written; nothing here computes a finding.
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

VERDICTS = {
    "holds": "verdict-holds",
    "holds with a correction": "verdict-correction",
    "fails": "verdict-fails",
    "not tested": "verdict-untested",
}
_VERDICT = re.compile(r"^Verdict: (holds with a correction|holds|fails|not tested)(.*)$", re.M)
_FIGURES = re.compile(r"^Figures: (.*)$", re.M)
_NAME = re.compile(r"`([^`]+\.png)`")
# a citation of the documentation in a report's text ("docs: models#LABEL"), made a link
CITATION = re.compile(r"\bdocs: ([a-z]+(?:/[a-z-]+)?)(?:#([a-z0-9-]+))?")


def label_texts(folder) -> dict[str, str]:
    """The link text of each label ``(LABEL)=`` of the Markdown pages in ``folder`` that does not
    label a heading (a heading gives its own): the bold lead of its paragraph, or the label."""
    texts = {}
    for page in sorted(Path(folder).glob("*.md")):
        lines = page.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            m = re.fullmatch(r"\(([a-z0-9-]+)\)=", line)
            if m is None:
                continue
            nxt = next((t for t in lines[i + 1 :] if t.strip()), "")
            if not nxt.startswith("#"):
                lead = re.match(r"\*\*(.+?)\.?\*\*", nxt)
                texts[m.group(1)] = lead.group(1) if lead else m.group(1).replace("-", " ")
    return texts


def cite(page: str, label: str | None, texts: dict[str, str], role: str) -> str:
    """The link that replaces the citation ``docs: PAGE#LABEL``, in ``role`` syntax (``"rst"``
    or ``"myst"``).

    >>> cite("models", "polytopes", {}, "rst"), cite("models", "x", {"x": "A law"}, "myst")
    ('see :ref:`polytopes`', 'see {ref}`A law <x>`')
    """
    if page.startswith("studies/"):
        kind, target = "ref", "study-" + page.split("/", 1)[1]
    elif label:
        kind, target = "ref", f"{texts[label]} <{label}>" if label in texts else label
    else:
        kind, target = "doc", f"/user/{page}"
    return f"see :{kind}:`{target}`" if role == "rst" else f"see {{{kind}}}`{target}`"


def figure_captions(line: str) -> list[tuple[str, str]]:
    """The (file pattern, caption) pairs of a ``Figures:`` line: each backquoted ``*.png`` name,
    with the balanced parenthesis after it as its caption (empty when there is none).

    >>> figure_captions("`a.png` (one (nested) caption), `b.png`.")
    [('a.png', 'one (nested) caption'), ('b.png', '')]
    """
    pairs = []
    for m in _NAME.finditer(line):
        rest, caption = line[m.end() :].lstrip(), ""
        if rest.startswith("("):
            depth = 0
            for i, c in enumerate(rest):
                depth += {"(": 1, ")": -1}.get(c, 0)
                if depth == 0:
                    caption = rest[1:i]
                    break
        pairs.append((m.group(1), caption))
    return pairs


def _figure(name: str, caption: str) -> str:
    alt = re.sub(r"[`*]", "", caption or name).replace("\n", " ")
    return f"```{{figure}} {name}\n:alt: {alt}\n:width: 100%\n\n{caption or name}\n```\n"


def _figures(line: str, pngs: list[str]) -> tuple[str, list[str]]:
    """The figure blocks of a ``Figures:`` line (patterns such as ``panels_<config>.png`` match
    every file they name) and the PNGs it names."""
    blocks, named = [], []
    for pattern, caption in figure_captions(line):
        glob = re.sub(r"<[^>]+>", "*", pattern)
        for png in sorted(fnmatch.filter(pngs, glob)):
            if png not in named:
                named.append(png)
                blocks.append(_figure(png, caption or png))
    return "\n".join(blocks), named


def study_page(
    text: str, pngs: list[str], headline: str | None = None, texts: dict[str, str] | None = None
) -> str:
    """The page of one study from the text of its report and the names of its PNG files
    (``texts``: the link texts of labels, :func:`label_texts`).

    >>> page = study_page("# T\\n\\nFigures: `f.png` (a plot).\\n\\n## Checks\\n\\n| a |\\n|---|\\n"
    ...                   "\\nVerdict: holds (1 of 1 tested claims pass).\\n", ["f.png"])
    >>> ":class: verdict verdict-holds" in page and "```{figure} f.png" in page
    True
    >>> "<details" in page and page.count("Verdict:") == 1
    True
    >>> cited = study_page("# T\\n\\n(docs: models#polytopes)\\n\\nVerdict: fails", [])
    >>> "see {ref}`polytopes`" in cited
    True
    """
    verdict = _VERDICT.search(text)
    if verdict is None:
        raise ValueError("a study report must end with its 'Verdict: ...' line")
    body = (text[: verdict.start()] + text[verdict.end() :]).rstrip() + "\n"
    named: list[str] = []

    def embed(m: re.Match) -> str:
        blocks, names = _figures(m.group(1), pngs)
        named.extend(names)
        return blocks

    body = _FIGURES.sub(embed, body)
    body = CITATION.sub(lambda m: cite(m.group(1), m.group(2), texts or {}, "myst"), body)
    rest = [p for p in sorted(pngs) if p not in named]
    if rest:
        extra = "\n".join(_figure(p, p) for p in rest)
        body = _before_checks(body, f"## Figures\n\n{extra}\n")
    body = _fold_checks(body)
    word, detail = verdict.group(1), verdict.group(2).strip()
    box = [f"```{{admonition}} Verdict: {word}", f":class: verdict {VERDICTS[word]}", ""]
    if headline:
        box += [headline, ""]
    box += [detail, "```", ""]
    title, _, after = body.partition("\n")
    return "\n".join([title, "", *box]) + after


def _before_checks(body: str, block: str) -> str:
    head, sep, tail = body.partition("\n## Checks\n")
    return f"{head}\n{block}{sep}{tail}" if sep else f"{body}\n{block}"


def _fold_checks(body: str) -> str:
    """The ``## Checks`` section folded into an HTML ``<details>`` (the table is parsed as
    Markdown between the two raw lines)."""
    head, sep, tail = body.partition("\n## Checks\n")
    if not sep:
        return body
    nxt = re.search(r"^## ", tail, re.M)
    section, after = (tail[: nxt.start()], tail[nxt.start() :]) if nxt else (tail, "")
    rows = sum(1 for line in section.splitlines() if line.startswith("| `"))
    fold = (
        f'\n## Checks\n\n<details class="study-checks">\n<summary>The checks table '
        f"({rows} rows)</summary>\n\n{section.strip()}\n\n</details>\n\n"
    )
    return head + fold + after
