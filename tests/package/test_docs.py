"""The documentation stays in step with the code without building it: every public name has a
page in the API reference, and every citation ``docs: models#LABEL`` in a docstring or comment
names a label of the model definitions (docs/user/models.md)."""

import re
from pathlib import Path

import metastab

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
CITATION = re.compile(r"docs: models#([a-z0-9-]+)((?:, #[a-z0-9-]+)*)")


def labels():
    """The labels of the model definitions: of sections and paragraphs, ``(LABEL)=``, and of
    numbered display equations, ``$$ (LABEL)``."""
    text = (DOCS / "user" / "models.md").read_text()
    sections = re.findall(r"^\(([a-z0-9-]+)\)=$", text, re.M)
    return set(sections) | set(re.findall(r"^[ \t]*\$\$ \(([a-z0-9-]+)\)$", text, re.M))


def cited():
    found = {}
    for folder in ("metastab", "studies", "tests"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix not in (".py", ".toml") or "__pycache__" in path.parts:
                continue
            if path == Path(__file__).resolve():  # its negative control cites a missing label
                continue
            for m in CITATION.finditer(path.read_text(encoding="utf-8")):
                for label in [m.group(1), *re.findall(r"#([a-z0-9-]+)", m.group(2))]:
                    found.setdefault(label, path.relative_to(ROOT))
    return found


def test_every_public_name_is_in_the_api_reference():
    listed = set(re.findall(r"^   (\w+)$", (DOCS / "api" / "index.rst").read_text(), re.M))
    public = {name for name in metastab.__all__ if not name.startswith("_")}
    assert public - listed == set()


def test_every_cited_label_of_the_model_definitions_exists():
    known = labels()
    found = cited()
    missing = {label: str(path) for label, path in found.items() if label not in known}
    assert missing == {}


def test_a_citation_of_an_unknown_label_is_found(tmp_path):
    # negative control: the pattern sees a citation, and the label set does not contain it
    m = CITATION.search("(docs: models#no-such-label, #models-rd)")
    assert m is not None and m.group(1) == "no-such-label"
    assert "no-such-label" not in labels() and {"models-rd", "eq-sa-p"} <= labels()
