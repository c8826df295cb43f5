"""``metastab bench``: throughput of SA_P against NumPy, ``--sizes`` and ``--escape``."""

from __future__ import annotations

import argparse
import math

from . import output
from .exits import PROG, UsageError
from .parser import add_common, examples, whole

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The ``bench`` sub-parser."""
    bench = sub.add_parser(
        "bench",
        help="token-steps/s of SA_P: numba vs NumPy (--escape: "
        "seconds per escape, exact vs accelerated)",
        description="Throughput of SA_P on workload W1, numba kernels beside "
        "a vectorised NumPy chain; target ratio >= 12. With --escape: seconds "
        "per observed escape of first_passage in exact and in accelerated "
        "mode, and their ratio, at a few betas.",
        epilog=examples(
            "metastab bench",
            "metastab bench --threads 1",
            "metastab bench --escape --beta 8 10",
            "metastab bench --device cuda",
            "metastab bench --device cuda --check --out gpu-check",
            "metastab bench --device cuda --compile-only --out gpu-kernels",
            "metastab bench --workload phase-diagram",
            "metastab bench --workload ams-ou",
            "metastab bench --workload ams-noisy",
            "metastab bench --cold",
            "metastab bench --compile-times demo",
        ),
    )
    bench.add_argument(
        "--workload",
        choices=("w1", "phase-diagram", "noisy", "schemes", "ams-ou", "ams-noisy"),
        default="w1",
        help="w1: SA_P on the pentagon (default); phase-diagram: the sphere flow, post-LN, "
        "n=32, d in {2, 32, 128}, beside batched NumPy (metastab.bench.phase_diagram); noisy: "
        "the noisy sphere model's step beside post-LN's (metastab.bench.noisy); schemes: each "
        "normalisation scheme's step beside post-LN's (metastab.bench.schemes); ams-ou: AMS on "
        "the Ornstein-Uhlenbeck chain beside pyTAMS, CPU at equal relative error "
        "(metastab.bench.ams); ams-noisy: the noisy sphere's escape from the uniform state by "
        "AMS beside direct simulation, CPU at equal relative error (metastab.bench.ams_noisy)",
    )
    bench.add_argument(
        "--chains",
        type=whole,
        default=None,
        help="default 2048 (--escape: 60 per beta and mode; ams-ou: the pyTAMS runs, 2; "
        "ams-noisy: the direct chains, 100)",
    )
    bench.add_argument("--steps", type=whole, default=None, help="default 500 (phase-diagram: 30)")
    bench.add_argument("--repeat", type=whole, default=3, help="best of REPEAT (default 3)")
    bench.add_argument(
        "--sizes",
        action="store_true",
        help="table from n=20 to n=1024, d=64 beside NumPy, with the measured FMA "
        "peak (metastab.bench.sizes_bench)",
    )
    bench.add_argument(
        "--cold",
        action="store_true",
        help="CPU seconds of the first use of each model and of the demo in a fresh process "
        "with an empty numba cache, beside a warm rerun (metastab.bench.cold)",
    )
    bench.add_argument(
        "--compile-times",
        metavar="CASE",
        help="where the compiling of one --cold case goes (e.g. demo, softmax-chain): the CPU "
        "seconds of each function's own compilation, from numba's compile events, in a fresh "
        "process with an empty cache (metastab.bench.cold.compile_times)",
    )
    bench.add_argument(
        "--escape",
        action="store_true",
        help="seconds per escape, exact against accelerated mode "
        "(metastab.bench.escape_bench) instead of the throughput",
    )
    bench.add_argument(
        "--beta",
        type=float,
        nargs="+",
        metavar="BETA",
        help="--escape: the betas (default 8 10 12)",
    )
    bench.add_argument(
        "--exact-factor",
        type=float,
        default=10.0,
        help="--escape: exact-mode budget in units of the accelerated mean (default 10)",
    )
    bench.add_argument(
        "--device",
        choices=("cpu", "cuda"),
        default="cpu",
        help="cuda: SA_P and the phase-diagram flow on the GPU beside torch on the same GPU and "
        "metastab's CPU figure, with the fraction of the float64 flop bound "
        "(metastab.bench.cuda_check.cuda_bench)",
    )
    bench.add_argument(
        "--check",
        action="store_true",
        help="--device cuda: the whole GPU check (device tests, escape-time laws against the "
        "CPU, the bench), written to --out DIR (metastab.bench.cuda_check.check)",
    )
    bench.add_argument(
        "--compile-only",
        action="store_true",
        help="--device cuda, no GPU needed: compile every kernel the backend can launch for "
        "sm_80 and sm_90 (NVVM, ptxas) and write DIR/kernels.csv: registers, spills, shared "
        "memory, implicit fma; exits 1 if a kernel fails to compile, has an implicit fma or "
        "too much static shared memory (metastab.bench.cuda_compile)",
    )
    bench.add_argument(
        "--out",
        metavar="DIR",
        help="--check / --compile-only: the folder for its files (default gpu-check / gpu-kernels)",
    )
    bench.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="--device cuda: multiply the bench's chains and steps (default 1; 0.01 for a "
        "quick look)",
    )
    bench.add_argument(
        "--no-jax",
        action="store_true",
        help="W1 and phase-diagram: leave out the JAX baseline even where JAX is installed",
    )
    add_common(bench)
    bench.set_defaults(handler=run)


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """Run ``metastab bench``; returns the exit status. With progress, the benches that draw no
    bar (phase-diagram, --sizes) say so too before they compile."""
    from ..engine.progress import compile_notice

    with compile_notice(output.progress(args)):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from ..bench.chains import host_cpu, run_bench

    if args.device == "cuda":
        return _cuda_bench(args)
    for flag in ("check", "compile_only", "out"):
        if getattr(args, flag) not in (None, False):
            flag = flag.replace("_", "-")
            raise UsageError(f"{flag}: --{flag} applies to bench --device cuda only")
    if args.scale != 1.0:
        raise UsageError("scale: --scale applies to bench --device cuda only")
    if args.cold or args.compile_times is not None:
        return _cold_bench(args)
    if args.workload == "phase-diagram":
        return _phase_diagram_bench(args)
    if args.workload == "noisy":
        return _noisy_bench(args)
    if args.workload == "schemes":
        return _schemes_bench(args)
    if args.workload == "ams-ou":
        return _ams_ou_bench(args)
    if args.workload == "ams-noisy":
        return _ams_noisy_bench(args)
    if args.no_jax and (args.escape or args.sizes):
        raise UsageError("no-jax: --no-jax applies to the W1 and phase-diagram benches only")
    if args.steps is None:
        args.steps = 500
    if args.escape:
        return _escape_bench(args)
    if args.sizes:
        return _sizes_bench(args)
    if args.beta is not None:
        raise UsageError("beta: --beta applies to bench --escape only")
    chains = 2048 if args.chains is None else args.chains
    print(
        f"{PROG} bench: SA_P on workload W1 (regular pentagon on the unit circle + 15 interior "
        f"tokens, n=20, d=2, beta=20, gamma=0.1)",
        flush=True,
    )
    r = run_bench(
        chains=chains,
        steps=args.steps,
        repeat=args.repeat,
        progress=output.progress(args),
        jax=False if args.no_jax else None,
    )
    print(
        f"{r['chains']} chains x {r['steps']} steps, best of {r['repeat']}, "
        f"numba threads {r['threads']}, CPU {host_cpu()}"
    )
    print(
        f"numba (metastab.simulate)   {r['numba_rate'] / 1e6:8.2f} M token-steps/s"
        f"  ({r['numba_seconds']:.3f} s)"
    )
    print(
        f"numpy (vectorised, 1 thread){r['numpy_rate'] / 1e6:8.2f} M token-steps/s"
        f"  ({r['numpy_seconds']:.3f} s)"
    )
    print(f"ratio {r['ratio']:.2f}x  (target {_verdict(r['ratio'], r['target'], 'x')})")
    if r["jax_rate"] is None:
        why = "--no-jax" if args.no_jax else "not installed; pip install 'metastab[bench]' adds it"
        print(f"jax: not run ({why})")
    else:
        print(
            f"jax (jit, float64)          {r['jax_rate'] / 1e6:8.2f} M token-steps/s"
            f"  ({r['jax_seconds']:.3f} s)"
        )
        target = _verdict(r["jax_ratio"], r["jax_target"], "x")
        print(f"ratio to jax {r['jax_ratio']:.2f}x  (target {target})")
    return 0


def _cuda_bench(args: argparse.Namespace) -> int:
    """``metastab bench --device cuda [--check]``: the GPU table, or the whole check to files."""
    from ..bench.cuda_check import PEAK_FLOPS, WORKLOADS, check, cuda_bench, device_name, table
    from ..engine.backends import resolve

    if args.escape or args.sizes or args.no_jax:
        raise UsageError("device: --device cuda takes none of --escape, --sizes, --no-jax")
    for flag in ("chains", "steps", "beta"):
        if getattr(args, flag) is not None:
            raise UsageError(
                f"{flag}: --device cuda runs the issue's workloads as they are (--scale shrinks "
                f"them), not --{flag}"
            )
    if not (math.isfinite(args.scale) and 0 < args.scale <= 1):
        raise UsageError(f"scale must be in (0, 1], got {args.scale!r}")
    if args.out is not None and not (args.check or args.compile_only):
        raise UsageError("out: --out applies to bench --device cuda --check or --compile-only")
    if args.compile_only:
        return _compile_only(args)
    resolve("cuda")  # one line when there is no GPU
    if args.check:
        out = args.out or "gpu-check"
        if args.workload != "w1":
            raise UsageError("workload: --check runs every workload; drop --workload")
        print(f"{PROG} bench --device cuda --check: {device_name()}; files in {out}/", flush=True)
        ok = check(out, scale=args.scale, repeat=args.repeat)
        with open(f"{out}/summary.md") as fh:
            print(fh.read())
        print(f"check {'passed' if ok else 'FAILED'} ({out}/)")
        return 0 if ok else 1
    print(
        f"{PROG} bench --device cuda: SA_P and the phase-diagram flow, float64, token-steps/s "
        f"on {device_name()}, best of {args.repeat}; flop bound at {PEAK_FLOPS:.3g} flop/s",
        flush=True,
    )
    loads = WORKLOADS
    if args.workload == "phase-diagram":
        loads = tuple(w for w in WORKLOADS if w[0] == "phase-diagram")
    print(table(cuda_bench(loads, scale=args.scale, repeat=args.repeat)))
    return 0


def _compile_only(args: argparse.Namespace) -> int:
    """``metastab bench --device cuda --compile-only``: the kernels compiled for real GPUs,
    one row each as it is measured, and DIR/kernels.csv."""
    from pathlib import Path

    from ..bench.cuda_compile import (
        ARCHS,
        COLUMNS,
        REGISTER_TARGET,
        SAP_KERNEL,
        SAP_TARGET,
        ToolchainMissing,
        compile_kernels,
        failures,
        write_csv,
    )

    if args.check or args.workload != "w1" or args.scale != 1.0 or args.repeat != 3:
        raise UsageError("compile-only: --compile-only takes only --out (it times nothing)")
    out = Path(args.out or "gpu-kernels")
    out.mkdir(parents=True, exist_ok=True)
    archs = ", ".join(f"sm_{a}{b}" for a, b in ARCHS)
    print(f"{PROG} bench --device cuda --compile-only: every launchable kernel for {archs}, "
          "with NVVM and ptxas (no GPU needed)", flush=True)  # fmt: skip
    shown: list[output.Rows] = []  # the table's header once the toolchain compiles
    try:
        rows = compile_kernels(
            on_start=lambda: shown.append(output.Rows([c for c in COLUMNS if c != "error"])),
            on_row=lambda row: shown[0](row),
        )
    except ToolchainMissing as exc:
        raise UsageError(f"compile-only: {exc}") from exc
    write_csv(rows, out / "kernels.csv")
    compiled = [r for r in rows if r["compiled"]]
    worst = max((r["registers"] for r in compiled), default=0)
    over = sum(r["registers"] > REGISTER_TARGET for r in compiled)
    spilled = sum(r["spill_bytes"] > 0 for r in compiled)
    print(
        f"registers per thread: at most {worst}; {over} of {len(compiled)} above "
        f"{REGISTER_TARGET} (target <= {REGISTER_TARGET}: {'met' if not over else 'NOT met'}); "
        f"{spilled} with spills"
    )
    sap = {r["arch"]: r["registers"] for r in compiled if r["kernel"] == SAP_KERNEL}
    met = bool(sap) and max(sap.values()) <= SAP_TARGET
    print(
        f"{SAP_KERNEL}: "
        + ", ".join(f"{v} on {k}" for k, v in sap.items())
        + f" (target <= {SAP_TARGET}: {'met' if met else 'NOT met'})"
    )
    problems = failures(rows)
    for line in problems:
        print(f"FAILED {line}")
    print(f"{out / 'kernels.csv'}: {len(rows)} rows, {'FAILED' if problems else 'all compiled'}")
    return 1 if problems else 0


def _phase_diagram_bench(args: argparse.Namespace) -> int:
    """``metastab bench --workload phase-diagram``: the sphere flow against batched NumPy, one
    row per d, printed as soon as it is measured."""
    import numba

    from ..bench.chains import host_cpu
    from ..bench.phase_diagram import PHASE_CHAINS, PHASE_STEPS, phase_diagram_bench

    for flag in ("escape", "sizes"):
        if getattr(args, flag):
            raise UsageError(f"{flag}: --{flag} does not apply to --workload phase-diagram")
    if args.beta is not None:
        raise UsageError("beta: --beta applies to bench --escape only")
    chains = PHASE_CHAINS if args.chains is None else args.chains
    steps = PHASE_STEPS if args.steps is None else args.steps
    print(
        f"{PROG} bench --workload phase-diagram: sphere flow, post-LN, n=32 i.i.d. uniform on "
        f"S^(d-1), beta=4, dt=0.1, B=V=I; {chains} realisations x {steps} steps, best of "
        f"{args.repeat} (alternating), numba threads {numba.get_num_threads()}, CPU {host_cpu()}",
        flush=True,
    )
    columns = ["d", "metastab_real_steps_s", "numpy_real_steps_s", "ratio", "target"]
    show = output.Rows(columns + ["jax_real_steps_s", "jax_ratio", "jax_target"])

    def on_row(row: dict) -> None:
        jax = row["jax_rate"] is not None
        show(
            {
                "d": row["d"],
                "metastab_real_steps_s": f"{row['metastab_rate']:.4g}",
                "numpy_real_steps_s": f"{row['numpy_rate']:.4g}",
                "ratio": f"{row['ratio']:.2f}x",
                "target": _verdict(row["ratio"], row["target"], "x"),
                "jax_real_steps_s": f"{row['jax_rate']:.4g}" if jax else "-",
                "jax_ratio": f"{row['jax_ratio']:.2f}x" if jax else "-",
                "jax_target": _verdict(row["jax_ratio"], row["jax_target"], "x") if jax else "-",
            }
        )
        for name in ("max_difference", "jax_difference"):
            if row[name] is not None and row[name] > 1e-9:
                raise RuntimeError(
                    f"metastab and the baseline disagree by {row[name]:.3g} at d={row['d']}"
                )

    phase_diagram_bench(
        chains=chains,
        steps=steps,
        repeat=args.repeat,
        on_row=on_row,
        jax=False if args.no_jax else None,
    )
    print(
        "real_steps_s = realisations x steps / best wall seconds; ratio = NumPy s / metastab s, "
        "jax_ratio = JAX s / metastab s (- : JAX not installed; pip install 'metastab[bench]')"
    )
    return 0


def _cold_bench(args: argparse.Namespace) -> int:
    """``metastab bench --cold``: cold and warm CPU seconds of each model's first use; with
    ``--compile-times CASE``, where one case's compiling goes."""
    from ..bench.cold import CASES, COLD_TARGET_S, DEMO_RATIO_TARGET, cold_bench

    mode = "--compile-times" if args.compile_times is not None else "--cold"
    taken = [f for f in ("escape", "sizes", "no_jax") if getattr(args, f)]
    taken += [f for f in ("chains", "steps", "beta") if getattr(args, f) is not None]
    if args.cold and args.compile_times is not None:
        taken.append("cold")
    if taken or args.workload != "w1" or args.repeat != 3:
        flag = (taken or ["workload" if args.workload != "w1" else "repeat"])[0]
        raise UsageError(f"{flag.replace('_', '-')}: {mode} takes no other bench option")
    if args.compile_times is not None:
        return _compile_times(args.compile_times)
    print(
        f"{PROG} bench --cold: CPU seconds (user + system, import included) of a first use in a "
        "fresh process with an empty numba cache (cold), then again with the cache it filled "
        "(warm)",
        flush=True,
    )
    width = max(map(len, CASES))
    print(f"{'case':{width}s}  cold_s  warm_s  ratio  target")

    def on_row(row: dict) -> None:
        if row["case"] == "demo":
            ok = row["ratio"] <= DEMO_RATIO_TARGET
            target = f"cold <= {DEMO_RATIO_TARGET:g}x warm " + ("met" if ok else "NOT met")
        else:
            ok = row["cold_s"] < COLD_TARGET_S
            target = f"cold < {COLD_TARGET_S:g} s " + ("met" if ok else "NOT met")
        print(
            f"{row['case']:{width}s}  {row['cold_s']:6.1f}  {row['warm_s']:6.2f}  "
            f"{row['ratio']:5.1f}  {target}",
            flush=True,
        )

    cold_bench(on_row=on_row)
    return 0


