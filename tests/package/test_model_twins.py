"""Every model has all its parts: a registry kind, a place among the engine's models, a kind code,
its CPU step kernel (called by the CPU driver), the plain-Python reference twin (compared in the
kernel tests), the CUDA twin (called by the device driver), and an entry in the model matrix of
tests/conftest.py. A model missing one of them is reported with what is missing, pointing to the
checklist docs/developer/adding-a-model.md.

The kernels are read from their source files (the CUDA files are parsed, never imported), so the
check runs on any machine.
"""

import ast
import inspect
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar

import pytest

import metastab
from metastab import models
from metastab.engine.chains import MODEL_TYPES
from metastab.kernels import params
from metastab.registry import MODELS

KERNELS = Path(metastab.__file__).parent / "kernels"
TESTS = Path(__file__).resolve().parents[1]
CHECKLIST = "docs/developer/adding-a-model.md"


@dataclass(frozen=True)
class Twins:
    """A model's step in each implementation, as ``file:function`` under metastab/kernels/, and
    the files that must call the CPU step (its family's stepper) and the CUDA step (the
    driver). ``cuda`` None: a model whose device kernel is still to be written, which the
    device drivers must then not list (their ``MODEL_NAMES``: the CUDA backend refuses it)."""

    cpu: str
    reference: str
    cuda: str | None
    cpu_driver: str
    cuda_driver: str = "cuda/drivers.py"


# by the name of the model's kind code in metastab.kernels.params
TWINS = {
    "CHAIN": Twins(
        "cpu/euclidean_steps.py:chain_step",
        "reference/euclidean.py:chain_step",
        "cuda/euclidean_steps.py:chain_pick",
        "cpu/euclidean_family.py",
    ),
    "FLOW": Twins(
        "cpu/euclidean_steps.py:softmax_flow_step",
        "reference/euclidean.py:softmax_flow_step",
        "cuda/euclidean_steps.py:flow_target",
        "cpu/euclidean_family.py",
    ),
    "HARDMAX": Twins(
        "cpu/euclidean_steps.py:hardmax_step",
        "reference/euclidean.py:hardmax_step",
        "cuda/euclidean_steps.py:hardmax_target",
        "cpu/euclidean_family.py",
    ),
    "LOCALMAX": Twins(
        "cpu/euclidean_steps.py:localmax_step",
        "reference/euclidean.py:localmax_step",
        "cuda/euclidean_steps.py:localmax_target",
        "cpu/euclidean_family.py",
    ),
    "SPHERE_FLOW": Twins(
        "cpu/sphere_steps.py:_velocity",  # every scheme's step goes through it
        "reference/sphere.py:sphere_flow_step",
        "cuda/sphere_steps.py:sphere_flow_step",
        "cpu/sphere_steps.py",
    ),
    "SPHERE_CHAIN": Twins(
        "cpu/sphere_steps.py:chain_step",
        "reference/sphere.py:chain_step",
        "cuda/sphere_steps.py:chain_move",
        "cpu/sphere_family.py",
    ),
    "NOISY_SPHERE": Twins(
        "cpu/noisy_steps.py:_noisy",
        "reference/sphere.py:noisy_step",
        "cuda/noisy_steps.py:noisy_step",
        "cpu/sphere_family.py",
    ),
}


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text()) if path.exists() else ast.Module(body=[], type_ignores=[])


def defines(file: str, name: str, root: Path = KERNELS) -> bool:
    """Whether ``root/file`` defines the function ``name`` at module level."""
    return any(
        isinstance(node, ast.FunctionDef) and node.name == name for node in _tree(root / file).body
    )


def calls(file: str, name: str, root: Path = KERNELS) -> bool:
    """Whether ``root/file`` calls ``name`` (by its bare name) anywhere."""
    return any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name
        for node in ast.walk(_tree(root / file))
    )


def lists_code(file: str, code: str, root: Path = KERNELS) -> bool:
    """Whether ``root/file`` names the kind code ``code`` as a key of its ``MODEL_NAMES``."""
    for node in ast.walk(_tree(root / file)):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "MODEL_NAMES" for t in node.targets
        ):
            if isinstance(node.value, ast.Dict):
                return any(isinstance(k, ast.Name) and k.id == code for k in node.value.keys)
    return False


def reference_calls(folder: Path = TESTS / "kernels") -> set[str]:
    """``file:function`` of every reference function the kernel tests call as ``alias.function``
    after ``from metastab.kernels.reference import module as alias``."""
    found = set()
    for path in sorted(folder.glob("test_*.py")):
        tree = _tree(path)
        aliases = {
            a.asname or a.name: f"reference/{a.name}.py"
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "metastab.kernels.reference"
            for a in node.names
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id in aliases
            ):
                found.add(f"{aliases[node.func.value.id]}:{node.func.attr}")
    return found


def all_models() -> set[type]:
    """Every model class anywhere: the engine's, the registry's and the public ones."""
    public = {
        obj
        for obj in vars(models).values()
        if inspect.isclass(obj) and isinstance(getattr(obj, "code", None), int)
    }
    return set(MODEL_TYPES) | {MODELS[name].make for name in MODELS} | public


