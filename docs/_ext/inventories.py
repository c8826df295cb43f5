"""Intersphinx inventories of Python, numpy, scipy, pandas and matplotlib, written at build time.

The build must work offline, so the ``objects.inv`` files of these projects are not fetched:
this module holds a curated table of the names the API reference uses, per project, and writes
it as standard inventories (the zlib format of ``sphinx.util.inventory``) before intersphinx
reads them. Only names whose page, or whose project's page pattern for that kind of object, was
confirmed on the project's site are listed. ``docs/developer/documentation.md`` says how to add
one.
"""

import zlib
from pathlib import Path

# (name, domain:role, URI relative to the project's base URL)
PROJECTS: dict[str, tuple[str, tuple[tuple[str, str, str], ...]]] = {
    "python": (
        "https://docs.python.org/3/",
        (
            ("bool", "py:class", "library/functions.html#bool"),
            ("callable", "py:function", "library/functions.html#callable"),
            ("dict", "py:class", "library/stdtypes.html#dict"),
            ("float", "py:class", "library/functions.html#float"),
            ("int", "py:class", "library/functions.html#int"),
            ("list", "py:class", "library/stdtypes.html#list"),
            ("None", "py:data", "library/constants.html#None"),
            ("object", "py:class", "library/functions.html#object"),
            ("str", "py:class", "library/stdtypes.html#str"),
            ("tuple", "py:class", "library/stdtypes.html#tuple"),
            ("argparse.ArgumentParser", "py:class", "library/argparse.html#$"),
            ("os.PathLike", "py:class", "library/os.html#$"),
            ("pathlib.Path", "py:class", "library/pathlib.html#$"),
            ("iterable", "std:term", "glossary.html#term-iterable"),
            ("mapping", "std:term", "glossary.html#term-mapping"),
            ("sequence", "std:term", "glossary.html#term-sequence"),
        ),
    ),
    "numpy": (
        "https://numpy.org/doc/stable/",
        (
            ("numpy.ndarray", "py:class", "reference/generated/$.html#$"),
            ("numpy.random.Generator", "py:class", "reference/random/generator.html#$"),
            (
                "numpy.random.SeedSequence",
                "py:class",
                "reference/random/bit_generators/generated/$.html#$",
            ),
            ("array_like", "std:term", "glossary.html#term-array_like"),
            ("arrays.scalars", "std:label", "reference/arrays.scalars.html"),
        ),
    ),
    "scipy": (
        "https://docs.scipy.org/doc/scipy/",
        (
            ("scipy.stats.CensoredData", "py:class", "reference/generated/$.html#$"),
            ("scipy.stats.ecdf", "py:function", "reference/generated/$.html#$"),
            ("scipy.integrate.solve_ivp", "py:function", "reference/generated/$.html#$"),
        ),
    ),
    "pandas": (
        "https://pandas.pydata.org/docs/",
        (("pandas.DataFrame", "py:class", "reference/api/$.html#$"),),
    ),
    "matplotlib": (
        "https://matplotlib.org/stable/",
        (("matplotlib.axes.Axes", "py:class", "api/_as_gen/$.html#$"),),
    ),
}

# how the docstrings' type fields spell an external name (numpydoc's short names), beyond the
# full names, which link as themselves
SHORT_NAMES = {
    "ndarray": "numpy.ndarray",
    "array": "numpy.ndarray",
    "Generator": "numpy.random.Generator",
    "SeedSequence": "numpy.random.SeedSequence",
    "DataFrame": "pandas.DataFrame",
    "Path": "pathlib.Path",
    "Axes": "matplotlib.axes.Axes",
}


def inventory_bytes(project: str, base_entries: tuple[tuple[str, str, str], ...]) -> bytes:
    """The ``objects.inv`` file (version 2) of one project's table.

    Parameters
    ----------
    project : str
        The project's name, written in the header.
    base_entries : tuple of (str, str, str)
        ``(name, domain:role, uri)`` rows; ``$`` in a URI stands for the name (written out
        here: Sphinx expands only a final ``$``).

    Returns
    -------
    bytes
        The header lines, then the zlib-compressed ``name domain:role priority uri dispname``
        lines (``-``: the display name is the name).

    Examples
    --------
    >>> import sys
    >>> sys.path.insert(0, "docs/_ext")
    >>> from inventories import inventory_bytes
    >>> inventory_bytes("numpy", (("numpy.ndarray", "py:class", "x.html#$"),))[:27]
    b'# Sphinx inventory version '
    """
    header = (
        "# Sphinx inventory version 2\n"
        f"# Project: {project}\n"
        "# Version: stable\n"
        "# The remainder of this file is compressed using zlib.\n"
    )
    body = "".join(
        f"{name} {role} {'-1' if role.startswith('std:') else '1'} {uri.replace('$', name)} -\n"
        for name, role, uri in base_entries
    )
    return header.encode() + zlib.compress(body.encode())


def write_inventories(directory: Path) -> dict[str, tuple[str, str]]:
    """Write every project's inventory into ``directory``: its ``intersphinx_mapping``.

    Parameters
    ----------
    directory : pathlib.Path
        Where the files ``PROJECT.inv`` go (created if missing).

    Returns
    -------
    dict
        ``{project: (base URL, path of its inventory)}``.

    Examples
    --------
    >>> import sys, tempfile
    >>> from pathlib import Path
    >>> sys.path.insert(0, "docs/_ext")
    >>> from inventories import write_inventories
    >>> mapping = write_inventories(Path(tempfile.mkdtemp()))
    >>> mapping["numpy"][0]
    'https://numpy.org/doc/stable/'
    """
    directory.mkdir(parents=True, exist_ok=True)
    mapping = {}
    for project, (base, entries) in PROJECTS.items():
        path = directory / f"{project}.inv"
        path.write_bytes(inventory_bytes(project, entries))
        mapping[project] = (base, str(path))
    return mapping


def xref_aliases() -> dict[str, str]:
    """numpydoc's ``numpydoc_xref_aliases``: every listed Python object under its full name and
    its short name (numpydoc's default for ``bool`` points at a label that is not listed).

    Returns
    -------
    dict
        ``{word of a type field: target}``.

    Examples
    --------
    >>> import sys
    >>> sys.path.insert(0, "docs/_ext")
    >>> from inventories import xref_aliases
    >>> xref_aliases()["ndarray"], xref_aliases()["pandas.DataFrame"]
    ('numpy.ndarray', ':obj:`pandas.DataFrame`')
    """
    # a full name as an explicit role: numpydoc leaves a word that is its own alias unlinked
    aliases = {
        name: f":obj:`{name}`"
        for _, entries in PROJECTS.values()
        for name, role, _ in entries
        if role.startswith("py:")
    }
    aliases.update(SHORT_NAMES)
    return aliases


def _write_on_config(app, config) -> None:
    # before intersphinx normalises its mapping (priority 800) and loads it (builder-inited)
    config.intersphinx_mapping = write_inventories(Path(app.doctreedir) / "inventories")


def setup(app):
    """Write the inventories into the build's doctree directory when the build starts."""
    app.connect("config-inited", _write_on_config, priority=400)
    return {"parallel_read_safe": True}