def _compile_times(case: str, top: int = 20) -> int:
    """``metastab bench --compile-times CASE``: the functions whose own compilation took the
    most CPU in a cold run of CASE, and the total."""
    from ..bench.cold import CASES, compile_times

    if case not in CASES:
        raise UsageError(f"compile-times: unknown case {case!r}; known: {', '.join(CASES)}")
    print(
        f"{PROG} bench --compile-times {case}: CPU seconds of each function's own compilation "
        "(those of its callees apart) in a fresh process with an empty numba cache",
        flush=True,
    )
    rows = compile_times(case)
    width = max([len(r["function"]) for r in rows[:top]] + [len("function")])
    print(f"{'function':{width}s}  compiles   own_s")
    for row in rows[:top]:
        print(f"{row['function']:{width}s}  {row['compiles']:8d}  {row['own_s']:6.2f}")
    rest = rows[top:]
    if rest:
        others = f"({len(rest)} other functions)"
        print(f"{others:{width}s}  {sum(r['compiles'] for r in rest):8d}  "
              f"{sum(r['own_s'] for r in rest):6.2f}")  # fmt: skip
    total = sum(r["own_s"] for r in rows)
    print(f"compiling in all: {total:.2f} s of CPU, {sum(r['compiles'] for r in rows)} compiles")
    return 0


