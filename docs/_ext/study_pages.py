"""The documentation's page of a study, made from its committed ``data/NAME/report.md``.

A report is written for a terminal and a repository: its verdict is its last line, its figures
are named in a ``Figures:`` paragraph, its long checks table comes last. The page puts the
verdict (a coloured box, with the headline of the studies' table) under the title and beside it
the statement under test with its numbered equations as the model page writes them
(:func:`statements`), embeds every figure with its caption where the report names it, and folds
the checks table. The report's text is otherwise kept as written; nothing here computes a
finding.
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
# a labelled display equation of a MyST page: $$ ... $$ (eq-LABEL)
_EQUATION = re.compile(r"^[ \t]*\$\$\n(.*?)\n[ \t]*\$\$ \((eq-[a-z0-9-]+)\)$", re.M | re.S)
# where a statement of the model page starts: a label line or an item of a numbered list
_STATEMENT_START = re.compile(r"^(?:\([a-z0-9-]+\)=|\d+\. \*\*)", re.M)
_STUDY_REF = re.compile(r"<study-([a-z-]+)>`")
# an entry of the references page: its label, then its bold key
_REFERENCE = re.compile(r"^\((ref-[a-z0-9-]+)\)=\n\*\*\[([^\]]+)\]\*\*", re.M)


def reference_keys(text: str) -> dict[str, str]:
    """The label of each bracketed key (``[FW]``) of the references page's Markdown ``text``.

    >>> reference_keys("(ref-fw)=\\n**[FW]** Alcalde et al.")
    {'FW': 'ref-fw'}
    """
    return {m.group(2): m.group(1) for m in _REFERENCE.finditer(text)}


def link_keys(text: str, keys: dict[str, str]) -> str:
    """``text`` with each bracketed key of ``keys`` (outside code) a link to its reference.

    >>> link_keys("[FW] Thm 5.4, `[FW]`, [FW](x)", {"FW": "ref-fw"})
    '{ref}`[FW] <ref-fw>` Thm 5.4, `[FW]`, [FW](x)'
    """
    if not keys:
        return text
    key = re.compile(r"\[(" + "|".join(map(re.escape, keys)) + r")\](?!\()")
    parts = re.split(r"(`[^`\n]*`)", text)
    for k in range(0, len(parts), 2):
        parts[k] = key.sub(lambda m: f"{{ref}}`[{m.group(1)}] <{keys[m.group(1)]}>`", parts[k])
    return "".join(parts)


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
    or ``"myst"``); a label ``eq-...`` is a numbered equation of the page.

    >>> cite("models", "polytopes", {}, "rst"), cite("models", "x", {"x": "A law"}, "myst")
    ('see :ref:`polytopes`', 'see {ref}`A law <x>`')
    >>> cite("models", "eq-sa-p", {}, "rst")
    'see :eq:`eq-sa-p` of :doc:`/user/models`'
    """
    if label and label.startswith("eq-"):
        if role == "rst":
            return f"see :eq:`{label}` of :doc:`/user/{page}`"
        return f"see {{eq}}`{label}` of {{doc}}`/user/{page}`"
    if page.startswith("studies/"):
        kind, target = "ref", "study-" + page.split("/", 1)[1]
    elif label:
        kind, target = "ref", f"{texts[label]} <{label}>" if label in texts else label
    else:
        kind, target = "doc", f"/user/{page}"
    return f"see :{kind}:`{target}`" if role == "rst" else f"see {{{kind}}}`{target}`"


def statements(text: str) -> dict[str, list[tuple[str, str, str]]]:
    """The statements of a model page's Markdown ``text`` that a study tests, by study: per
    study, (name, LaTeX, label) of each labelled display equation of the statement that names
    the study (``{ref}`... <study-NAME>```), its own or one it cites (``{eq}`LABEL```). A
    statement runs from a label line or an item of a numbered list to the next; its name is
    its heading, or its bold lead with the parenthesis after it (its source).

    >>> page = ("(s)=\\n**Collapse** ([FW] §5). Text\\n\\n$$\\nx = 1\\n$$ (eq-x)\\n\\n"
    ...         "(study {ref}`collapse <study-collapse>`)\\n\\n(t)=\\n**Other**\\n")
    >>> statements(page)
    {'collapse': [('Collapse ([FW] §5)', 'x = 1', 'eq-x')]}
    """
    latex = {m.group(2): m.group(1).strip() for m in _EQUATION.finditer(text)}
    starts = [m.start() for m in _STATEMENT_START.finditer(text)] + [len(text)]
    found: dict[str, list[tuple[str, str, str]]] = {}
    for a, b in zip(starts, starts[1:]):
        chunk = text[a:b]
        labels = [m.group(2) for m in _EQUATION.finditer(chunk)]
        labels += [x for x in re.findall(r"\{eq\}`([a-z0-9-]+)`", chunk) if x in latex]
        first = chunk.split("\n", 1)[0] if chunk[0].isdigit() else chunk.split("\n", 2)[1]
        lead = re.match(r"(?:\d+\. )?\*\*(.+?)\.?\*\*", first)
        if first.startswith("#"):
            name = first.lstrip("# ")
        elif lead:
            name = lead.group(1) + _parenthesis(first[lead.end() :])
        else:
            continue
        for study in dict.fromkeys(_STUDY_REF.findall(chunk)):
            found.setdefault(study, []).extend(
                (name, latex[label], label) for label in dict.fromkeys(labels)
            )
    return {study: items for study, items in found.items() if items}


def _parenthesis(rest: str) -> str:
    """The balanced parenthesis that opens ``rest`` (after spaces), with a space before it, or
    an empty string."""
    rest = rest.lstrip(" ")
    if not rest.startswith("("):
        return ""
    depth = 0
    for i, c in enumerate(rest):
        depth += {"(": 1, ")": -1}.get(c, 0)
        if depth == 0:
            return " " + rest[: i + 1]
    return ""


def _statement_box(items: list[tuple[str, str, str]]) -> list[str]:
    """The MyST lines of the box that shows a study's statements with their equations."""
    names = list(dict.fromkeys(name for name, _, _ in items))
    # a colon fence: the names hold roles, and a backtick fence's title may not hold backticks
    box = [":::{admonition} Statement: " + "; ".join(names), ":class: statement", ""]
    for _, tex, label in items:
        box += ["$$", tex, "$$", "", f"{{eq}}`{label}` of {{doc}}`/user/models`", ""]
    return box + [":::", ""]


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
    text: str,
    pngs: list[str],
    headline: str | None = None,
    texts: dict[str, str] | None = None,
    statement: list[tuple[str, str, str]] | None = None,
    keys: dict[str, str] | None = None,
) -> str:
    """The page of one study from the text of its report and the names of its PNG files
    (``texts``: the link texts of labels, :func:`label_texts`; ``statement``: the study's entry
    of :func:`statements`; ``keys``: the references' labels, :func:`reference_keys`).

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
    body = link_keys(body, keys or {})
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
    if statement:
        box += _statement_box(statement)
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
