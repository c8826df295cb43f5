"""The ``metastab`` command: ``simulate``, ``passage``, ``demo``, ``bench``, ``fit``, ``sweep`` and
``study``.

A thin layer over the library: it parses flags, builds the polytope, the initial configuration,
the model(s) and the event, runs :func:`metastab.simulate` or :func:`metastab.first_passage` once
per β, prints a short summary and optionally writes a tidy table with a JSON provenance sidecar.
Every error a user can cause exits with status 2 and one line on stderr, no traceback.
"""

from __future__ import annotations

import argparse
import math
import shlex
import sys
import warnings
from pathlib import Path

from . import __version__

# numpy, pandas, numba and the library are imported where they are used, so that --help and
# --version answer at once.

__all__ = ["main", "build_parser"]

PROG = "metastab"
POLYTOPE_SPECS = "regular:K, random:K, random:K:equinorm, simplex:D, cross:D, gaussian:K:D"
INIT_SPECS = "near-vertices, in-cells, shrunk:F, file:PATH"
EVENTS = ("leave-hull", "leave-ball", "reach-vertices", "collapse")
MODELS = ("softmax-chain", "softmax-flow", "hardmax", "localmax")
DEFAULT_BETA = 10.0
DEFAULT_INIT = "shrunk:0.5"
# Initial configurations up to this many numbers are copied into the sidecar.
_MAX_SIDECAR_NUMBERS = 100_000

# Errors a user can cause through flags, files or sizes: reported in one line, exit status 2.
USER_ERRORS = (ValueError, TypeError, MemoryError, OSError, ArithmeticError)


class UsageError(ValueError):
    """A flag value that the command line itself rejects."""


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors as one line (no usage block) and examples kept as written."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message):
        raise UsageError(f"{message} (see {self.prog} --help)")


def _examples(*lines: str) -> str:
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


# --------------------------------------------------------------------------- parsing helpers


def _int_field(spec: str, field: str, text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"polytope: {field} must be an integer, got {text!r} in {spec!r}") \
            from None
    if value < minimum:
        raise UsageError(f"polytope: {field} must be >= {minimum}, got {value} in {spec!r}")
    return value


def parse_polytope(spec: str, radius: float, rng):
    """The Polytope named by ``spec`` (see POLYTOPE_SPECS), scaled so its vertices have norm
    ``radius`` (regular, equinorm random) or by ``radius`` (the others)."""
    from . import polytope as pt

    if not (math.isfinite(radius) and radius > 0):
        raise UsageError(f"radius must be finite and > 0, got {radius!r}")
    kind, _, rest = spec.partition(":")
    parts = rest.split(":") if rest else []
    if kind == "regular" and len(parts) == 1:
        return pt.regular_polygon(_int_field(spec, "K", parts[0], 3), radius=radius)
    if kind == "random" and (len(parts) == 1 or (len(parts) == 2 and parts[1] == "equinorm")):
        k = _int_field(spec, "K", parts[0], 3)
        try:
            P = pt.random_polygon(k, equal_norm=len(parts) == 2, rng=rng)
        except RuntimeError as exc:
            raise UsageError(f"polytope: {exc}") from None
    elif kind == "simplex" and len(parts) == 1:
        P = pt.simplex(_int_field(spec, "D", parts[0], 1))
    elif kind == "cross" and len(parts) == 1:
        P = pt.cross_polytope(_int_field(spec, "D", parts[0], 1))
    elif kind == "gaussian" and len(parts) == 2:
        P = pt.gaussian(_int_field(spec, "K", parts[0], 1), _int_field(spec, "D", parts[1], 1),
                        rng=rng)
    else:
        raise UsageError(f"polytope must be one of {POLYTOPE_SPECS}, got {spec!r}")
    return P if radius == 1.0 else pt.Polytope(radius * P.vertices, name=P.name)


def _load_configuration(path_text: str, dim: int):
    """The n×d (or chains×n×d) array of ``--init file:PATH``; every error names the file."""
    import numpy as np

    path = Path(path_text)
    if not path.is_file():
        raise FileNotFoundError(f"init: no such file: {path_text!r}")
    if path.suffix == ".npy":
        with open(path, "rb") as fh:
            if fh.read(6) != b"\x93NUMPY":
                raise UsageError(f"init: {path_text!r} is not a .npy file (no NumPy header): "
                                 f"write it with numpy.save, or name a text table .csv or .txt")
    try:
        if path.suffix == ".npy":
            x = np.load(path, allow_pickle=False)
        else:
            with warnings.catch_warnings():    # an empty file: said below, in one line
                warnings.simplefilter("ignore", UserWarning)
                x = np.loadtxt(path, delimiter="," if path.suffix == ".csv" else None, ndmin=2)
    except (ValueError, OSError, EOFError) as exc:
        kind = "a .npy array" if path.suffix == ".npy" else "a table of numbers (no header)"
        raise UsageError(f"init: cannot read {path_text!r} as {kind}: {_one_line(exc)}") \
            from None
    if x.size == 0:
        raise UsageError(f"init: {path_text!r} holds no numbers")
    if x.ndim not in (2, 3):
        raise UsageError(f"init: {path_text!r} must hold an n×d or chains×n×d array, "
                         f"got shape {x.shape}")
    if x.dtype.kind not in "biuf":
        raise UsageError(f"init: {path_text!r} must hold real numbers, got dtype {x.dtype}")
    if x.shape[-1] != dim:
        raise UsageError(f"init: {path_text!r} holds points in R^{x.shape[-1]} (shape "
                         f"{x.shape}) but the polytope is in R^{dim}: --polytope sets d "
                         f"(simplex:D, cross:D, gaussian:K:D)")
    return np.asarray(x, dtype=float)