def _verdict(value: float, target: float | None, unit: str) -> str:
    """'>= 10x met' / '>= 10x NOT met', or '-' without a target."""
    if target is None:
        return "-"
    return f">= {target:g}{unit} " + ("met" if value >= target else "NOT met")


def _noisy_bench(args: argparse.Namespace) -> int:
    """``metastab bench --workload noisy``: the noisy sphere model's step beside post-LN's."""
    from ..bench.chains import host_cpu
    from ..bench.noisy import noisy_bench

    chains = 256 if args.chains is None else args.chains
    steps = 200 if args.steps is None else args.steps
    r = noisy_bench(chains=chains, steps=steps, repeat=args.repeat)
    print(
        f"{PROG} bench --workload noisy: NoisySphere(1, K=1, dt=0.01) beside "
        f"SphereFlow(1, 0.01, attention='unnormalized') post-LN, {chains} chains x {steps} "
        f"steps; median of {r['repeat']}, numba threads {r['threads']}, CPU {host_cpu()}"
    )
    print("| n, d | noisy µs/chain-step | post-LN µs/chain-step | ratio | target |")
    print("|---|---|---|---|---|")
    for w in r["rows"]:
        print(
            f"| {w['n']}, {w['d']} | {1e6 * w['noisy_seconds']:.3g} | "
            f"{1e6 * w['flow_seconds']:.3g} | {w['ratio']:.2f} | "
            f"<= {w['target']:g}x {'met' if w['ratio'] <= w['target'] else 'NOT met'} |"
        )
    return 0


