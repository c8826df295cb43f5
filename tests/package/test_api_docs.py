"""The API reference reads as scipy's does: every public function and class (``metastab.__all__``
and the ``__all__`` of each submodule of docs/api/modules.rst) documents its parameters and its
result in numpydoc sections, carries an example that runs in a fresh interpreter, and has a
summary that autosummary's tables do not cut mid-parenthesis.

The sections are read by the small parser below (numpydoc itself is in the docs extra only), so
the check runs in the fast tier.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import re
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# autosummary's first sentence (sphinx.ext.autosummary.extract_summary): the first paragraph up
# to the first period followed by white space, except after these abbreviations
_ABBREVIATIONS = ("et al.", "e.g.", "i.e.")
_PERIOD = re.compile(r"\.\s+")
_UNDERLINE = re.compile(r"-{3,}")
# the sections whose entries are "name : type" lines, each followed by an indented description
_ENTRY_SECTIONS = ("Parameters", "Other Parameters", "Attributes", "Returns", "Yields")


def public_modules() -> list[str]:
    listed = (ROOT / "docs" / "api" / "modules.rst").read_text()
    return ["metastab", *re.findall(r"^   (metastab[\w.]*)$", listed, re.M)]


def public_names() -> dict[str, object]:
    """Each public function and class of the package, once, under the first name that lists it."""
    found: dict[str, object] = {}
    seen: set[int] = set()
    for module_name in public_modules():
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            target = inspect.unwrap(obj) if callable(obj) else obj
            if not (inspect.isclass(target) or inspect.isfunction(target)):
                continue  # constants, type aliases, registries: documented by their module
            if not getattr(target, "__module__", "").startswith("metastab"):
                continue  # a name re-exported from elsewhere (inspect.Parameter.empty)
            if id(obj) not in seen:
                seen.add(id(obj))
                found[f"{module_name}.{name}"] = obj
    return found


def sections(doc: str) -> dict[str, list[str]]:
    """The lines of each numpydoc section of a cleaned docstring (a title underlined by dashes)."""
    lines = doc.splitlines()
    out: dict[str, list[str]] = {"": []}
    current = ""
    i = 0
    while i < len(lines):
        title, below = lines[i].strip(), lines[i + 1].strip() if i + 1 < len(lines) else ""
        if title and _UNDERLINE.fullmatch(below) and len(below) == len(title):
            current = title
            out[current] = []
            i += 2
            continue
        out[current].append(lines[i])
        i += 1
    return out


def entries(lines: list[str]) -> list[tuple[list[str], str]]:
    """(names, description) of each entry of a Parameters-like section: an entry is a line at the
    section's indentation, ``x, y : float`` naming x and y, and its description the more
    indented lines that follow."""
    found: list[tuple[list[str], list[str]]] = []
    for line in lines:
        if not line.strip():
            if found:
                found[-1][1].append("")
            continue
        if not line[0].isspace():
            head = line.split(" : ", 1)[0].strip()
            found.append(([name.strip() for name in head.split(",")], []))
        elif found:
            found[-1][1].append(line.strip())
    return [(names, " ".join(text).strip()) for names, text in found]


def summary(doc: str) -> str:
    """The summary autosummary shows: the first sentence of the first paragraph."""
    paragraph = []
    for line in doc.strip().splitlines():
        if not line.strip():
            break
        paragraph.append(line.strip())
    text = " ".join(paragraph)
    for m in _PERIOD.finditer(text):
        head = text[: m.start() + 1]
        # a period inside inline literal markup does not end the sentence
        if head.endswith(_ABBREVIATIONS) or head.count("``") % 2 or head.count("`") % 2:
            continue
        return head
    return text


def signature_names(obj: object) -> list[str]:
    """The arguments a caller passes: ``*args`` and ``**kwargs`` with their stars, no ``self``."""
    try:
        params = inspect.signature(obj).parameters.values()  # type: ignore[arg-type]
    except (TypeError, ValueError):  # a class whose constructor is a builtin's: no arguments
        return []
    prefix = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}
    # a leading underscore marks a field that is no part of the API (a fit's data, a cache)
    return [
        prefix.get(p.kind, "") + p.name
        for p in params
        if p.name not in ("self", "cls") and not p.name.startswith("_")
    ]


def run_examples(doc: str, name: str) -> list[str]:
    """The failures of the docstring's examples run with empty globals (no imports supplied)."""
    test = doctest.DocTestParser().get_doctest(doc, {}, name, None, 0)
    report: list[str] = []
    # pytest's doctest default (doctest_optionflags), so that these examples pass in both
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS, verbose=False)
    try:
        runner.run(test, out=report.append, clear_globs=True)
    finally:
        test.globs.clear()
    return ["examples fail with empty globals:\n" + "".join(report)] if runner.failures else []