def initial_configuration(spec: str, polytope, n: int | None, beta: float | None, gamma: float,
                          rng) -> np.ndarray:
    """The initial configuration named by ``spec`` (see INIT_SPECS)."""
    from . import configs
    from .configs import shrunk

    kind, _, arg = spec.partition(":")
    if kind == "file" and arg:
        if n is not None:
            raise UsageError("n: --n cannot be combined with --init file:PATH (the file fixes n)")
        return _load_configuration(arg, polytope.dim)
    n = 20 if n is None else n
    if kind == "shrunk" and arg:
        try:
            factor = float(arg)
        except ValueError:
            raise UsageError(f"init: shrink factor must be a number, got {arg!r}") from None
        return shrunk(polytope, n, factor)
    if kind == "near-vertices" and not arg:
        if beta is None:
            raise UsageError("beta: --init near-vertices needs a --beta (it sets the cone size)")
        return configs.near_vertices(polytope, n, beta, gamma, rng=rng)
    if kind == "in-cells" and not arg:
        return configs.in_cells(polytope, n, rng=rng)
    raise UsageError(f"init must be one of {INIT_SPECS}, got {spec!r}")


def make_event(args, polytope, x0):
    """The stopping event of ``metastab passage``."""
    from .events import Collapse, LeaveBall, LeaveHull, ReachVertices

    radius = args.event_radius
    for flag, value in (("event-radius", radius), ("vertex-radius", args.vertex_radius),
                        ("diameter", args.diameter)):
        if value is not None and not (math.isfinite(value) and value > 0):
            raise UsageError(f"{flag} must be finite and > 0, got {value!r}")
    if args.event in ("leave-hull", "leave-ball") and radius is None:
        radius = 2 * args.gamma * polytope.diameter  # smallest ε of [FW] Thm 5.4: ε/γ >= 2 d(K)
    if args.event == "leave-hull":
        cells = polytope.assign(x0)
        if cells.ndim == 2:
            if not (cells == cells[0]).all():
                raise UsageError("event: leave-hull needs the same initial cells in every chain "
                                 "of the --init file")
            cells = cells[0]
        return LeaveHull(groups=cells, radius=radius)
    if args.event == "leave-ball":
        return LeaveBall(radius)
    if args.event == "reach-vertices":
        if radius is None:
            raise UsageError("event-radius: --event reach-vertices needs --event-radius")
        return ReachVertices(polytope.vertices, radius, vertex_radius=args.vertex_radius)
    if args.event == "collapse":
        if args.diameter is None:
            raise UsageError("diameter: --event collapse needs --diameter")
        return Collapse(args.diameter)
    raise UsageError(f"event must be one of {', '.join(EVENTS)}, got {args.event!r}")


def _models(args) -> list:
    """One model per requested β (one per --r for localmax, a single Hardmax: no β)."""
    from .models import Hardmax, Localmax, SoftmaxChain, SoftmaxFlow

    if args.model not in MODELS:
        raise UsageError(f"model must be one of {', '.join(MODELS)}, got {args.model!r}")
    if args.ties is not None and args.model != "hardmax":
        raise UsageError(f"ties: --ties applies to --model hardmax only, got --ties {args.ties}")
    if (args.r is not None or args.neighbours is not None) and args.model != "localmax":
        raise UsageError("r: --r and --neighbours apply to --model localmax only")
    if args.model in ("hardmax", "localmax"):
        if args.beta is not None and (len(args.beta) > 1 or not args.init == "near-vertices"):
            raise UsageError(f"beta: --model {args.model} has no temperature; --beta is only the "
                             f"cone size of --init near-vertices (one value), got {args.beta}")
        if args.model == "hardmax":
            return [Hardmax(gamma=args.gamma, ties=args.ties or "index")]
        if args.r is None:
            raise UsageError("r: --model localmax needs --r R [R ...] (neighbour margins)")
        return [Localmax(gamma=args.gamma, r=r, neighbours=args.neighbours or "additive")
                for r in args.r]
    cls = SoftmaxChain if args.model == "softmax-chain" else SoftmaxFlow
    return [cls(beta=b, gamma=args.gamma) for b in (args.beta or [DEFAULT_BETA])]


def _out_path(out: str | None, overwrite: bool = False) -> Path | None:
    """The ``--out`` path, checked before anything is computed: a .csv or .parquet name in a
    folder that can be written (created at the end when missing), and not an existing file
    unless ``--overwrite``."""
    from .results import check_writable, sidecar

    if out is None:
        return None
    path = Path(out)
    if path.suffix not in (".csv", ".parquet"):
        raise UsageError(f"out must end in .csv or .parquet, got {out!r}")
    if path.is_dir():
        raise UsageError(f"out: {out!r} is a folder")
    for existing in (path, sidecar(path)):
        if existing.exists() and not overwrite:
            raise UsageError(f"out: {str(existing)!r} exists; pass --overwrite to replace it")
    check_writable(path)
    return path


def _seed(value, name: str):
    from .rng import as_seed

    if value is not None and value < 0:
        raise UsageError(f"{name} must be an integer >= 0, got {value}")
    return as_seed(value)


def _progress(args) -> bool:
    return sys.stderr.isatty() if args.progress is None else args.progress


def _table(rows: list[dict]) -> str:
    import pandas as pd

    frame = pd.DataFrame(rows)
    formats = {"wall_s": "{:.2f}".format, "beta": "{:g}".format}
    for col in frame.columns:
        if col.startswith(("median_", "mean_")) and col != "median_diameter":
            formats[col] = _steps_format
        elif col not in formats and frame[col].dtype.kind == "f":
            formats[col] = "{:.6g}".format
    return frame.to_string(index=False, formatters=formats, na_rep="nan")


class _Rows:
    """A table printed one row at a time, each as soon as it is known (columns fixed ahead)."""

    def __init__(self, columns: list[str]):
        self.columns = columns
        self.widths = [max(len(c), 8) for c in columns]
        print("  ".join(c.rjust(w) for c, w in zip(columns, self.widths)), flush=True)

    def __call__(self, row: dict) -> None:
        print("  ".join(_cell(c, row[c]).rjust(w) for c, w in zip(self.columns, self.widths)),
              flush=True)