def _schemes_bench(args: argparse.Namespace) -> int:
    """``metastab bench --workload schemes``: each normalisation scheme's step beside post-LN's."""
    from ..bench.chains import host_cpu
    from ..bench.schemes import schemes_bench

    chains = 512 if args.chains is None else args.chains
    steps = 30 if args.steps is None else args.steps
    r = schemes_bench(chains=chains, steps=steps, repeat=args.repeat)
    print(
        f"{PROG} bench --workload schemes: SphereFlow(4, 0.1, scheme=...) beside post-LN, n=32 "
        f"i.i.d. uniform on S^(d-1), B=V=I; {chains} chains x {steps} steps; median of "
        f"{r['repeat']}, numba threads {r['threads']}, CPU {host_cpu()}"
    )
    print("| scheme | n, d | µs/chain-step | post-LN µs/chain-step | ratio | target |")
    print("|---|---|---|---|---|---|")
    for w in r["rows"]:
        print(
            f"| {w['name']} | {w['n']}, {w['d']} | {1e6 * w['seconds']:.3g} | "
            f"{1e6 * w['flow_seconds']:.3g} | {w['ratio']:.2f} | "
            f"<= {w['target']:g}x {'met' if w['ratio'] <= w['target'] else 'NOT met'} |"
        )
    return 0


