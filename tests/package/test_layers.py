"""The import layers of the package, read from its source: every module's imports, at module level
and inside functions (``TYPE_CHECKING`` blocks too), form a graph without cycles, and each layer
imports only the layers below it.

The layers, from the bottom: the kernels (numba code, importing nothing else of metastab); the
core (models, setups, events, registry, engine, results, statistics, theory), which never imports
what is built on it (the sweeps, the benchmarks, the study framework, plotting, the command);
plotting, which draws what the core computed and never runs a simulation (no engine, no
kernels); the command (``metastab.cli``, and ``metastab.__main__`` that runs it), which may import
anything and which nothing imports. Inside the engine, only ``metastab.engine.backends`` imports
the kernels' targets (``metastab.kernels.cpu``, ``metastab.kernels.cuda``): the rest of the engine
reaches the kernels through the backend.
Imports by name at run time (``importlib``: the registry's targets, the lazy names of
``metastab/__init__.py``) are not edges of this graph.
"""

import ast
import copy
from pathlib import Path

import pytest

import metastab

PACKAGE = Path(metastab.__file__).parent

# (who, what it must not import, why): module-name prefixes
CORE = (
    "metastab.models",
    "metastab.setups",
    "metastab.events",
    "metastab.registry",
    "metastab.engine",
    "metastab.results",
    "metastab.stats",
    "metastab.theory",
    "metastab.rng",
    "metastab._validate",
    "metastab._optional",
    "metastab.exceptions",
    "metastab.maxmargin",
)
ABOVE_CORE = (
    "metastab.cli",
    "metastab.sweep",
    "metastab.bench",
    "metastab.studies",
    "metastab.plotting",
)
COMMAND = ("metastab.cli", "metastab.__main__")  # __main__: python -m metastab
TARGETS = ("metastab.kernels.cpu", "metastab.kernels.cuda")
BACKENDS = "metastab.engine.backends"
RULES = (
    (CORE, ABOVE_CORE, "the core never imports what is built on it"),
    (("metastab.plotting",), ("metastab.engine", "metastab.kernels"), "plotting never runs"),
    (("metastab",), COMMAND, "nothing but the command imports the command"),
    (("metastab.engine",), TARGETS, "the engine reaches the kernels through its backends"),
)
# (who, the modules of ``who`` that a rule leaves out): the one importer of the kernels' targets
EXEMPT = {"the engine reaches the kernels through its backends": (BACKENDS,)}


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(name: str, source: str, modules: set[str], package: bool = False) -> set[str]:
    """The modules of ``modules`` that the module ``name`` (a package's ``__init__`` when
    ``package``) imports anywhere in ``source``: ``from X import a`` is an edge to ``X.a`` when
    that is a module, else to ``X``; relative imports are resolved."""
    here = name.split(".") if package else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target.split(".")[0] != "metastab":
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in modules else target)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "metastab"}
    found.discard(name)
    return found


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the modules of the package it imports."""
    files = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    return {
        name: imports(name, path.read_text(), set(files), path.name == "__init__.py")
        for name, path in files.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def violations(graph: dict[str, set[str]]) -> list[str]:
    """'module -> import: why' for every import that crosses a layer the wrong way."""
    found = []
    for name, targets in sorted(graph.items()):
        for target in sorted(targets):
            if _within(name, ("metastab.kernels",)) and not _within(target, ("metastab.kernels",)):
                found.append(f"{name} -> {target}: the kernels import only the kernels")
            for who, forbidden, why in RULES:
                mine = _within(name, who) and not _within(name, (*forbidden, *EXEMPT.get(why, ())))
                if mine and _within(target, forbidden):
                    found.append(f"{name} -> {target}: {why}")
    return found


GRAPH = import_graph()


def test_every_import_of_the_package_is_one_of_its_modules():
    """The graph is whole: each edge ends at a module file (a typo in a relative import, or a
    module that moved, would drop out of the checks below)."""
    assert len(GRAPH) > 80
    missing = sorted(f"{m} -> {t}" for m, ts in GRAPH.items() for t in ts if t not in GRAPH)
    assert not missing, missing


def test_no_import_cycles():
    assert not cycles(GRAPH), cycles(GRAPH)


def test_each_layer_imports_only_the_layers_below_it():
    assert not violations(GRAPH), "\n".join(violations(GRAPH))


def test_function_level_imports_are_edges():
    source = "import numpy\n\ndef f():\n    from .engine import simulate\n    import metastab.cli\n"
    modules = {"metastab.engine", "metastab.cli", "metastab.plotting"}
    assert imports("metastab.plotting", source, modules) == {"metastab.engine", "metastab.cli"}
    source = (
        "from . import api\nfrom .. import __version__\nfrom ..kernels.cpu import euclidean_steps\n"
    )
    modules = {"metastab.engine.api", "metastab.kernels.cpu.euclidean_steps", "metastab"}
    assert imports("metastab.engine", source, modules, package=True) == {
        "metastab.engine.api",
        "metastab",
        "metastab.kernels.cpu.euclidean_steps",
    }


@pytest.mark.parametrize(
    "edge, words",
    [
        (("metastab.engine.api", "metastab.cli.command"), "the core never imports"),
        (("metastab.results.io", "metastab.plotting"), "the core never imports"),
        (("metastab.stats.rates", "metastab.studies.verdict"), "the core never imports"),
        (("metastab.plotting", "metastab.engine"), "plotting never runs"),
        (("metastab.kernels.cpu.euclidean_steps", "metastab.models"), "the kernels import only"),
        (("metastab.sweep.driver", "metastab.cli"), "nothing but the command"),
        (
            ("metastab.engine.chains", "metastab.kernels.cpu.euclidean_steps"),
            "through its backends",
        ),
        (("metastab.engine.ams_hill", "metastab.kernels.cpu"), "through its backends"),
        (("metastab.engine.api", "metastab.kernels.cuda.drivers"), "through its backends"),
    ],
)
def test_a_planted_violation_is_caught(edge, words):
    """Negative control: one import added the wrong way across a layer fails the check."""
    graph = copy.deepcopy(GRAPH)
    graph[edge[0]].add(edge[1])
    assert any(words in v for v in violations(graph)), edge


def test_a_planted_cycle_is_caught():
    """Negative control: an import that closes a loop (results.io -> engine.api, which imports
    results.io) is reported with the modules on it; a loop of three is one component."""
    graph = copy.deepcopy(GRAPH)
    graph["metastab.results.io"].add("metastab.engine.api")
    assert any({"metastab.engine.api", "metastab.results.io"} <= set(c) for c in cycles(graph))
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_only_the_backends_import_the_kernels_targets_in_the_engine():
    """The backends do import the kernels' targets (so the rule has something to leave out), and
    the kernels' shared modules (parameters, streams) stay open to the whole engine."""
    assert any(_within(t, TARGETS) for t in GRAPH[BACKENDS])
    graph = copy.deepcopy(GRAPH)
    graph["metastab.engine.api"] |= {"metastab.kernels.params", "metastab.kernels.streams"}
    assert not violations(graph)
