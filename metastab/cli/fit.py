"""``metastab fit``: escape rates per beta and the law log E[T] = a + b beta of a first-passage
table or a sweep directory."""

from __future__ import annotations

import argparse
import shlex
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from . import output
from .exits import PROG, UsageError
from .parser import add_out, examples, whole

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["add_parser", "run", "theorem_bound"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The ``fit`` sub-parser."""
    fit = sub.add_parser(
        "fit",
        help="escape rates per beta and the exponential law in beta",
        description="Read a first-passage table (from `metastab passage --out`) "
        "or a sweep directory, print escape rates per beta with intervals and the "
        "fitted law log E[T] = a + b beta, and draw the Arrhenius figure.",
        epilog=examples(
            "metastab fit escape.csv",
            "metastab fit escape.csv --prefactor --figure none",
            "metastab fit data/sweeps/example",
            "metastab fit data/sweeps/example --by seed",
            "metastab fit plateaus.csv --plateau 2",
        ),
    )
    fit.add_argument("data", metavar="DATA", help="a .csv/.parquet table or a sweep directory")
    fit.add_argument(
        "--law",
        choices=("geometric", "exponential"),
        default="geometric",
        help="escape-time law (default geometric: discrete steps)",
    )
    fit.add_argument("--confidence-level", type=float, default=0.95, help="default 0.95")
    fit.add_argument(
        "--prefactor",
        action="store_true",
        help="add a c log(beta) term and test it (likelihood ratio)",
    )
    fit.add_argument(
        "--resamples",
        type=whole,
        default=499,
        help="resamples of the memorylessness test per beta (default 499)",
    )
    fit.add_argument(
        "--figure",
        metavar="PNG",
        help="figure path (default beside DATA: "
        "NAME.arrhenius.png, or DIR/arrhenius.png); 'none' for no figure",
    )
    fit.add_argument(
        "--plateau",
        type=int,
        metavar="K",
        help="a plateau table (`metastab track --out`): fit the durations of the plateau at K "
        "clusters",
    )
    fit.add_argument(
        "--by",
        nargs="+",
        metavar="COL",
        help="fit each value of these columns apart (e.g. --by point: each grid point of a "
        "sweep; --by seed: each seed's replicate across beta); by default the seeds of a sweep's "
        "point are pooled and the fit runs across beta",
    )
    add_out(fit, "the per-beta table (.csv or .parquet) and a FILE.json sidecar")
    fit.set_defaults(handler=run, threads=None)


def _read_first_passage(path: Path) -> tuple[pd.DataFrame, dict]:
    """A first-passage table (CSV/parquet with its sidecar) or a sweep directory."""
    from ..results import read_table

    if path.is_dir():
        from ..sweep import read_sweep

        return read_sweep(path)
    if not path.exists():
        raise FileNotFoundError(f"DATA: no such file or directory: {str(path)!r}")
    return read_table(path)


def theorem_bound(meta: dict, frame: object) -> tuple[dict | None, str]:
    """Arguments of :func:`metastab.theory.exit_time_bound` for a table written by
    ``metastab passage`` with a leave-hull event and a scalar gamma, or (None, why not).

    The bound is returned only where Thm 5.4's hypotheses on K hold (docs: models#statements-fw:
    equinorm vertices, acute cones, c0 > 0, ε/γ >= 2 d(K)): outside them it is no bound at all,
    and drawing it beside the data would compare them with nothing."""
    import numpy as np

    from ..setups.polytopes import Polytope

    if meta.get("kind") == "plateaus":
        return None, "plateau durations (Thm 5.4 bounds exit times, not merges)"
    runs = meta.get("runs") or []
    if not runs or "polytope" not in meta or not meta.get("x0"):
        return None, "the sidecar lacks the polytope, the runs or x0"
    model, event = runs[0].get("model", {}), runs[0].get("event", {})
    if event.get("kind") != "leave-hull":
        return None, f"the event is {event.get('kind')!r}, not leave-hull (Thm 5.4)"
    if not isinstance(model.get("gamma"), (int, float)):
        return None, "gamma is not a scalar"
    P = Polytope.from_dict(meta["polytope"])
    failed = [
        name
        for name, holds in (
            ("equinorm vertices", P.is_equinorm()),
            ("acute cones", P.has_acute_cones()),
            ("c0 > 0", P.c0 > 0),
        )
        if not holds
    ]
    if failed:
        return None, f"the polytope lacks {' and '.join(failed)}: Thm 5.4 does not apply"
    n = int(np.shape(meta["x0"][0])[-2])
    bound = dict(
        c0=P.c0, eps=float(event["radius"]), gamma=float(model["gamma"]), n=n, diameter=P.diameter
    )
    if bound["eps"] / bound["gamma"] < 2 * P.diameter:
        return None, (
            f"eps/gamma = {bound['eps'] / bound['gamma']:.4g} < 2 d(K) = "
            f"{2 * P.diameter:.4g}: Thm 5.4 does not apply"
        )
    return bound, ""


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """Run ``metastab fit``; returns the exit status."""
    import pandas as pd

    out = output.out_path(args.out, args.overwrite, args.mkdir)
    path = Path(args.data)
    frame, meta = _read_first_passage(path)
    frame = _plateaus(frame, meta, args.plateau)
    groups = _split(frame, args.by, path)
    tables, fits = [], []
    for key, group in groups:
        table, fit, why = _fit_one(args, path, meta, key, group)
        tables.append(table.assign(**key))
        fits.append({"by": key, "fit": fit, **({"why_no_fit": why} if why else {})})
    if out is not None:
        from ..results import provenance, write_table

        write_table(
            pd.concat(tables, ignore_index=True),
            out,
            {
                "kind": "fit",
                "command": shlex.join([PROG, *argv]),
                "data": str(path),
                **({k: v for k, v in fits[0].items() if k != "by"} if not args.by else {}),
                **({"by": args.by, "fits": fits} if args.by else {}),
                "provenance": provenance(),
            },
        )
        print(f"wrote {out} and {out}.json")
    return 0


# per-chain columns, and the grid's replicate columns (a sweep's point index and seed axis),
# which the fit pools unless --by names them
_PER_CHAIN = ("chain", "steps", "censored", "absorbed", "max_steps")
_REPLICATES = ("point", "seed")


def _split(
    frame: pd.DataFrame, by: list[str] | None, path: Path
) -> list[tuple[dict, pd.DataFrame]]:
    """[(the --by values, the chains)]: one group per value of the --by columns, each with the
    replicate columns dropped (their chains pooled); a setting left varying is an error."""
    varying = [
        c
        for c in frame.columns
        if c not in (*_PER_CHAIN, "beta") and frame[c].nunique(dropna=False) > 1
    ]
    by = by or []
    for c in by:
        if c not in varying:
            raise UsageError(
                f"by: --by {c}: not a column that varies in {path} besides beta; "
                f"--by takes {varying or 'nothing here (nothing varies)'}"
            )
    left = [c for c in varying if c not in by and c not in _REPLICATES]
    if left:
        raise UsageError(
            f"by: the columns {left} vary in {path} besides beta: fit each setting apart with "
            f"--by {' '.join(left)}"
        )
    pooled = [c for c in _REPLICATES if c in frame.columns and c not in by]
    if not by:
        return [({}, frame.drop(columns=pooled))]
    return [
        (dict(zip(by, (v.item() if hasattr(v, "item") else v for v in values))), g)
        for values, g in frame.drop(columns=pooled).groupby(by, sort=True)
    ]


def _fit_one(
    args: argparse.Namespace, path: Path, meta: dict, key: dict, frame: pd.DataFrame
) -> tuple[pd.DataFrame, list | None, str]:
    """Print (and draw) the fit of one group; (per-beta table, fit records or None, why not)."""
    from ..plotting import arrhenius_figure
    from ..stats import fit_report

    level = args.confidence_level
    label = "".join(f" [{k}={v}]" for k, v in key.items())
    head = f"{PROG} fit: {path}{label} ({len(frame)} chains, {args.law} law, {level:.0%} intervals)"
    why = _not_fittable(frame, 3 if args.prefactor else 2)
    if why:
        return _per_beta_only(args, head, frame, why), None, why
    table, fit = fit_report(
        frame,
        law=args.law,
        confidence_level=level,
        prefactor=args.prefactor,
        n_resamples=args.resamples,
    )
    print(head)
    print(output.table(table[[c for c in _COLUMNS if c in table.columns]].to_dict("records")))
    print(_legend(fit.law))
    b_lo, b_hi = fit.confidence_interval("slope")
    a_lo, a_hi = fit.confidence_interval("intercept")
    print(
        f"log E[T] = a + b·beta: b = {fit.slope:.4g} [{b_lo:.4g}, {b_hi:.4g}], "
        f"a = {fit.intercept:.4g} [{a_lo:.4g}, {a_hi:.4g}]; deviance {fit.deviance:.3g} on "
        f"{fit.df} df"
    )
    if args.prefactor:
        c_lo, c_hi = fit.confidence_interval("prefactor")
        print(
            f"prefactor c·log(beta): c = {fit.prefactor:.4g} [{c_lo:.4g}, {c_hi:.4g}]; "
            f"likelihood-ratio test of c = 0: p = {fit.lrt_pvalue:.2g}"
        )
    bound, no_bound = theorem_bound(meta, frame)
    if bound is not None:
        from ..theory import metastability_exponent

        slope = metastability_exponent(bound["c0"], bound["eps"], bound["gamma"])
        print(
            f"Thm 5.4 bound: exponent {slope:.4g} (c0 {bound['c0']:.4g}, eps "
            f"{bound['eps']:.4g}, gamma {bound['gamma']:g}, n {bound['n']})"
        )
    else:
        print(f"no theorem bound drawn: {no_bound}")
    if args.figure != "none":
        name = "arrhenius" + "".join(f".{k}={v}" for k, v in key.items())
        default = (
            path / f"{name}.png" if path.is_dir() else path.with_name(f"{path.stem}.{name}.png")
        )
        figure = Path(args.figure) if args.figure else default
        if args.figure and key:  # one figure per group beside the one named
            figure = figure.with_name(figure.stem + name[len("arrhenius") :] + figure.suffix)
        arrhenius_figure(
            (table, fit), figure, bound=bound, confidence_level=level, no_bound=no_bound
        )
        print(f"wrote {figure}")
    return table, fit.to_frame().to_dict("records"), ""


_COLUMNS = [
    "beta",
    "chains",
    "events",
    "absorbed",
    "censored",
    "mean",
    "mean_low",
    "mean_high",
    "interval",
    "memoryless_p",
    "note",
]


def _legend(law: str) -> str:
    """What the per-beta columns are: the fitted law's statistics, not the sample's."""
    from ..stats.rates import MEMORYLESS_LEVEL

    return (
        f"mean = E[T] of the fitted {law} law (metastab passage's mean_T); interval = the "
        f"method of its interval: exact, or bootstrap (law-free) where the memorylessness test "
        f"rejects the law (p <= {MEMORYLESS_LEVEL:g}); the median columns of --out are the "
        f"law's too, not the sample median of "
        f"the chains that met the event (metastab passage's sample_median_T)"
    )


def _plateaus(frame: pd.DataFrame, meta: dict, k: int | None) -> pd.DataFrame:
    """The durations of the plateau at ``k`` clusters of a plateau table; other tables as read."""
    from ..results.track import plateau_durations

    plateaus = meta.get("kind") == "plateaus"
    if not plateaus:
        if k is not None:
            raise UsageError(f"plateau: --plateau needs a plateau table, got {meta.get('kind')!r}")
        return frame
    if k is None:
        found = sorted(int(v) for v in frame["k"].unique())
        raise UsageError(f"plateau: a plateau table: choose one with --plateau K (K in {found})")
    try:
        return plateau_durations(frame, k)
    except ValueError as exc:
        raise UsageError(f"plateau: {exc}") from None


def _not_fittable(frame: pd.DataFrame, params: int) -> str:
    """Why the scaling fit of ``frame`` cannot be made ("" when it can): the exponent b of
    log E[T] = a + b·beta (+ c·log beta) needs escapes at ``params`` or more betas."""
    if not {"beta", "steps", "censored"} <= set(frame.columns):
        return ""  # fit_report names the missing columns
    met = ~frame["censored"].astype(bool) & (frame["steps"] > 0)
    if "absorbed" in frame:
        met &= ~frame["absorbed"].astype(bool)
    escaped = frame.loc[met, "beta"]
    found = escaped.nunique()
    if found >= params:
        return ""
    where = "no beta" if found == 0 else f"only {found} beta ({escaped.iloc[0]:g})"
    return (
        f"the slope b of log E[T] = a + b·beta{' + c·log(beta)' if params == 3 else ''} "
        f"needs escapes at {params} or more betas, this table has escapes at {where}; run "
        f"`metastab passage` at more --beta values or with a larger --max-steps"
    )


def _per_beta_only(
    args: argparse.Namespace, head: str, frame: pd.DataFrame, why: str
) -> pd.DataFrame:
    """``metastab fit`` on a table without a fit: the escape statistics of each beta."""
    import pandas as pd

    from ..exceptions import DiagnosticWarning
    from ..stats import escape_rate

    level, rows = args.confidence_level, []
    for beta, group in frame.groupby("beta", sort=True):
        with warnings.catch_warnings():  # the note column says it
            warnings.simplefilter("ignore", DiagnosticWarning)
            rate = escape_rate(
                group, law=args.law, confidence_level=level, n_resamples=args.resamples
            )
        low, high = rate.mean_interval()
        note = (
            "no events: the rate is a one-sided upper bound"
            if not rate.events
            else "most chains censored"
            if rate.censored > rate.chains / 2
            else ""
        )
        rows.append(
            {
                "beta": float(beta),
                "chains": rate.chains,
                "events": rate.events,
                "absorbed": int(group["absorbed"].sum()) if "absorbed" in group else 0,
                "censored": rate.censored,
                "mean": rate.mean,
                "mean_low": low,
                "mean_high": high,
                "interval": rate.method,
                "memoryless_p": rate.memoryless_p,
                "note": note,
            }
        )
    print(head)
    print(output.table(rows))
    print(_legend(args.law))
    print(f"no scaling fit: {why}")
    return pd.DataFrame(rows)