def _cell(column: str, value) -> str:
    if column == "wall_s":
        return f"{value:.2f}"
    if isinstance(value, float):
        if column.startswith(("median_", "mean_")) and column != "median_diameter":
            return "nan" if math.isnan(value) else _steps_format(value)
        return f"{value:.6g}"
    return str(value)


def _steps_format(value) -> str:
    """A step count: one decimal up to 1e7, four significant digits beyond (accelerated runs
    reach 1e40 steps)."""
    return f"{value:.1f}" if not abs(value) >= 1e7 else f"{value:.4g}"


def _whole(text: str) -> int:
    """An integer flag: digits, or an integral number such as 1e6."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not (math.isfinite(value) and value == math.floor(value)):
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}")
    return int(value)


def _max_steps(text: str) -> int | float:
    """``--max-steps``: an integer, or an integral float such as 1e30 (``--mode accelerated``
    counts steps in float64; the exact mode refuses a float)."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if math.isfinite(value) and value == math.floor(value) and value < 2**63:
        return int(value)
    return value


def _diameters(final):
    """The diameter max_ij |x_i − x_j| of each configuration, over blocks of rows so that the
    pairwise distances never take more than about 32 MiB at a time."""
    import numpy as np
    from scipy.spatial.distance import cdist

    out = np.zeros(len(final))
    for c, x in enumerate(final):
        rows = max(1, 2**22 // len(x))
        for i in range(0, len(x), rows):
            out[c] = max(out[c], cdist(x[i:i + rows], x).max())
    return out


# --------------------------------------------------------------------------- commands


def _cmd_dynamics(args, argv: list[str]) -> int:
    """``metastab simulate`` and ``metastab passage``.

    The header and the seed are printed first, each row as soon as its run finishes; on Ctrl-C
    the finished runs are still written to ``--out``, with ``"interrupted": true`` in the sidecar.
    """
    import numpy as np

    from .accelerate import merge_tolerance
    from .demo import escape_summary
    from .simulate import first_passage, simulate

    passage = args.command == "passage"
    mode = getattr(args, "mode", "exact")
    merge_tol = getattr(args, "merge_tol", None)
    if merge_tol is not None and mode != "accelerated":
        raise UsageError(f"merge-tol: --merge-tol applies to --mode accelerated only, "
                         f"got --merge-tol {merge_tol:g}")
    if passage and mode == "exact" and not isinstance(args.max_steps, int):
        raise UsageError(f"max-steps: --mode exact needs an integer below 2^63, got "
                         f"{args.max_steps:g} (--mode accelerated takes any integral value)")
    out = _out_path(args.out, args.overwrite)
    seed = _seed(args.seed, "seed")
    init_seed = _seed(args.init_seed, "init-seed") if args.init_seed is not None else None
    # The polytope and the configuration get their own streams of the init seed (the run seed's
    # child 1 by default), so the configuration at one β does not depend on the other βs.
    base = np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key + (1,)) \
        if init_seed is None else init_seed.sequence

    def init_rng(k: int):
        return np.random.default_rng(np.random.SeedSequence(base.entropy,
                                                            spawn_key=tuple(base.spawn_key) + (k,)))

    polytope = parse_polytope(args.polytope, args.radius, init_rng(0))
    models = _models(args)
    starts = []
    for model in models:
        beta = getattr(model, "beta", math.inf)
        if not math.isfinite(beta):
            beta = args.beta[0] if args.beta else None
        starts.append(initial_configuration(args.init, polytope, args.n, beta, args.gamma,
                                            init_rng(1)))
    events = [make_event(args, polytope, x0) for x0 in starts] if passage else [None] * len(models)
    tol = merge_tolerance(merge_tol) if mode == "accelerated" else None

    n = starts[0].shape[-2]
    what = f"{models[0].kind}, gamma {args.gamma:g}, {polytope.name}, n {n}, init {args.init}"
    if passage:
        what += f", event {events[0].kind}" + "".join(
            f" {k} {getattr(events[0], k):.6g}" for k in ("radius", "vertex_radius", "diameter")
            if isinstance(getattr(events[0], k, None), float))
        budget = args.max_steps
        what += f", max steps {budget if isinstance(budget, int) else f'{budget:g}'}"
        if mode == "accelerated":
            what += f", mode accelerated (merge tol {tol:g})"
    print(f"{PROG} {args.command}: {what}")
    hint = "" if args.seed is not None else f"  (no --seed given: --seed {seed.entropy} repeats it)"
    print(f"seed {seed.entropy}{hint}", flush=True)

    first = ["beta"] if math.isfinite(getattr(models[0], "beta", math.inf)) else \
        ["r"] if isinstance(getattr(models[0], "r", None), float) else []
    columns = first + (["chains", "events", "censored", "median_T", "mean_T", "wall_s"] if passage
                       else ["chains", "steps", "states_kept", "median_diameter", "wall_s"])
    show = None
    progress = _progress(args)
    frames, results = [], []
    try:
        for model, x0, event in zip(models, starts, events):
            if passage:
                res = first_passage(model, x0, event, max_steps=args.max_steps,
                                    chains=args.chains, rng=seed, progress=progress,
                                    first_chain=args.first_chain, mode=mode, merge_tol=merge_tol)
                names = {"escapes": "events", "median_escape": "median_T",
                         "mean_escape": "mean_T"}
                row = {names.get(k, k): v for k, v in escape_summary(res).items()}
            else:
                res = simulate(model, x0, steps=args.steps, chains=args.chains, rng=seed,
                               record_every=args.record_every, progress=progress,
                               first_chain=args.first_chain)
                row = {"chains": res.chains, "steps": res.steps,
                       "states_kept": 1 if res.times is None else len(res.times),
                       "median_diameter": float(np.median(_diameters(res.final)))}
            row.update(beta=getattr(model, "beta", None), r=getattr(model, "r", None),
                       wall_s=res.provenance["wall_seconds"])
            show = show or _Rows(columns)
            show(row)
            frame = res.to_frame()
            frame["polytope"], frame["init"], frame["n"] = polytope.name, args.init, n
            frame["seed"] = str(seed.entropy)
            frames.append(frame)
            results.append(res)
    except KeyboardInterrupt:
        if out is not None and results:
            _write_runs(out, argv, polytope, args, base, results, starts, frames, mode,
                        interrupted=True)
            sys.stderr.write(f"\n{PROG}: interrupted: wrote the {len(results)} finished of "
                             f"{len(models)} runs to {out} and {out}.json\n")
        raise
    if passage:
        print("T = first step at which the event holds; median_T over the chains that met it; "
              "mean_T = total observed steps / events (censored MLE of a geometric mean)")
    if out is not None:
        _write_runs(out, argv, polytope, args, base, results, starts, frames, mode)
        print(f"wrote {out} and {out}.json")
    return 0


