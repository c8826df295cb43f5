"""``metastab simulate``, ``metastab passage`` and ``metastab track``: chains of one system, once
per beta (or r)."""

from __future__ import annotations

import argparse
import math
import shlex
from typing import TYPE_CHECKING, Any, cast

from . import output, system
from .exits import PROG, UsageError
from .parser import Parser, add_common, add_device, add_out, examples, max_steps, whole

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    import numpy as np
    import pandas as pd

    from ..results import FirstPassage, Run
    from ..results.track import Track
    from ..setups.polytopes import Polytope

__all__ = ["add_parsers", "run"]

# Initial configurations up to this many numbers are copied into the sidecar.
_MAX_SIDECAR_NUMBERS = 100_000


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """The ``simulate``, ``passage`` and ``track`` sub-parsers (the system flags:
    metastab.cli.system)."""
    dyn = Parser(add_help=False)
    system.add_arguments(dyn)
    g = dyn.add_argument_group("run")
    g.add_argument("--chains", type=whole, default=100, help="independent chains (default 100)")
    g.add_argument(
        "--first-chain",
        type=whole,
        default=0,
        help="index of the first chain (default 0; chain k depends only on the seed and k)",
    )
    g.add_argument("--seed", type=int, help="root seed (default: fresh entropy, printed)")
    g.add_argument(
        "--init-seed",
        type=int,
        help="seed of a random polytope / initial configuration (default: from --seed)",
    )
    add_out(g)
    add_common(g)
    add_device(g)

    sim = sub.add_parser(
        "simulate",
        parents=[dyn],
        help="run chains for a number of steps",
        description="Run independent chains for --steps steps.",
        epilog=examples(
            "metastab simulate --beta 4 --steps 300 --chains 8 --seed 3",
            "metastab simulate --polytope simplex:3 --init in-cells --n 12 "
            "--beta 4 --steps 300 --record-every 100 --seed 3 --out traj.parquet",
        ),
    )
    sim.add_argument("--steps", type=whole, default=100, help="steps (default 100)")
    sim.add_argument(
        "--record-every",
        type=whole,
        metavar="K",
        help="keep the states at steps 0, K, 2K, ... and the last",
    )
    sim.set_defaults(handler=run)

    pas = sub.add_parser(
        "passage",
        parents=[dyn],
        help="first-passage (escape) times",
        description="First step at which each chain meets --event; chains "
        "still waiting after --max-steps are right-censored.",
        epilog=examples(
            "metastab passage --beta 8 12 16 --chains 200 --seed 1 --out escape.csv",
            "metastab passage --model hardmax --event reach-vertices "
            "--event-radius 1e-3 --chains 10 --seed 2",
            "metastab passage --polytope regular:3 --n 9 --init shrunk:0.8 "
            "--beta 20 30 --max-steps 1e30 --mode accelerated --seed 1",
        ),
    )
    system.add_event_arguments(pas)
    pas.add_argument(
        "--max-steps",
        type=max_steps,
        default=10_000,
        help="censoring time (default 10000); with --mode accelerated any integral "
        "value such as 1e30",
    )
    pas.add_argument(
        "--mode",
        choices=("exact", "accelerated"),
        default="exact",
        help="exact: take every step (default); accelerated: softmax-chain only, draw "
        "the number of steps in which no token leaves its group from its exact "
        "geometric law (escape times of 1e12 steps and more, float64 step counts)",
    )
    pas.add_argument(
        "--merge-tol",
        type=float,
        metavar="TOL",
        help="--mode accelerated: tokens closer than TOL (relative to the largest "
        "coordinate of x0) to a group's point are merged onto it (default 1e-10; "
        "0: exact coincidences only)",
    )
    pas.set_defaults(handler=run)

    trk = sub.add_parser(
        "track",
        parents=[dyn],
        help="merge times, plateau durations and cluster observables",
        description="Run independent chains for --steps steps, counting each chain's "
        "clusters (components of the graph cos(x_i, x_j) >= 1 - DELTA) after every step. "
        "--out writes the plateaus (one row per chain and plateau: k, start, end = the "
        "merge that ends it, censored at --steps), ready for `metastab fit --plateau K`; "
        "--observables writes the cluster count, clustered-pair fraction, pair (1, 2) and "
        "energy at the recording times (with --order-parameters, for the sphere models, also "
        "the order parameters m1, m2).",
        epilog=examples(
            "metastab track --polytope regular:6 --init uniform --n 12 --beta 4 8 "
            "--steps 2000 --seed 1 --out plateaus.csv",
            "metastab fit plateaus.csv --plateau 2",
        ),
    )
    trk.add_argument("--steps", type=whole, default=100, help="steps (default 100)")
    trk.add_argument(
        "--delta",
        type=float,
        default=1e-3,
        help="a pair is clustered when its cosine is >= 1 - DELTA (default 1e-3)",
    )
    trk.add_argument(
        "--record-every",
        type=whole,
        metavar="K",
        help="observables at steps 0, K, 2K, ... and the last (default: the first and last)",
    )
    trk.add_argument(
        "--order-parameters",
        action="store_true",
        help="sphere models: also record the order parameters m1, m2 (0 at the uniform state, "
        "1 at one cluster) in the observables",
    )
    trk.add_argument(
        "--observables",
        metavar="FILE",
        help="write the observables at the recording times (.csv or .parquet, + FILE.json)",
    )
    trk.set_defaults(handler=run)