def _sizes_bench(args: argparse.Namespace) -> int:
    """``metastab bench --sizes``: SA_P from n = 20 to transformer-like sizes, and the FMA peak."""
    from ..bench.chains import host_cpu, sizes_bench

    r = sizes_bench(repeat=args.repeat)
    print(
        f"{PROG} bench --sizes: SA_P, unit-sphere tokens, B = I, beta=5, gamma=0.1; median of "
        f"{r['repeat']}, numba threads {r['threads']}, CPU {host_cpu()}"
    )
    print(
        "| n, d | chains x steps | metastab token-steps/s | NumPy | ratio | target "
        "| GFLOP/s (2nd) |"
    )
    print("|---|---|---|---|---|---|---|")
    for w in r["rows"]:
        print(
            f"| {w['n']}, {w['d']} | {w['chains']} x {w['steps']} | {w['numba_rate']:.3g} | "
            f"{w['numpy_rate']:.3g} | {w['ratio']:.1f} | {_verdict(w['ratio'], w['target'], 'x')} "
            f"| {w['gflops']:.1f} |"
        )
    fraction = 100 * r["peak_fraction"]
    print(
        f"measured FMA peak {r['peak_flops'] / 1e9:.1f} GFLOP/s; largest size at "
        f"{fraction:.0f} % of it ({_verdict(fraction, 100 * r['peak_target'], ' %')})"
    )
    print(
        f"the kernels' bit-exact exp: {1e9 * r['exp_seconds']:.2f} ns per exponential on one "
        "thread (n of them per token-step)"
    )
    return 0