def _write_runs(out, argv, polytope, args, base, results, starts, frames, mode, *,
                interrupted=False) -> None:
    """The table of the finished runs and its sidecar (command, polytope, seeds, runs, x0)."""
    import pandas as pd

    from .results import write_table

    passage = args.command == "passage"
    meta = {
        "kind": "first-passage" if passage else "run",
        "command": shlex.join([PROG, *argv]),
        "polytope": polytope.to_dict(),
        "init": args.init,
        "init_seed": {"entropy": str(base.entropy), "spawn_key": list(base.spawn_key)},
        "runs": [r.metadata() for r in results],
    }
    if interrupted:
        meta["interrupted"] = True
        meta["note"] = (f"interrupted: {len(results)} of the requested runs finished and are "
                        f"in the table; the others are missing")
    if passage:  # each run's provenance also records mode and merge_tol when accelerated
        meta["mode"] = mode
        meta["merge_tol"] = results[0].provenance.get("merge_tol")
    starts = starts[:len(results)]
    if sum(x.size for x in starts) <= _MAX_SIDECAR_NUMBERS:  # one per run, as run
        meta["x0"] = [x.tolist() for x in starts]
    write_table(pd.concat(frames, ignore_index=True), out, meta)


def _cmd_demo(args, argv: list[str]) -> int:
    from .demo import escape_demo
    from .results import provenance, write_table

    out = _out_path(args.out, args.overwrite)
    seed = _seed(args.seed, "seed")
    table = escape_demo(args.beta, chains=args.chains, max_steps=args.max_steps, seed=seed,
                        progress=_progress(args))
    a = table.attrs
    print(f"{PROG} demo: escape times of the softmax chain SA_P from the clustered pentagon")
    print(f"  {a['polytope']} on the unit circle, n={a['n']} tokens: 5 at the vertices v_a, 15 at "
          f"0.5·v_a; gamma={a['gamma']}")
    print(f"  escape (T2 of Thm 5.4): some token leaves the hull of its initial cell's tokens "
          f"+ B(0, eps), eps = 2·gamma·diam(K) = {a['epsilon']:.4f}")
    print(f"  {args.chains} chains per beta, censored at {args.max_steps} steps, seed "
          f"{seed.entropy} (same numbers on any thread count)")
    print(_table(table.to_dict("records")))
    print("mean_escape = total observed steps / escapes (censored MLE of a geometric mean)")
    if "slope" in a:
        print(f"joint censored fit log E[T] = a + b·beta: b = {a['slope']:.3f} "
              f"[{a['slope_low']:.3f}, {a['slope_high']:.3f}] ({a['confidence_level']:.0%}); "
              f"the Thm 5.4 lower bound grows with exponent {a['bound_exponent']:.3f}")
        if a["fit_pvalue"] < 0.01:
            print(f"  (deviance {a['deviance']:.3g} on {a['df']} df, p = {a['fit_pvalue']:.2g}: "
                  f"a pure exponential does not fit these betas, so the interval understates "
                  f"the error; `metastab fit --prefactor` adds a c·log(beta) term)")
    if out is not None:
        meta = {"kind": "demo", "command": shlex.join([PROG, *argv]), **a,
                "seed": seed.to_dict(), "provenance": provenance()}
        write_table(table, out, meta)
        print(f"wrote {out} and {out}.json")
    return 0


def _cmd_bench(args, argv: list[str]) -> int:
    from .bench import run_bench

    if args.escape:
        return _escape_bench(args)
    if args.sizes:
        return _sizes_bench(args)
    if args.beta is not None:
        raise UsageError("beta: --beta applies to bench --escape only")
    chains = 2048 if args.chains is None else args.chains
    print(f"{PROG} bench: SA_P on workload W1 (regular pentagon on the unit circle + 15 interior "
          f"tokens, n=20, d=2, beta=20, gamma=0.1)", flush=True)
    r = run_bench(chains=chains, steps=args.steps, repeat=args.repeat,
                  progress=_progress(args))
    print(f"{r['chains']} chains x {r['steps']} steps, best of {r['repeat']}, "
          f"numba threads {r['threads']}")
    print(f"numba (metastab.simulate)   {r['numba_rate'] / 1e6:8.2f} M token-steps/s"
          f"  ({r['numba_seconds']:.3f} s)")
    print(f"numpy (vectorised, 1 thread){r['numpy_rate'] / 1e6:8.2f} M token-steps/s"
          f"  ({r['numpy_seconds']:.3f} s)")
    verdict = "met" if r["ratio"] >= r["target"] else "NOT met"
    print(f"ratio {r['ratio']:.2f}x  (target >= {r['target']:g}x: {verdict})")
    return 0