def _diameters(final: np.ndarray) -> np.ndarray:
    """The diameter max_ij |x_i − x_j| of each configuration, over blocks of rows so that the
    pairwise distances never take more than about 32 MiB at a time."""
    import numpy as np
    from scipy.spatial.distance import cdist

    out = np.zeros(len(final))
    for c, x in enumerate(final):
        rows = max(1, 2**22 // len(x))
        for i in range(0, len(x), rows):
            out[c] = max(out[c], cdist(x[i : i + rows], x).max())
    return out


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """``metastab simulate``, ``metastab passage`` and ``metastab track``.

    The header and the seed are printed first, each row as soon as its run finishes; on Ctrl-C
    the finished runs are still written to ``--out``, with ``"interrupted": true`` in the sidecar,
    and so is a first passage under way, up to the step it reached (its ``max_steps`` then).
    """
    import numpy as np

    from ..engine import first_passage, merge_tolerance, simulate, track
    from ..exceptions import Interrupted
    from ..results.track import Track

    passage = args.command == "passage"
    tracking = args.command == "track"
    mode = getattr(args, "mode", "exact")
    merge_tol = getattr(args, "merge_tol", None)
    if merge_tol is not None and mode != "accelerated":
        raise UsageError(
            f"merge-tol: --merge-tol applies to --mode accelerated only, "
            f"got --merge-tol {merge_tol:g}"
        )
    if passage and mode == "exact" and not isinstance(args.max_steps, int):
        raise UsageError(
            f"max-steps: --mode exact needs an integer below 2^63, got "
            f"{args.max_steps:g} (--mode accelerated takes any integral value)"
        )
    system.complete(args)
    out = output.out_path(args.out, args.overwrite, args.mkdir)
    observed = output.out_path(args.observables, args.overwrite, args.mkdir) if tracking else None
    if tracking and not (math.isfinite(args.delta) and 0 < args.delta <= 2):
        raise UsageError(f"delta must be in (0, 2], got {args.delta!r}")
    seed = output.seed(args.seed, "seed")
    init_seed = output.seed(args.init_seed, "init-seed") if args.init_seed is not None else None
    # The polytope and the configuration get their own streams of the init seed (the run seed's
    # child 1 by default), so the configuration at one β does not depend on the other βs.
    base = (
        np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key + (1,))
        if init_seed is None
        else init_seed.sequence
    )

    def init_rng(k: int) -> np.random.Generator:
        return np.random.default_rng(
            np.random.SeedSequence(base.entropy, spawn_key=tuple(base.spawn_key) + (k,))
        )

    polytope = system.polytope(args, init_rng(0))
    models = system.models(args)
    starts = [system.initial(args, polytope, model, init_rng(1)) for model in models]
    events = (
        [system.event(args, polytope, model, x0) for model, x0 in zip(models, starts)]
        if passage
        else [None] * len(models)
    )
    tol = merge_tolerance(merge_tol) if mode == "accelerated" else None

    n = starts[0].shape[-2]
    space = "unit sphere" if polytope is None else polytope.name
    step = f"dt {models[0].dt:g}" if hasattr(models[0], "dt") else f"gamma {args.gamma:g}"
    what = f"{models[0].kind}, {step}, {space}, n {n}, init {args.init}"
    if passage:
        event0 = events[0]
        if event0 is None:
            raise RuntimeError("a first-passage command built no event")
        what += (
            f", event {event0.kind}"
            + "".join(
                f" {k} {getattr(event0, k):.6g}"
                for k in ("radius", "vertex_radius", "diameter", "level")
                if isinstance(getattr(event0, k, None), float)
            )
            + (f" degree {event0.degree}" if hasattr(event0, "degree") else "")
        )
        budget = args.max_steps
        what += f", max steps {budget if isinstance(budget, int) else f'{budget:g}'}"
        if mode == "accelerated":
            what += f", mode accelerated (merge tol {tol:g})"
    print(f"{PROG} {args.command}: {what}")
    hint = "" if args.seed is not None else f"  (no --seed given: --seed {seed.entropy} repeats it)"
    print(f"seed {seed.entropy}{hint}", flush=True)

    first = (
        ["beta"]
        if math.isfinite(getattr(models[0], "beta", math.inf))
        else ["r"]
        if isinstance(getattr(models[0], "r", None), float)
        else []
    )
    columns = first + (
        ["chains", "events", "absorbed", "censored", "sample_median_T", "mean_T", "wall_s"]
        if passage
        else ["chains", "steps", "k0", "k_end", "merges", "median_first_merge", "wall_s"]
        if tracking
        else ["chains", "steps", "states_kept", "median_diameter", "wall_s"]
    )
    show = None
    progress = output.progress(args)
    frames: list[pd.DataFrame] = []
    observations: list[pd.DataFrame] = []
    results: list[FirstPassage | Run | Track] = []

    def save(
        path: Path, tables: list[pd.DataFrame], interrupted: bool = False, kind: str | None = None
    ) -> None:
        """Write ``tables`` of the finished runs to ``path`` with the sidecar."""
        _write_runs(
            path,
            argv,
            polytope,
            args,
            base,
            results,
            starts,
            tables,
            mode,
            interrupted=interrupted,
            kind=kind,
        )

    def record(model: Any, res: FirstPassage | Run | Track, row: dict, show: Any) -> Any:
        """Keep a finished run's tables and print its row (once recorded: a Ctrl-C after a row
        appears saves that row); returns the table printer."""
        row.update(
            beta=getattr(model, "beta", None),
            r=getattr(model, "r", None),
            wall_s=res.provenance["wall_seconds"],
        )
        tables = [res.to_frame()]
        if isinstance(res, Track) and observed is not None:
            tables.append(res.observables_frame())
        for frame in tables:
            frame["polytope"], frame["init"], frame["n"] = space, args.init, n
            frame["seed"] = str(seed.entropy)
        frames.append(tables[0])
        observations.extend(tables[1:])
        results.append(res)
        show = show or output.Rows(columns)
        show(row)
        return show

    try:
        for model, x0, event in zip(models, starts, events):
            res: FirstPassage | Run | Track  # narrowed by each branch's assignment
            if tracking:
                res = track(
                    model,
                    x0,
                    steps=args.steps,
                    delta=args.delta,
                    chains=args.chains,
                    rng=seed,
                    record_every=args.record_every,
                    order_parameters=args.order_parameters,
                    progress=progress,
                    first_chain=args.first_chain,
                )
                row = _track_row(res)
            elif event is not None:  # passage
                res = first_passage(
                    model,
                    x0,
                    event,
                    max_steps=args.max_steps,
                    chains=args.chains,
                    rng=seed,
                    progress=progress,
                    first_chain=args.first_chain,
                    mode=mode,
                    merge_tol=merge_tol,
                    device=args.device,
                )
                row = _passage_row(res)
            else:
                res = simulate(
                    model,
                    x0,
                    steps=args.steps,
                    chains=args.chains,
                    rng=seed,
                    record_every=args.record_every,
                    progress=progress,
                    first_chain=args.first_chain,
                    device=args.device,
                )
                row = {
                    "chains": res.chains,
                    "steps": res.steps,
                    "states_kept": 1 if res.times is None else len(res.times),
                    "median_diameter": float(np.median(_diameters(res.final))),
                }
            show = record(model, res, row, show)
    except KeyboardInterrupt as exc:
        notes = []  # what was saved: said once, by the command's "interrupted" line
        partial = cast("FirstPassage", exc.result) if isinstance(exc, Interrupted) else None
        if partial is not None:  # the run under way, up to the step it reached
            record(models[len(results)], partial, _passage_row(partial), show)
        if out is not None and results:
            save(out, frames, interrupted=True)
            cut = f" (the last up to step {partial.max_steps})" if partial is not None else ""
            notes.append(
                f"wrote the {len(results)} finished of {len(models)} runs{cut} to {out} and "
                f"{out}.json"
            )
        if observed is not None and observations:
            save(observed, observations, interrupted=True, kind="observables")
            notes.append(f"their observables in {observed}")
        raise KeyboardInterrupt("; ".join(notes)) from None
    if passage:
        print(
            "T = first step at which the event holds; absorbed = chains stopped where the "
            "event is out of reach; sample_median_T = median of T over the chains that met it "
            "(metastab fit's median is the fitted law's); mean_T = total observed steps of the "
            "chains not absorbed / events (censored MLE of a geometric mean)"
        )
    if tracking:
        print(
            "k0, k_end = median number of clusters at step 0 and at the last step; merges = "
            "mean number of plateaus ended per chain; median_first_merge over the chains "
            "with a merge"
        )
    if out is not None:
        save(out, frames)
        print(f"wrote {out} and {out}.json")
    if observed is not None:
        save(observed, observations, kind="observables")
        print(f"wrote {observed} and {observed}.json")
    return 0