def _escape_bench(args: argparse.Namespace) -> int:
    """``metastab bench --escape``: seconds per escape, exact against accelerated stepping; one
    row per beta, printed as soon as it is measured."""
    import numba

    from ..bench.chains import ESCAPE_BETAS, ESCAPE_CHAINS, escape_bench, host_cpu

    chains = ESCAPE_CHAINS if args.chains is None else args.chains
    if chains < 1:
        raise UsageError(f"chains must be an integer >= 1, got {chains}")
    if not (math.isfinite(args.exact_factor) and args.exact_factor > 0):
        raise UsageError(f"exact-factor must be finite and > 0, got {args.exact_factor!r}")
    betas = ESCAPE_BETAS if args.beta is None else args.beta
    for beta in betas:
        if not (math.isfinite(beta) and beta >= 0):
            raise UsageError(f"beta must be finite and >= 0, got {beta!r}")
    print(
        f"{PROG} bench --escape: T2 of Thm 5.4 from the clustered triangle (vertices + 6 tokens "
        f"at 0.8·v_a, n=9, gamma=0.1, eps = 2·gamma·diam(K)), {chains} chains per beta and "
        f"mode, numba threads {numba.get_num_threads()}, CPU {host_cpu()}"
    )
    print(
        f"accelerated: every chain to its escape; exact: budget {args.exact_factor:g} x the "
        f"accelerated mean (seconds divided by the escapes observed)",
        flush=True,
    )
    show = output.Rows(
        [
            "beta",
            "mean_steps",
            "exact_escapes",
            "exact_s_per_escape",
            "accelerated_s_per_escape",
            "ratio",
        ]
    )

    def on_row(row: dict) -> None:
        show(
            {
                **row,
                "mean_steps": f"{row['mean_steps']:.3g}",
                "exact_s_per_escape": f"{row['exact_s_per_escape']:.3g}",
                "accelerated_s_per_escape": f"{row['accelerated_s_per_escape']:.3g}",
                "ratio": f"{row['ratio']:.3g}x",
            }
        )

    escape_bench(
        betas,
        chains=chains,
        exact_factor=args.exact_factor,
        progress=output.progress(args),
        on_row=on_row,
    )
    print("ratio = exact / accelerated seconds per escape (inf: no exact escape in the budget)")
    return 0