def _sizes_bench(args) -> int:
    """``metastab bench --sizes``: SA_P from n = 20 to transformer-like sizes, and the FMA peak."""
    from .bench import sizes_bench

    r = sizes_bench(repeat=args.repeat)
    print(f"{PROG} bench --sizes: SA_P, unit-sphere tokens, B = I, beta=5, gamma=0.1; median of "
          f"{r['repeat']}, numba threads {r['threads']}")
    print("| n, d | chains x steps | metastab token-steps/s | NumPy | ratio | GFLOP/s (2nd) |")
    print("|---|---|---|---|---|---|")
    for w in r["rows"]:
        print(f"| {w['n']}, {w['d']} | {w['chains']} x {w['steps']} | {w['numba_rate']:.3g} | "
              f"{w['numpy_rate']:.3g} | {w['ratio']:.1f} | {w['gflops']:.1f} |")
    print(f"measured FMA peak {r['peak_flops'] / 1e9:.1f} GFLOP/s; largest size at "
          f"{100 * r['peak_fraction']:.0f} % of it")
    return 0


def _escape_bench(args) -> int:
    """``metastab bench --escape``: seconds per escape, exact against accelerated stepping; one
    row per beta, printed as soon as it is measured."""
    import numba

    from .bench import ESCAPE_BETAS, ESCAPE_CHAINS, escape_bench

    chains = ESCAPE_CHAINS if args.chains is None else args.chains
    if chains < 1:
        raise UsageError(f"chains must be an integer >= 1, got {chains}")
    if not (math.isfinite(args.exact_factor) and args.exact_factor > 0):
        raise UsageError(f"exact-factor must be finite and > 0, got {args.exact_factor!r}")
    betas = ESCAPE_BETAS if args.beta is None else args.beta
    for beta in betas:
        if not (math.isfinite(beta) and beta >= 0):
            raise UsageError(f"beta must be finite and >= 0, got {beta!r}")
    print(f"{PROG} bench --escape: T2 of Thm 5.4 from the clustered triangle (vertices + 6 tokens "
          f"at 0.8·v_a, n=9, gamma=0.1, eps = 2·gamma·diam(K)), {chains} chains per beta and "
          f"mode, numba threads {numba.get_num_threads()}")
    print(f"accelerated: every chain to its escape; exact: budget {args.exact_factor:g} x the "
          f"accelerated mean (seconds divided by the escapes observed)", flush=True)
    show = _Rows(["beta", "mean_steps", "exact_escapes", "exact_s_per_escape",
                  "accelerated_s_per_escape", "ratio"])

    def on_row(row):
        show({**row, "mean_steps": f"{row['mean_steps']:.3g}",
              "exact_s_per_escape": f"{row['exact_s_per_escape']:.3g}",
              "accelerated_s_per_escape": f"{row['accelerated_s_per_escape']:.3g}",
              "ratio": f"{row['ratio']:.3g}x"})

    escape_bench(betas, chains=chains, exact_factor=args.exact_factor, progress=_progress(args),
                 on_row=on_row)
    print("ratio = exact / accelerated seconds per escape (inf: no exact escape in the budget)")
    return 0


def _read_first_passage(path: Path):
    """A first-passage table (CSV/parquet with its sidecar) or a sweep directory."""
    from .results import read_table

    if path.is_dir():
        from .sweep import read_sweep

        return read_sweep(path)
    if not path.exists():
        raise FileNotFoundError(f"DATA: no such file or directory: {str(path)!r}")
    return read_table(path)


def theorem_bound(meta: dict, frame) -> tuple[dict | None, str]:
    """Arguments of :func:`metastab.theory.exit_time_bound` for a table written by
    ``metastab passage`` with a leave-hull event and a scalar gamma, or (None, why not)."""
    import numpy as np

    from .polytope import Polytope

    runs = meta.get("runs") or []
    if not runs or "polytope" not in meta or not meta.get("x0"):
        return None, "the sidecar lacks the polytope, the runs or x0"
    model, event = runs[0].get("model", {}), runs[0].get("event", {})
    if event.get("kind") != "leave-hull":
        return None, f"the event is {event.get('kind')!r}, not leave-hull (Thm 5.4)"
    if not isinstance(model.get("gamma"), (int, float)):
        return None, "gamma is not a scalar"
    P = Polytope.from_dict(meta["polytope"])
    n = int(np.shape(meta["x0"][0])[-2])
    bound = dict(c0=P.c0, eps=float(event["radius"]), gamma=float(model["gamma"]), n=n,
                 diameter=P.diameter)
    if bound["eps"] / bound["gamma"] < 2 * P.diameter:
        return None, (f"eps/gamma = {bound['eps'] / bound['gamma']:.4g} < 2 d(K) = "
                      f"{2 * P.diameter:.4g}: Thm 5.4 does not apply")
    return bound, ""