def _track_row(res: Track) -> dict:
    """The printed row of one ``track`` run."""
    import numpy as np

    plateaus = res.to_frame()
    first = plateaus[plateaus["start"] == 0]
    counts = res.observables[:, :, 0]
    return {
        "chains": res.chains,
        "steps": res.steps,
        "k0": float(np.median(counts[:, 0])),
        "k_end": float(np.median(counts[:, -1])),
        "merges": float((~plateaus["censored"]).sum() / res.chains),
        "median_first_merge": (
            float(first.loc[~first["censored"], "end"].median())
            if (~first["censored"]).any()
            else math.nan
        ),
    }


def _passage_row(res: FirstPassage) -> dict:
    """The printed row of a first passage (escape_summary, named as the table's columns)."""
    from ..stats import escape_summary

    names = {"escapes": "events", "median_escape": "sample_median_T", "mean_escape": "mean_T"}
    return {names.get(k, k): v for k, v in escape_summary(res).items()}


def _write_runs(
    out: Path,
    argv: Sequence[str],
    polytope: Polytope,
    args: argparse.Namespace,
    base: np.random.SeedSequence,
    results: Sequence[FirstPassage | Run | Track],
    starts: list[np.ndarray],
    frames: list[pd.DataFrame],
    mode: str,
    *,
    interrupted: bool = False,
    kind: str | None = None,
) -> None:
    """The table of the finished runs and its sidecar (command, polytope, seeds, runs, x0)."""
    import pandas as pd

    from ..results import write_table

    passage = args.command == "passage"
    kinds = {"passage": "first-passage", "track": "plateaus", "simulate": "run"}
    meta = {
        "kind": kind or kinds[args.command],
        "command": shlex.join([PROG, *argv]),
        "polytope": None if polytope is None else polytope.to_dict(),
        "init": args.init,
        "init_seed": {"entropy": str(base.entropy), "spawn_key": list(base.spawn_key)},
        "runs": [r.metadata() for r in results],
    }
    if interrupted:
        meta["interrupted"] = True
        meta["note"] = (
            f"interrupted: {len(results)} of the requested runs are in the table (a run cut "
            f"short by the interrupt has the step it reached as its max_steps); the others are "
            f"missing"
        )
    if passage:  # each run's provenance also records mode and merge_tol when accelerated
        meta["mode"] = mode
        meta["merge_tol"] = results[0].provenance.get("merge_tol")
    starts = starts[: len(results)]
    if sum(x.size for x in starts) <= _MAX_SIDECAR_NUMBERS:  # one per run, as run
        meta["x0"] = [x.tolist() for x in starts]
    write_table(pd.concat(frames, ignore_index=True), out, meta)
