"""The GPU kernels compiled for real GPUs without one (metastab.bench.cuda_compile).

The launch signatures need numba-cuda only; the compiling tests need libNVVM and ptxas (the
``cuda`` extra) and are skipped without them. The whole table, every kernel for sm_80 and sm_90,
is ``metastab bench --device cuda --compile-only``, which ``.ci/run`` runs.
"""

import importlib.util
import re
import sys
import types

import pytest
from cli_calls import run

from metastab import _optional
from metastab.bench import cuda_compile as cc

pytest.importorskip("numba.cuda", reason="numba-cuda is missing: pip install 'metastab[cuda]'")


def _toolchain() -> None:
    try:
        cc.ptxas_path()
        cc._probe((8, 0))
    except cc.ToolchainMissing as exc:
        pytest.skip(str(exc))


def test_one_kernel_per_model_and_event_each_with_one_signature():
    """Every model kind and device event has its kernel, with one chain per block and with
    several, launched with one signature (each compiles once per run), and the compile-only
    table covers every launch; LEAVE_HULL runs the model's kernel without event, then the hull
    kernel, which no step kernel inlines."""
    from metastab.kernels import params as K
    from metastab.kernels.cuda import drivers

    found = cc.launches()
    kinds = (K.CHAIN, K.FLOW, K.HARDMAX, K.LOCALMAX, K.SPHERE_FLOW, K.SPHERE_CHAIN,
             K.NOISY_SPHERE)  # fmt: skip
    codes = (K.NO_EVENT, K.LEAVE_BALL, K.REACH, K.COLLAPSE)
    names = [drivers.kernel_name(k, c, p) for k in kinds for c in codes for p in (False, True)]
    names.append(drivers.HULL_NAME)
    # the order parameters' events: the sphere models only
    orders = (K.LEAVE_UNIFORM_1, K.LEAVE_UNIFORM_2, K.REACH_UNIFORM_1, K.REACH_UNIFORM_2)
    sphere = (K.SPHERE_FLOW, K.SPHERE_CHAIN)
    names += [drivers.kernel_name(k, c, p) for k in sphere for c in orders for p in (False, True)]
    assert sorted(found) == sorted(names)
    with pytest.raises(ValueError, match="LEAVE_HULL"):
        drivers.kernel_for(K.CHAIN, K.LEAVE_HULL)
    for name, (kernel, sig) in found.items():
        assert len(sig) == kernel.py_func.__code__.co_argcount, name
    # a kernel per (kind, event): the same object for the same pair, another for another
    assert drivers.kernel_for(K.CHAIN, K.NO_EVENT) is drivers.kernel_for(K.CHAIN, K.NO_EVENT)
    assert drivers.kernel_for(K.CHAIN, K.NO_EVENT) is not drivers.kernel_for(K.FLOW, K.NO_EVENT)
    assert drivers.kernel_for(K.CHAIN, K.NO_EVENT) is not drivers.kernel_for(
        K.CHAIN, K.NO_EVENT, True
    )


def test_ptxas_fusable_counts_plain_products_feeding_sums():
    ptx = "\n".join(
        [
            "mul.f64 %fd3, %fd1, %fd2;",  # feeds the add: fusable
            "add.f64 %fd4, %fd0, %fd3;",
            "mul.f64 %fd5, %fd1, %fd2;",  # feeds a division only
            "div.rn.f64 %fd6, %fd5, %fd0;",
            "mul.rn.f64 %fd7, %fd1, %fd2;",  # rounded as written
            "sub.f64 %fd8, %fd7, %fd0;",
        ]
    )
    assert cc.ptxas_fusable(ptx) == 1


def test_the_device_arithmetic_never_fuses_and_the_plain_one_does():
    """mul() stays mul.rn.f64 next to a sum, with contraction allowed; the plain product is
    contracted by NVVM (the negative control of the count)."""
    _toolchain()
    from numba import types

    from metastab.kernels.cuda.arith import fma, mul

    def rounded(x):
        x[0] = mul(x[1], x[2]) + x[3]

    def plain(x):
        x[0] = x[1] * x[2] + x[3]

    def fused(x):
        x[0] = fma(x[1], x[2], x[3])

    sig = (types.Array(types.float64, 1, "C"),)
    fmas = {}
    for f in (rounded, plain, fused):
        ptx = cc._ptx(f, sig, (9, 0), True)
        fmas[f.__name__] = len(re.findall(r"\bfma\.rn\.f64", ptx))
        assert cc.ptxas_fusable(ptx) == 0
        if f is rounded:
            assert re.search(r"\bmul\.rn\.f64", ptx)
    assert fmas == {"rounded": 0, "plain": 1, "fused": 1}
    # with contraction forbidden NVVM rounds the plain product as written, as mul() does
    forbidden = cc._ptx(plain, sig, (9, 0), False)
    assert not re.search(r"\bfma\.rn\.f64", forbidden) and re.search(r"\bmul\.rn\.f64", forbidden)


def test_failures_name_each_problem():
    row = dict.fromkeys(cc.COLUMNS, "")
    good = dict(row, kernel="k", arch="sm_90", compiled=True, implicit_fma=0, shared_bytes=16)
    assert cc.failures([good]) == []
    bad = [
        dict(good, implicit_fma=3),
        dict(good, shared_bytes=4096),
        dict(good, compiled=False, error="NvvmError: x"),
    ]
    found = cc.failures(bad)
    assert len(found) == 3
    assert "3 implicit fma" in found[0]
    assert "4096 B of static shared memory" in found[1]
    assert "not compiled (NvvmError: x)" in found[2]


def _no_toolkit(monkeypatch, tmp_path):
    """This process as on a machine without the CUDA toolkit: no ``nvidia`` wheels (a namespace
    without a path, where ``find_spec`` of a child raises) and no ptxas on PATH."""
    monkeypatch.setitem(sys.modules, "nvidia", types.ModuleType("nvidia"))
    monkeypatch.setenv("PATH", str(tmp_path))


def test_probes_say_absent_where_a_parent_package_is_missing(monkeypatch, tmp_path):
    _no_toolkit(monkeypatch, tmp_path)
    # the negative control: importlib's own probe raises here
    with pytest.raises(ModuleNotFoundError):
        importlib.util.find_spec("nvidia.cuda_nvcc")
    with pytest.raises(ModuleNotFoundError):
        importlib.util.find_spec("metastab_no_such_parent.child")
    assert _optional.module_spec("nvidia.cuda_nvcc") is None
    assert not _optional.installed("metastab_no_such_parent.child")
    assert _optional.installed("numpy") and _optional.installed("numpy.linalg")
    with pytest.raises(cc.ToolchainMissing, match=r"pip install 'metastab\[cuda\]'"):
        cc.ptxas_path()


def test_compile_only_without_the_toolkit_exits_in_one_line(monkeypatch, tmp_path, capsys):
    _no_toolkit(monkeypatch, tmp_path)
    code, out, err = run(
        capsys, "bench", "--device", "cuda", "--compile-only", "--out", str(tmp_path / "k")
    )
    assert code != 0
    assert len(err.strip().splitlines()) == 1 and "pip install 'metastab[cuda]'" in err
    assert "Traceback" not in err + out