def _ams_ou_bench(args: argparse.Namespace) -> int:
    """``metastab bench --workload ams-ou``: one OU probability by metastab's AMS and by pyTAMS,
    the CPU seconds each needs for a common relative error, and their ratio."""
    from ..bench.ams import AMS_OU, METASTAB_RUNS, PYTAMS_RUNS, TARGET, ams_ou_bench
    from ..bench.chains import host_cpu

    taken = [f for f in ("escape", "sizes", "no_jax") if getattr(args, f)]
    taken += [f for f in ("steps", "beta") if getattr(args, f) is not None]
    if taken or args.repeat != 3:
        flag = (taken or ["repeat"])[0].replace("_", "-")
        raise UsageError(f"{flag}: --workload ams-ou takes only --chains (the pyTAMS runs)")
    runs = PYTAMS_RUNS if args.chains is None else args.chains
    if runs < 2:
        raise UsageError(f"chains must be an integer >= 2 for ams-ou, got {runs}")
    w = AMS_OU
    print(
        f"{PROG} bench --workload ams-ou: P[max_(1<=t<={w['steps']}) X_t >= {w['b']:g}] for "
        f"the AR(1) Ornstein-Uhlenbeck chain X' = rho X + sqrt(1 - rho^2) xi, rho = e^-0.1, "
        f"from X_0 = {w['x0']:g}; {w['replicas']} replicas per run; metastab {METASTAB_RUNS} "
        f"runs (one process, NumPy), pyTAMS {runs} runs (its asyncio runner, one worker); CPU "
        f"{host_cpu()}",
        flush=True,
    )
    columns = ["package", "runs", "mean_over_truth", "z", "extinct", "rel_err_run",
               "rel_err_mean", "cpu_s", "wall_s", "cpu_s_per_run", "cpu_s_at_eps"]  # fmt: skip
    show = output.Rows(columns)

    def on_row(row: dict) -> None:
        show(
            {
                "package": row["package"],
                "runs": row["runs"],
                "mean_over_truth": f"{row['mean_over_truth']:.3f}",
                "z": f"{row['z']:.2f}",
                "extinct": row["extinct"],
                "rel_err_run": f"{row['relative_error_run']:.2f}"
                f"±{row['relative_error_run_se']:.2f}",
                "rel_err_mean": f"{row['relative_error_mean']:.3f}",
                "cpu_s": f"{row['cpu_s']:.3g}",
                "wall_s": row["wall_s"],
                "cpu_s_per_run": f"{row['cpu_s_per_run']:.3g}",
                "cpu_s_at_eps": f"{row['cpu_s_at_epsilon']:.3g}",
            }
        )

    r = ams_ou_bench(pytams_runs=runs, on_row=on_row)
    eps = r["epsilon"]
    print(
        f"truth {r['truth']:.6g} (quadrature); rel_err_run = sd/mean of one run's estimate (± its "
        f"standard error), rel_err_mean = rel_err_run/sqrt(runs); cpu_s_at_eps = cpu_s_per_run "
        f"x (rel_err_run/{eps:g})^2, the CPU seconds for a mean within {eps:.0%}; CPU = user + "
        "system of the process and its workers"
    )
    if r["ratio"] is None:
        print(f"pyTAMS: {r['pytams']}")
        return 0
    print(
        f"ratio (pyTAMS / metastab CPU at equal relative error) {r['ratio']:.3g}x "
        f"(target {_verdict(r['ratio'], TARGET, 'x')})"
    )
    for row in r["rows"]:
        if not abs(row["z"]) < 3:  # nan too: a spread of zero says nothing
            print(
                f"{row['package']}: its mean is {row['mean_over_truth']:.3g} x the truth "
                f"(z = {row['z']:.3g}): more runs shrink its spread, not that offset, so the "
                "equal-error cost above understates what it needs"
            )
    return 0