def problems(
    candidates: set[type],
    twins: dict[str, Twins],
    matrix: dict,
    engine_types: tuple = MODEL_TYPES,
    registry=MODELS,
    compared: set[str] | None = None,
) -> list[str]:
    """What each model of ``candidates`` lacks, one line per missing part."""
    compared = reference_calls() if compared is None else compared
    codes = {
        value: name
        for name, value in vars(params).items()
        if name.isupper() and isinstance(value, int) and name in twins
    }
    found = []
    for cls in sorted(candidates, key=lambda c: c.__name__):
        who = cls.__name__
        kind = getattr(cls, "kind", None)
        if kind not in registry or registry[kind].make is not cls:
            found.append(f"{who}: no kind {kind!r} in metastab.registry.MODELS naming it")
        if cls not in engine_types:
            found.append(f"{who}: not in metastab.engine.chains.MODEL_TYPES")
        if not any(type(case.model) is cls for case in matrix.values()):
            found.append(f"{who}: no cheap instance in MODEL_CASES of tests/conftest.py")
        code = codes.get(getattr(cls, "code", None))
        if code is None:
            found.append(f"{who}: its code {getattr(cls, 'code', None)!r} has no kernel twins")
            continue
        t = twins[code]
        if t.cuda is None and lists_code(t.cuda_driver, code):
            found.append(
                f"{who}: metastab/kernels/{t.cuda_driver} runs it, but no CUDA step is named"
            )
        steps = [("CPU", t.cpu), ("reference", t.reference), ("CUDA", t.cuda)]
        for role, spec in steps:
            if spec is None:
                continue
            file, name = spec.split(":")
            if not defines(file, name):
                found.append(f"{who}: no {role} step, metastab/kernels/{file} defines no {name}")
        for driver, spec in ((t.cpu_driver, t.cpu), (t.cuda_driver, t.cuda)):
            if spec is None:
                continue
            name = spec.split(":")[1]
            if not calls(driver, name):
                found.append(f"{who}: metastab/kernels/{driver} never calls {name}")
        if t.reference not in compared:
            found.append(f"{who}: no test in tests/kernels/ compares {t.reference}")
    return found


def report(found: list[str]) -> str:
    return "\n".join(found) + f"\nsee {CHECKLIST} for every place a model touches"


def test_every_model_has_its_kernels_registry_entry_and_matrix_case(model_cases):
    found = problems(all_models(), TWINS, model_cases)
    assert not found, report(found)


def test_the_model_matrix_and_the_registry_list_the_same_kinds(model_cases):
    assert list(model_cases) == list(MODELS)
    assert {type(case.model) for case in model_cases.values()} == set(MODEL_TYPES)


def test_the_checklist_exists():
    assert (TESTS.parent / CHECKLIST).is_file()


# ------------------------------------------------------------------ negative controls


@dataclass(frozen=True)
class Planted:
    """A model spec with a kind code of its own and nothing else."""

    kind: ClassVar[str] = "planted"
    code: ClassVar[int] = 99


def test_a_model_without_its_parts_is_reported(model_cases):
    found = problems(all_models() | {Planted}, TWINS, model_cases)
    mine = [line for line in found if line.startswith("Planted:")]
    assert len(mine) == 4, found
    for words in ("metastab.registry.MODELS", "MODEL_TYPES", "MODEL_CASES", "no kernel twins"):
        assert any(words in line for line in mine), (words, mine)
    assert CHECKLIST in report(found)


@pytest.mark.parametrize(
    "change, words",
    [
        (
            {"cuda": "cuda/euclidean_steps.py:planted_target"},
            "no CUDA step, metastab/kernels/cuda/euclidean_steps.py",
        ),
        ({"reference": "reference/euclidean.py:gone"}, "no reference step"),
        ({"cpu": "cpu/planted.py:chain_step"}, "no CPU step"),
        ({"cpu_driver": "cpu/events.py"}, "cpu/events.py never calls chain_step"),
        ({"cuda_driver": "cuda/events.py"}, "cuda/events.py never calls chain_pick"),
        ({"reference": "reference/euclidean.py:move"}, "no test in tests/kernels/ compares"),
    ],
)
def test_a_missing_twin_is_reported(model_cases, change, words):
    twins = {**TWINS, "CHAIN": replace(TWINS["CHAIN"], **change)}
    found = problems(all_models(), twins, model_cases)
    assert any(line.startswith("SoftmaxChain:") and words in line for line in found), found


def test_a_model_the_device_runs_without_a_named_cuda_step_is_reported(model_cases):
    twins = {**TWINS, "SPHERE_FLOW": replace(TWINS["SPHERE_FLOW"], cuda=None)}
    found = problems(all_models(), twins, model_cases)
    assert any(line.startswith("SphereFlow:") and "no CUDA step is named" in line for line in found)
    assert lists_code("cuda/drivers.py", "SPHERE_FLOW")


def test_a_model_left_out_of_the_engine_registry_or_matrix_is_reported(model_cases):
    matrix = {k: v for k, v in model_cases.items() if k != "localmax"}
    engine = tuple(t for t in MODEL_TYPES if t is not models.Localmax)
    found = problems(all_models(), TWINS, matrix, engine_types=engine, registry={})
    assert sum(line.startswith("Localmax:") for line in found) == 3, found
    assert sum("metastab.registry.MODELS" in line for line in found) == len(MODEL_TYPES)