def _cmd_fit(args, argv: list[str]) -> int:
    from .plotting import arrhenius_figure
    from .scaling import fit_report

    out = _out_path(args.out, args.overwrite)
    path = Path(args.data)
    frame, meta = _read_first_passage(path)
    level = args.confidence_level
    why = _not_fittable(frame, 3 if args.prefactor else 2)
    if why:
        return _per_beta_only(args, argv, path, frame, why, out)
    table, fit = fit_report(frame, law=args.law, confidence_level=level,
                            prefactor=args.prefactor, n_resamples=args.resamples)
    print(f"{PROG} fit: {path} ({len(frame)} chains, {fit.law} law, "
          f"{level:.0%} intervals)")
    cols = ["beta", "chains", "events", "censored", "mean", "mean_low", "mean_high",
            "memoryless_p", "note"]
    print(_table(table[[c for c in cols if c in table.columns]].to_dict("records")))
    b_lo, b_hi = fit.confidence_interval("slope")
    a_lo, a_hi = fit.confidence_interval("intercept")
    print(f"log E[T] = a + b·beta: b = {fit.slope:.4g} [{b_lo:.4g}, {b_hi:.4g}], "
          f"a = {fit.intercept:.4g} [{a_lo:.4g}, {a_hi:.4g}]; deviance {fit.deviance:.3g} on "
          f"{fit.df} df")
    if args.prefactor:
        c_lo, c_hi = fit.confidence_interval("prefactor")
        print(f"prefactor c·log(beta): c = {fit.prefactor:.4g} [{c_lo:.4g}, {c_hi:.4g}]; "
              f"likelihood-ratio test of c = 0: p = {fit.lrt_pvalue:.2g}")
    bound, why = theorem_bound(meta, frame)
    if bound is not None:
        from .theory import metastability_exponent

        slope = metastability_exponent(bound["c0"], bound["eps"], bound["gamma"])
        print(f"Thm 5.4 bound: exponent {slope:.4g} (c0 {bound['c0']:.4g}, eps "
              f"{bound['eps']:.4g}, gamma {bound['gamma']:g}, n {bound['n']})")
    else:
        print(f"no theorem bound drawn: {why}")
    if args.figure != "none":
        figure = Path(args.figure) if args.figure else (
            path / "arrhenius.png" if path.is_dir() else path.with_name(path.stem + ".arrhenius.png"))
        arrhenius_figure((table, fit), figure, bound=bound, confidence_level=level)
        print(f"wrote {figure}")
    if args.out:
        from .results import provenance, write_table

        write_table(table, out, {"kind": "fit", "command": shlex.join([PROG, *argv]),
                                 "data": str(path), "fit": fit.to_frame().to_dict("records"),
                                 "provenance": provenance()})
        print(f"wrote {args.out} and {args.out}.json")
    return 0


def _not_fittable(frame, params: int) -> str:
    """Why the scaling fit of ``frame`` cannot be made ("" when it can): the exponent b of
    log E[T] = a + b·beta (+ c·log beta) needs escapes at ``params`` or more betas."""
    if not {"beta", "steps", "censored"} <= set(frame.columns):
        return ""                                  # fit_report names the missing columns
    escaped = frame.loc[~frame["censored"].astype(bool) & (frame["steps"] > 0), "beta"]
    found = escaped.nunique()
    if found >= params:
        return ""
    where = "no beta" if found == 0 else f"only {found} beta ({escaped.iloc[0]:g})"
    return (f"the slope b of log E[T] = a + b·beta{' + c·log(beta)' if params == 3 else ''} "
            f"needs escapes at {params} or more betas, this table has escapes at {where}; run "
            f"`metastab passage` at more --beta values or with a larger --max-steps")


def _per_beta_only(args, argv, path, frame, why: str, out) -> int:
    """``metastab fit`` on a table without a fit: the escape statistics of each beta."""
    from .stats import DiagnosticWarning, escape_rate, exponentiality_test

    level, rows = args.confidence_level, []
    for beta, group in frame.groupby("beta", sort=True):
        with warnings.catch_warnings():          # the note column says it
            warnings.simplefilter("ignore", DiagnosticWarning)
            rate = escape_rate(group, law=args.law, confidence_level=level)
            low, high = rate.mean_interval()
            p = math.nan
            if rate.events:
                budget = group["max_steps"].to_numpy() if "max_steps" in group else None
                try:
                    p = exponentiality_test(group, law=args.law, max_steps=budget,
                                            n_resamples=args.resamples, rng=0).pvalue
                except ValueError:
                    pass
        note = ("no events: the rate is a one-sided upper bound" if not rate.events else
                "most chains censored" if rate.censored > rate.chains / 2 else "")
        rows.append({"beta": float(beta), "chains": rate.chains, "events": rate.events,
                     "censored": rate.censored, "mean": rate.mean, "mean_low": low,
                     "mean_high": high, "memoryless_p": p, "note": note})
    print(f"{PROG} fit: {path} ({len(frame)} chains, {args.law} law, {level:.0%} intervals)")
    print(_table(rows))
    print(f"no scaling fit: {why}")
    if out is not None:
        import pandas as pd

        from .results import provenance, write_table

        write_table(pd.DataFrame(rows), out, {"kind": "fit", "command": shlex.join([PROG, *argv]),
                                              "data": str(path), "fit": None, "why_no_fit": why,
                                              "provenance": provenance()})
        print(f"wrote {out} and {out}.json")
    return 0


def _cmd_study(args, argv: list[str]) -> int:
    from .studies import list_studies, run_study, study_about

    if args.list or args.name is None:
        for name in list_studies():
            about = study_about(name)
            times = "/".join(f"{about[k]:.0f} s" if k in about else "?"
                             for k in ("seconds_quick", "seconds_full"))
            print(f"{name:<18} {about.get('description', '')} [quick/full: {times}]")
        return 0
    run_study(args.name, quick=args.quick, out=args.out, config=args.config, render=args.render)
    return 0


# --------------------------------------------------------------------------- parser


def _add_common(p: argparse.ArgumentParser):
    p.add_argument("--threads", type=int, metavar="T",
                   help="numba threads (default: all cores; results do not depend on it)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr (default: on when stderr is a terminal)")


def _add_out(p, what: str = "a tidy .csv or .parquet table and a FILE.json provenance sidecar"):
    p.add_argument("--out", metavar="FILE", help=f"write {what}; checked before the run starts")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing --out FILE (default: refuse)")


