"""Every public function and method of the package (outside metastab/kernels/, whose signatures
numba types) states the types of its parameters and of its result."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "metastab"


def _unannotated(fn: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> list[str]:
    args = fn.args
    params = args.posonlyargs + args.args + args.kwonlyargs
    if method and params and params[0].arg in ("self", "cls"):
        params = params[1:]
    missing = [p.arg for p in params if p.annotation is None]
    missing += [f"*{p.arg}" for p in (args.vararg,) if p is not None and p.annotation is None]
    missing += [f"**{p.arg}" for p in (args.kwarg,) if p is not None and p.annotation is None]
    if fn.returns is None and fn.name != "__init__":
        missing.append("return")
    return missing


def unannotated_public(source: str, where: str) -> list[str]:
    """'where:line name [missing]' for each public function or method of ``source`` (names
    without a leading underscore, in public classes) that lacks an annotation."""
    found = []

    def visit(node: ast.AST, method: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if not child.name.startswith("_") and (gaps := _unannotated(child, method)):
                    found.append(f"{where}:{child.lineno} {child.name} {gaps}")
            elif isinstance(child, ast.ClassDef) and not child.name.startswith("_"):
                visit(child, True)

    visit(ast.parse(source), False)
    return found


def test_public_functions_are_annotated():
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] == "kernels":
            continue  # numba code, typed by numba at compile time
        if path.name.startswith("_") and path.name not in ("__init__.py", "__main__.py"):
            continue  # a private module
        problems += unannotated_public(path.read_text(), f"metastab/{rel}")
    assert not problems, "public functions without annotations:\n" + "\n".join(problems)


def test_the_check_sees_a_missing_annotation():
    """Negative control: each kind of gap is reported, private names are not."""
    source = (
        "def f(x: int, y) -> int: ...\n"
        "def g(x: int): ...\n"
        "def h(*args, **kw: int) -> None: ...\n"
        "def _private(x): ...\n"
        "class C:\n"
        "    def m(self, x) -> None: ...\n"
        "    def __init__(self, y: int): ...\n"
        "class _Hidden:\n"
        "    def m(self, x): ...\n"
    )
    assert unannotated_public(source, "t.py") == [
        "t.py:1 f ['y']",
        "t.py:2 g ['return']",
        "t.py:3 h ['*args']",
        "t.py:6 m ['x']",
    ]