def problems(obj: object, name: str, examples: bool = True) -> list[str]:
    """What keeps ``obj``'s docstring from the standard; the examples run last and only when
    everything else holds (``examples=False`` skips them)."""
    raw = obj.__doc__ if isinstance(obj.__doc__, str) else ""
    is_class = inspect.isclass(obj)
    if is_class and raw and raw.startswith(f"{obj.__name__}("):  # type: ignore[attr-defined]
        raw = ""  # the dataclass's generated docstring is not documentation
    doc = inspect.cleandoc(raw)
    if not doc:
        return ["no docstring"]
    found: list[str] = []
    parts = sections(doc)
    first = summary(doc)
    if first.count("(") > first.count(")") or first.count("[") > first.count("]"):
        found.append(f"summary cut inside a parenthesis: {first!r}")
    # (a) every argument named and described; for a class Attributes may name its fields
    args = signature_names(obj)
    documented: dict[str, str] = {}
    for title in ("Parameters", "Other Parameters") + (("Attributes",) if is_class else ()):
        for names, text in entries(parts.get(title, [])):
            for n in names:
                documented[n] = text
                if not text:
                    found.append(f"{title}: {n!r} has no description")
    plain = {n.lstrip("*"): n for n in documented}
    missing = [a for a in args if a not in documented and a.lstrip("*") not in plain]
    if missing:
        found.append(f"arguments not in Parameters: {missing}")
    known = {a.lstrip("*") for a in args}
    for names, _ in entries(parts.get("Parameters", [])):
        stale = [n for n in names if n.lstrip("*") not in known]
        if stale:
            found.append(f"Parameters names what the signature does not take: {stale}")
    # (b) a function's result, named and described (none for a function annotated -> None)
    if not is_class:
        returns = inspect.signature(obj).return_annotation  # type: ignore[arg-type]
        results = entries(parts.get("Returns", [])) + entries(parts.get("Yields", []))
        if not results and returns not in (None, "None"):
            found.append("no Returns section")
        for names, text in results:
            if not text:
                found.append(f"Returns: {', '.join(names)!r} has no description")
    # (c) an example that brings its own imports
    if ">>>" not in "\n".join(parts.get("Examples", [])):
        found.append("no Examples section with an example")
    if examples and not found:
        found += run_examples(doc, name)
    return found


PUBLIC = public_names()


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_the_docstring_meets_the_standard(name):
    assert problems(PUBLIC[name], name) == []


# negative controls: each kind of gap is seen, and a docstring at the standard passes


def _good(x: float, y: float = 1.0) -> float:
    """Add two numbers (the second one by default 1).

    Parameters
    ----------
    x, y : float
        The numbers.

    Returns
    -------
    total : float
        ``x + y``.

    Examples
    --------
    >>> import math
    >>> math.floor(2.5 + 1.0)
    3
    """
    return x + y


def _with_doc(doc: str) -> Callable[..., float]:
    def f(x: float, y: float = 1.0) -> float:
        return x + y

    f.__doc__ = doc
    return f


def _broken(old: str, new: str) -> Callable[..., float]:
    assert old in _good.__doc__  # type: ignore[operator]
    return _with_doc(_good.__doc__.replace(old, new))  # type: ignore[union-attr]


def test_a_docstring_at_the_standard_passes():
    assert problems(_good, "_good") == []


@pytest.mark.parametrize(
    "old, new, expected",
    [
        ("        The numbers.\n", "", "'x' has no description"),
        ("    x, y : float", "    x : float", "arguments not in Parameters: ['y']"),
        ("    x, y : float", "    x, y, z : float", "does not take: ['z']"),
        ("        ``x + y``.\n", "", "Returns: 'total' has no description"),
        ("    Returns\n    -------\n", "    Notes\n    -----\n", "no Returns section"),
        ("    Examples\n    --------\n", "    Notes\n    -----\n", "no Examples section"),
        ("    >>> import math\n", "", "examples fail with empty globals"),
        ("    3\n", "    4\n", "examples fail with empty globals"),
        ("(the second one", "(fig. 2: the second one", "summary cut inside a parenthesis"),
    ],
)
def test_a_gap_in_a_docstring_is_found(old, new, expected):
    found = problems(_broken(old, new), "f")
    assert any(expected in p for p in found), found


def test_the_summary_is_autosummarys_first_sentence():
    assert summary("Escape rate (per step). More text.\n\nBody.") == "Escape rate (per step)."
    assert summary("Rate (i.e. per step) of ``a. b`` here. Rest") == (
        "Rate (i.e. per step) of ``a. b`` here."
    )
    assert summary("Rate (see fig. 2) here.") == "Rate (see fig."