def build_parser() -> argparse.ArgumentParser:
    from .demo import DEMO_BETAS, DEMO_CHAINS, DEMO_MAX_STEPS, DEMO_SEED

    parser = _Parser(
        prog=PROG, epilog=_examples("metastab demo", "metastab passage --beta 8 12 16 --seed 1 "
                                    "--out escape.csv", "metastab fit escape.csv",
                                    "metastab COMMAND --help"),
        description="Self-attention dynamics as an interacting particle system: "
        "simulate the finite-beta chain SA_P, the softmax flow and hardmax, and measure "
        "first-passage (escape) times.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    dyn = _Parser(add_help=False)
    g = dyn.add_argument_group("system")
    g.add_argument("--polytope", default="regular:5", metavar="SPEC",
                   help=f"{POLYTOPE_SPECS} (default regular:5)")
    g.add_argument("--radius", type=float, default=1.0,
                   help="scale of the vertices: the circumradius of regular:K (default 1)")
    g.add_argument("--n", type=_whole, default=None,
                   help="number of tokens (default 20; with --init file:PATH, the file's)")
    g.add_argument("--init", default=DEFAULT_INIT, metavar="SPEC",
                   help="initial tokens: shrunk:F = vertex tokens at v_a, token i >= K at "
                   "F·v_((i-K) mod K); near-vertices = Thm 5.2 (eroded dominance cones at "
                   "--beta); in-cells = vertices + uniform in K; file:PATH = a .npy/.csv/.txt "
                   f"n×d (or chains×n×d .npy) array (default {DEFAULT_INIT})")
    g = dyn.add_argument_group("dynamics")
    g.add_argument("--model", default="softmax-chain", choices=MODELS,
                   help="default softmax-chain (SA_P)")
    g.add_argument("--beta", type=float, nargs="+", metavar="BETA",
                   help=f"inverse temperature(s); several values run one after another "
                   f"(default {DEFAULT_BETA:g})")
    g.add_argument("--gamma", type=float, default=0.1, help="step size in (0, 1] (default 0.1)")
    g.add_argument("--ties", choices=("index", "point"),
                   help="hardmax tie mode (default index)")
    g.add_argument("--r", type=float, nargs="+", metavar="R",
                   help="localmax neighbour margin(s) r >= 0; several values run one after "
                   "another (no default: --model localmax needs it)")
    g.add_argument("--neighbours", choices=("additive", "relative"),
                   help="localmax neighbour rule (default additive)")
    g = dyn.add_argument_group("run")
    g.add_argument("--chains", type=_whole, default=100,
                   help="independent chains (default 100)")
    g.add_argument("--first-chain", type=_whole, default=0,
                   help="index of the first chain (default 0; chain k depends only on the seed "
                   "and k)")
    g.add_argument("--seed", type=int, help="root seed (default: fresh entropy, printed)")
    g.add_argument("--init-seed", type=int,
                   help="seed of a random polytope / initial configuration (default: from --seed)")
    _add_out(g)
    _add_common(g)

    sim = sub.add_parser("simulate", parents=[dyn], help="run chains for a number of steps",
                         description="Run independent chains for --steps steps.",
                         epilog=_examples(
                             "metastab simulate --beta 4 --steps 300 --chains 8 --seed 3",
                             "metastab simulate --polytope simplex:3 --init in-cells --n 12 "
                             "--beta 4 --steps 300 --record-every 100 --seed 3 --out traj.parquet"))
    sim.add_argument("--steps", type=_whole, default=100, help="steps (default 100)")
    sim.add_argument("--record-every", type=_whole, metavar="K",
                     help="keep the states at steps 0, K, 2K, ... and the last")
    sim.set_defaults(handler=_cmd_dynamics)

    pas = sub.add_parser("passage", parents=[dyn], help="first-passage (escape) times",
                         description="First step at which each chain meets --event; chains "
                         "still waiting after --max-steps are right-censored.",
                         epilog=_examples(
                             "metastab passage --beta 8 12 16 --chains 200 --seed 1 "
                             "--out escape.csv",
                             "metastab passage --model hardmax --event reach-vertices "
                             "--event-radius 1e-3 --chains 10 --seed 2",
                             "metastab passage --polytope regular:3 --n 9 --init shrunk:0.8 "
                             "--beta 20 30 --max-steps 1e30 --mode accelerated --seed 1"))
    pas.add_argument("--event", default="leave-hull", metavar="EVENT",
                     help=f"{', '.join(EVENTS)} (default leave-hull: groups = initial cells)")
    pas.add_argument("--event-radius", type=float, metavar="EPS",
                     help="radius of leave-hull / leave-ball / reach-vertices (default for "
                     "leave-hull and leave-ball: 2·gamma·diam(K), the smallest of Thm 5.4)")
    pas.add_argument("--vertex-radius", type=float,
                     help="reach-vertices radius for the vertex tokens (default --event-radius)")
    pas.add_argument("--diameter", type=float, help="collapse: target diameter")
    pas.add_argument("--max-steps", type=_max_steps, default=10_000,
                     help="censoring time (default 10000); with --mode accelerated any integral "
                     "value such as 1e30")
    pas.add_argument("--mode", choices=("exact", "accelerated"), default="exact",
                     help="exact: take every step (default); accelerated: softmax-chain only, draw "
                     "the number of steps in which no token leaves its group from its exact "
                     "geometric law (escape times of 1e12 steps and more, float64 step counts)")
    pas.add_argument("--merge-tol", type=float, metavar="TOL",
                     help="--mode accelerated: tokens closer than TOL (relative to the largest "
                     "coordinate of x0) to a group's point are merged onto it (default 1e-10; "
                     "0: exact coincidences only)")
    pas.set_defaults(handler=_cmd_dynamics)

    demo = sub.add_parser("demo", help="escape times grow exponentially in beta (a few seconds)",
                          description="Escape times T2 of SA_P from the clustered pentagon "
                          "at a few betas; reproducible (fixed seed).",
                          epilog=_examples("metastab demo",
                                           "metastab demo --beta 7 10 --chains 100 --out demo.csv"))
    demo.add_argument("--beta", type=float, nargs="+", default=list(DEMO_BETAS),
                      help=f"default {' '.join(f'{b:g}' for b in DEMO_BETAS)}")
    demo.add_argument("--chains", type=_whole, default=DEMO_CHAINS,
                      help=f"chains per beta (default {DEMO_CHAINS})")
    demo.add_argument("--max-steps", type=_whole, default=DEMO_MAX_STEPS,
                      help=f"censoring time (default {DEMO_MAX_STEPS})")
    demo.add_argument("--seed", type=int, default=DEMO_SEED, help=f"default {DEMO_SEED}")
    _add_out(demo, "the table (.csv or .parquet) and a FILE.json sidecar")
    _add_common(demo)
    demo.set_defaults(handler=_cmd_demo)

    bench = sub.add_parser("bench", help="token-steps/s of SA_P: numba vs NumPy (--escape: "
                           "seconds per escape, exact vs accelerated)",
                           description="Throughput of SA_P on workload W1, numba kernels beside "
                           "a vectorised NumPy chain; target ratio >= 4. With --escape: seconds "
                           "per observed escape of first_passage in exact and in accelerated "
                           "mode, and their ratio, at a few betas.",
                           epilog=_examples("metastab bench", "metastab bench --threads 1",
                                            "metastab bench --escape --beta 8 10"))
    bench.add_argument("--chains", type=_whole, default=None,
                       help="default 2048 (--escape: 60 per beta and mode)")
    bench.add_argument("--steps", type=_whole, default=500, help="default 500")
    bench.add_argument("--repeat", type=_whole, default=3, help="best of REPEAT (default 3)")
    bench.add_argument("--sizes", action="store_true",
                       help="table from n=20 to n=1024, d=64 beside NumPy, with the measured FMA "
                       "peak (metastab.bench.sizes_bench)")
    bench.add_argument("--escape", action="store_true",
                       help="seconds per escape, exact against accelerated mode "
                       "(metastab.bench.escape_bench) instead of the throughput")
    bench.add_argument("--beta", type=float, nargs="+", metavar="BETA",
                       help="--escape: the betas (default 8 10 12)")
    bench.add_argument("--exact-factor", type=float, default=10.0,
                       help="--escape: exact-mode budget in units of the accelerated mean "
                       "(default 10)")
    _add_common(bench)
    bench.set_defaults(handler=_cmd_bench)

    fit = sub.add_parser("fit", help="escape rates per beta and the exponential law in beta",
                         description="Read a first-passage table (from `metastab passage --out`) "
                         "or a sweep directory, print escape rates per beta with intervals and the "
                         "fitted law log E[T] = a + b beta, and draw the Arrhenius figure.",
                         epilog=_examples("metastab fit escape.csv",
                                          "metastab fit escape.csv --prefactor --figure none",
                                          "metastab fit data/sweeps/example"))
    fit.add_argument("data", metavar="DATA", help="a .csv/.parquet table or a sweep directory")
    fit.add_argument("--law", choices=("geometric", "exponential"), default="geometric",
                     help="escape-time law (default geometric: discrete steps)")
    fit.add_argument("--confidence-level", type=float, default=0.95, help="default 0.95")
    fit.add_argument("--prefactor", action="store_true",
                     help="add a c log(beta) term and test it (likelihood ratio)")
    fit.add_argument("--resamples", type=_whole, default=499,
                     help="resamples of the memorylessness test per beta (default 499)")
    fit.add_argument("--figure", metavar="PNG", help="figure path (default beside DATA: "
                     "NAME.arrhenius.png, or DIR/arrhenius.png); 'none' for no figure")
    _add_out(fit, "the per-beta table (.csv or .parquet) and a FILE.json sidecar")
    fit.set_defaults(handler=_cmd_fit, threads=None)

    sub.add_parser("sweep", add_help=False, help="run or resume a parameter sweep "
                   "(embedded or on Dask); see metastab sweep --help")

    study = sub.add_parser("study", help="run a reproduction study (data, figures, report)",
                           description="Run studies/NAME: compute into data/NAME, draw its "
                           "figures and write data/NAME/report.md.")
    study.add_argument("name", nargs="?", metavar="NAME", help="the study (see --list)")
    study.add_argument("--quick", action="store_true",
                       help="the reduced run (default output data/NAME/quick)")
    study.add_argument("--config", metavar="TOML", help="another config (same keys as "
                       "studies/NAME/config.toml)")
    study.add_argument("--out", metavar="DIR", help="output folder (default data/NAME)")
    study.add_argument("--list", action="store_true", help="list the studies and exit")
    study.add_argument("--render", action="store_true", help="do not compute: redo checks, "
                       "figures and report from the tables already in the output folder")
    _add_common(study)
    study.set_defaults(handler=_cmd_study)
    return parser


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``metastab`` console script; returns the exit status.

    User errors raise SystemExit(2) after one line on stderr; ``--help``/``--version`` exit 0.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    with warnings.catch_warnings():
        warnings.showwarning = _warn
        return _run(argv)


def _warn(message, category, filename, lineno, file=None, line=None):
    """Warnings as one line on stderr, like errors (no source line)."""
    sys.stderr.write(f"{PROG}: warning: {_one_line(message)}\n")


def _run(argv: list[str]) -> int:
    # the numba thread count is restored afterwards (numba is imported only by commands that run)
    saved = sys.modules["numba"].get_num_threads() if "numba" in sys.modules else None
    try:
        if argv[:1] == ["sweep"]:  # its own parser: metastab.sweep.command
            from .sweep import main as sweep_main

            return sweep_main(argv[1:])
        args = build_parser().parse_args(argv)
        if args.threads is not None:
            import numba

            limit = numba.config.NUMBA_NUM_THREADS
            if not 1 <= args.threads <= limit:
                raise UsageError(f"threads must be an integer in [1, {limit}], got {args.threads}")
            numba.set_num_threads(args.threads)
        return args.handler(args, argv)
    except KeyboardInterrupt:
        sys.stderr.write(f"\n{PROG}: interrupted\n")
        raise SystemExit(130) from None
    except USER_ERRORS as exc:
        sys.stderr.write(f"{PROG}: error: {_one_line(exc)}\n")
        raise SystemExit(2) from None
    finally:
        if "numba" in sys.modules:
            numba = sys.modules["numba"]
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS if saved is None else saved)


if __name__ == "__main__":
    sys.exit(main())