def _ams_noisy_bench(args: argparse.Namespace) -> int:
    """``metastab bench --workload ams-noisy``: the noisy sphere's mean escape time from the
    uniform state by direct simulation and by AMS, the CPU seconds each needs for a common
    relative error, and their ratio; then AMS alone beyond direct simulation's reach."""
    import numba

    from ..bench import ams_noisy as bench
    from ..bench.chains import host_cpu

    taken = [f for f in ("escape", "sizes", "no_jax") if getattr(args, f)]
    taken += [f for f in ("steps", "beta") if getattr(args, f) is not None]
    if taken or args.repeat != 3:
        flag = (taken or ["repeat"])[0].replace("_", "-")
        raise UsageError(f"{flag}: --workload ams-noisy takes only --chains (the direct chains)")
    chains = bench.DIRECT_CHAINS if args.chains is None else args.chains
    if chains < 2:
        raise UsageError(f"chains must be an integer >= 2 for ams-noisy, got {chains}")
    c, hill, eps = bench.AMS_NOISY, bench.HILL, bench.EPSILON
    print(
        f"{PROG} bench --workload ams-noisy: E[T] of LeaveUniform({c['level']:g}) for the noisy "
        f"circle, beta = {c['beta']:g}, K = K_c + {c['between']:g} (K_# - K_c), dt = "
        f"{c['dt']:g}, n in {list(bench.SIZES)} side by side, {list(bench.BEYOND)} AMS alone; "
        f"direct: {chains} chains; AMS: Hill relation with A = {{m_1 <= "
        f"{bench.REFERENCE:g}/sqrt(n)}}, {hill['chains']} direct chains x {hill['cycles']} "
        f"cycles per run, {hill['replicas']} replicas, {hill['runs']} runs; "
        f"{numba.get_num_threads()} threads; CPU {host_cpu()}",
        flush=True,
    )
    columns = ["method", "n", "mean", "interval", "rel_err", "cpu_s", "cpu_s_at_eps", "ratio", "z"]
    show = output.Rows(columns)

    def on_row(row: dict) -> None:
        show(
            {
                "method": row["method"],
                "n": row["n"],
                "mean": f"{row['mean']:.4g}",
                "interval": f"[{row['low']:.4g}, {row['high']:.4g}]",
                "rel_err": f"{row['rel_err']:.3f}",
                "cpu_s": f"{row['cpu_s']:.3g}",
                "cpu_s_at_eps": f"{row['cpu_s_at_eps']:.3g}",
                "ratio": f"{row['ratio']:.3g}" if "ratio" in row else "-",
                "z": f"{row['z']:.2f}" if "z" in row else "-",
            }
        )

    r = bench.ams_noisy_bench(direct_chains=chains, on_row=on_row)
    print(
        f"mean in steps; rel_err = relative standard error; cpu_s_at_eps = cpu_s x "
        f"(rel_err/{eps:g})^2, the CPU seconds for E[T] within {eps:.0%}; ratio = direct"
        f" / AMS CPU at equal relative error; z = log(AMS / direct) over its standard error; "
        "CPU = user + system of the process"
    )
    for row in r["rows"]:
        if row["method"] == "ams" and "direct_steps_at_eps" in row:
            print(
                f"n = {row['n']}: direct simulation would need about "
                f"{row['direct_steps_at_eps']:.2g} steps for E[T] within {bench.EPSILON:.0%}"
            )
        for message in row.get("warnings", ()):
            print(f"n = {row['n']}, AMS: {message}")
    if r["ratio"] is not None:
        print(
            f"ratio at n = {max(bench.SIZES)} {r['ratio']:.3g}x "
            f"(target {_verdict(r['ratio'], bench.TARGET, 'x')})"
        )
    return 0
