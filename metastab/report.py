"""Checks tables, the verdict rule, and the helpers that render the studies' reports.

A study states what it tests as a **checks table** (``checks.csv``), one row per criterion, with
the columns :data:`COLUMNS`:

- ``criterion``: a short unique name;
- ``role``: ``claim`` (the source's statement as printed), ``correction`` (the statement with one
  stated change: a hypothesis added, a constant or a compared quantity replaced; its criterion is
  ``CLAIM/NAME``, naming the claim it corrects), ``control`` (a
  check of the instrument, e.g. a negative control that must be detected) or ``context`` (reported
  beside the claims and never counted: a check that cannot fail in practice, agreement with a
  re-implementation of the same rule, a measured fact the source does not state);
- ``statement``: what the source claims, with its equation or figure;
- ``measured``, ``low``, ``high``: the measured number and its interval (where there is one);
- ``threshold``, ``rule``: what the number is compared with and how (in words);
- ``pass``: ``true``, ``false`` or ``NA`` (not testable here, or ``context``);
- ``source``: the reference and where in it.

**The verdict** (:func:`verdict`) is a pure function of that table, the same for every study:

1. ``not tested`` if no ``claim`` row has a pass value, or if any ``control`` row fails (then the
   checks could not have told a true claim from a false one);
2. ``holds`` if every tested ``claim`` row passes;
3. ``holds with a correction`` if every failing ``claim`` row has at least one tested
   correction (``CLAIM/...``) and every tested correction of a failing claim passes;
4. ``fails`` otherwise.

Reports are rendered from the tables only; :func:`verdict_line` writes the report's ``Verdict:``
line from the checks table, so that no study writes a verdict by hand.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    import os
    from collections.abc import Iterable
    from types import ModuleType
    from typing import IO

    from .engine.chains import Model
    from .rng import RNGLike, SeedLike
    from .setups.polytopes import Polytope

__all__ = [
    "COLUMNS",
    "ROLES",
    "VERDICTS",
    "check",
    "checks_frame",
    "read_checks",
    "verdict",
    "verdict_line",
    "checks_markdown",
    "write_checks",
    "fmt",
    "fmt_p",
    "ci",
    "md_table",
    "spread",
    "read_tables",
    "sibling",
    "study_meta",
    "md_cell",
    "polytope_from_spec",
    "checks_config",
    "recorded",
    "quantile_band",
]

COLUMNS = (
    "criterion",
    "role",
    "statement",
    "measured",
    "low",
    "high",
    "threshold",
    "rule",
    "pass",
    "source",
)
ROLES = ("claim", "correction", "control", "context")
VERDICTS = ("holds", "holds with a correction", "fails", "not tested")
_PASS = {True: "true", False: "false", None: "NA"}


def check(
    criterion: str,
    role: str,
    statement: str,
    *,
    measured: float = math.nan,
    low: float = math.nan,
    high: float = math.nan,
    threshold: float = math.nan,
    rule: str = "",
    passed: bool | None = None,
    source: str = "",
) -> dict:
    """One row of a checks table (see the module docstring for the columns).

    ``passed`` is True, False or None (not testable: written ``NA``); a ``context`` row is never
    counted, so its pass value must be None.

    Raises
    ------
    ValueError
        If ``role`` is not one of :data:`ROLES`, or a ``context`` row carries a pass value.
    """
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, got {role!r}")
    if (role == "correction") != ("/" in criterion):
        raise ValueError(
            f"check {criterion!r}: a correction, and only a correction, is named "
            "CLAIM/NAME after the claim it corrects"
        )
    if passed is not None:
        passed = bool(passed)
        if role == "context":
            raise ValueError(
                f"check {criterion!r}: a context row is not counted, passed must be "
                f"None, got {passed}"
            )
    return {
        "criterion": criterion,
        "role": role,
        "statement": statement,
        "measured": float(measured),
        "low": float(low),
        "high": float(high),
        "threshold": float(threshold),
        "rule": rule,
        "pass": _PASS[passed],
        "source": source,
    }


def checks_frame(rows: list[dict]) -> pd.DataFrame:
    """The checks table of ``rows`` (from :func:`check`), columns :data:`COLUMNS`.

    Raises
    ------
    ValueError
        If two rows share a criterion.
    """
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    dup = frame["criterion"][frame["criterion"].duplicated()]
    if not dup.empty:
        raise ValueError(f"criterion names must be unique, repeated: {sorted(set(dup))}")
    return frame


def read_checks(path: str | os.PathLike[str] | IO[str]) -> pd.DataFrame:
    """A ``checks.csv`` as written by a study (``pass`` kept as the strings true/false/NA)."""
    frame = pd.read_csv(
        path,
        dtype={"pass": str, "rule": str, "statement": str, "source": str},
        keep_default_na=False,
        na_values={c: [""] for c in ("measured", "low", "high", "threshold")},
    )
    missing = set(COLUMNS) - set(frame.columns)
    if missing:
        raise ValueError(
            f"{path}: a checks table needs the columns {COLUMNS}, missing {sorted(missing)}"
        )
    return frame[list(COLUMNS)]


def _passes(checks: pd.DataFrame, role: str) -> pd.Series:
    values = checks.loc[checks["role"] == role, "pass"].astype(str).str.lower()
    bad = set(values) - {"true", "false", "na"}
    if bad:
        raise ValueError(f"pass must be true, false or NA, got {sorted(bad)}")
    return values[values != "na"] == "true"


def verdict(checks: pd.DataFrame) -> str:
    """The verdict of a checks table: ``holds``, ``holds with a correction``, ``fails`` or
    ``not tested`` (the rule is in the module docstring).

    >>> rows = [check("law", "claim", "x", passed=True), check("rate", "claim", "y", passed=False),
    ...         check("rate/fixed", "correction", "y'", passed=True)]
    >>> verdict(checks_frame(rows[:1])), verdict(checks_frame(rows))
    ('holds', 'holds with a correction')
    >>> verdict(checks_frame(rows[1:2])), verdict(checks_frame([check("c", "context", "z")]))
    ('fails', 'not tested')
    """
    bad = set(checks["role"]) - set(ROLES)
    if bad:
        raise ValueError(f"role must be one of {ROLES}, got {sorted(bad)}")
    claims, fixes, controls = (_passes(checks, r) for r in ("claim", "correction", "control"))
    if claims.empty or not controls.all():
        return "not tested"
    if claims.all():
        return "holds"
    names = checks["criterion"].astype(str)
    for claim in names[claims.index[~claims]]:
        mine = fixes[names[fixes.index].str.startswith(claim + "/")]
        if mine.empty or not mine.all():
            return "fails"
    return "holds with a correction"


def verdict_line(checks: pd.DataFrame) -> str:
    """The report's ``Verdict: ...`` line: :func:`verdict` and the counts behind it, naming the
    failing claims and the corrections that carry a ``holds with a correction``."""
    v = verdict(checks)
    claims = _passes(checks, "claim")
    parts = [f"{int(claims.sum())} of {len(claims)} tested claims pass"]
    names = checks.loc[checks["role"] == "claim", "criterion"]
    failed = names[claims.index[~claims]].tolist() if not claims.empty else []
    if failed:
        parts.append("failing: " + ", ".join(f"`{c}`" for c in failed))
    fixes = _passes(checks, "correction")
    if not fixes.empty:
        parts.append(f"{int(fixes.sum())} of {len(fixes)} corrections pass")
    controls = _passes(checks, "control")
    if not controls.empty:
        parts.append(f"{int(controls.sum())} of {len(controls)} controls pass")
    untested = int(
        ((checks["role"] == "claim") & (checks["pass"].astype(str).str.lower() == "na")).sum()
    )
    if untested:
        parts.append(f"{untested} claims not testable here")
    return f"Verdict: {v} ({'; '.join(parts)})."


def checks_markdown(checks: pd.DataFrame) -> str:
    """The checks table as markdown, one row per criterion."""
    head = [
        "| criterion | role | statement | measured | interval | threshold | rule | pass | source |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    body = []
    for _, r in checks.iterrows():
        interval = (
            ci(r["low"], r["high"], 5) if not (pd.isna(r["low"]) and pd.isna(r["high"])) else "–"
        )
        body.append(
            "| "
            + " | ".join(
                md_cell(str(v))
                for v in (
                    f"`{r['criterion']}`",
                    r["role"],
                    r["statement"],
                    fmt(r["measured"], 5),
                    interval,
                    fmt(r["threshold"], 5),
                    r["rule"],
                    str(r["pass"]),
                    r["source"],
                )
            )
            + " |"
        )
    return "\n".join(head + body)


def md_cell(text: str) -> str:
    """Text for a markdown table cell: a literal '|' would end the cell."""
    return text.replace("|", "\\|")


def fmt(x: float | None, digits: int = 3) -> str:
    """A number for prose: ``digits`` significant digits, scientific notation outside
    [1e-3, 1e5), '–' for a missing value.

    >>> fmt(1.23456), fmt(2.5e-7), fmt(float("nan")), fmt(3)
    ('1.23', '2.50e-07', '–', '3')
    """
    if x is None or (isinstance(x, (float, np.floating)) and math.isnan(x)):
        return "–"
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    x = float(x)
    if x != 0 and (abs(x) >= 1e5 or abs(x) < 1e-3):
        return f"{x:.{digits - 1}e}"
    return f"{x:.{digits}g}"


def fmt_p(p: float, resamples: int | None = None) -> str:
    """A p-value; a resampling p at its floor 1/(resamples + 1) is written '≤ floor'.

    >>> fmt_p(0.002, 499), fmt_p(0.31, 499), fmt_p(0.004)
    ('≤ 0.002', '0.31', '0.004')
    """
    if resamples is not None and p <= 1.0 / (resamples + 1) * (1 + 1e-9):
        return f"≤ {fmt(1.0 / (resamples + 1), 2)}"
    return fmt(p, 2)


def ci(low: float, high: float, digits: int = 3) -> str:
    """An interval ``[low, high]`` for prose."""
    return f"[{fmt(low, digits)}, {fmt(high, digits)}]"


def wider(row: pd.Series | dict, a: str, b: str) -> tuple[float, float, str]:
    """The wider of two intervals ``(row[a_low], row[a_high])`` (a profile-likelihood interval)
    and ``(row[b_low], row[b_high])`` (a bootstrap one, possibly missing), and the name of the
    one chosen.

    >>> wider({"b_low": 1.0, "b_high": 2.0, "c_low": 0.5, "c_high": 3.0}, "b", "c")
    (0.5, 3.0, 'bootstrap')
    """
    wa = row[f"{a}_high"] - row[f"{a}_low"]
    wb = row[f"{b}_high"] - row[f"{b}_low"]
    if not np.isfinite(wb) or wa >= wb:
        return float(row[f"{a}_low"]), float(row[f"{a}_high"]), "profile"
    return float(row[f"{b}_low"]), float(row[f"{b}_high"]), "bootstrap"


def position(value: float, low: float, high: float) -> str:
    """Where ``value`` lies relative to the interval [low, high].

    >>> position(0.5, 1.0, 2.0), position(1.5, 1.0, 2.0)
    ('below the interval', 'inside the interval')
    """
    if value < low:
        return "below the interval"
    return "above the interval" if value > high else "inside the interval"


def md_table(frame: pd.DataFrame, columns: dict, digits: int = 3) -> str:
    """A markdown table of ``frame``'s ``columns`` (name → header); numbers through :func:`fmt`,
    strings as they are."""
    head = "| " + " | ".join(columns.values()) + " |"
    rule = "|" + "|".join("---" for _ in columns) + "|"
    body = [
        "| "
        + " | ".join(
            md_cell(v) if isinstance(v, str) else fmt(v, digits) for v in (row[c] for c in columns)
        )
        + " |"
        for _, row in frame.iterrows()
    ]
    return "\n".join([head, rule, *body])


def spread(values: Iterable[float], count: int = 8) -> list:
    """At most ``count`` values of a sorted sequence, evenly spaced, first and last included.

    >>> spread(range(10), 4)
    [0, 3, 6, 9]
    """
    values = list(values)
    if len(values) <= count:
        return values
    idx = np.unique(np.round(np.linspace(0, len(values) - 1, count)).astype(int))
    return [values[i] for i in idx]


def write_checks(checks: pd.DataFrame, out: Path, meta: dict) -> Path:
    """Write ``out/checks.csv`` with its provenance sidecar."""
    from .results import write_table

    return write_table(checks[list(COLUMNS)], Path(out) / "checks.csv", meta)


def read_tables(out: str | os.PathLike[str], *names: str) -> list[pd.DataFrame]:
    """The tables ``out/NAME`` (as :func:`metastab.results.read_table` reads them), in order,
    without their provenance."""
    from .results import read_table

    return [read_table(Path(out) / name)[0] for name in names]


def checks_config(out: str | os.PathLike[str]) -> dict:
    """The configuration recorded with ``out/checks.csv``: the one the checks were computed
    with, thresholds and wording rules included (the tables' own sidecars keep the configuration
    of the run, which may predate a threshold's key)."""
    from .results import read_table

    return read_table(Path(out) / "checks.csv")[1]["config"]


def sibling(file: str | os.PathLike[str], stem: str) -> ModuleType:
    """The module ``stem.py`` beside ``file`` (a study's ``figures.py`` from its ``checks.py``),
    loaded from its path: study folders are not packages."""
    import importlib.util

    path = Path(file).with_name(f"{stem}.py")
    spec = importlib.util.spec_from_file_location(f"metastab_study_{path.parent.name}_{stem}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path} as a module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def study_meta(study: str, config: dict) -> dict:
    """The provenance every table of a study carries: its name, config, seed and environment."""
    from .results import provenance

    return {
        "study": study,
        "config": config,
        "seed": int(config["seed"]),
        "provenance": provenance(),
    }


def polytope_from_spec(spec: dict, rng: RNGLike = None) -> Polytope:
    """The polytope of a study config's polytope entry, a spec of
    :data:`metastab.registry.POLYTOPES`
    (``{kind = "regular", k = 5}``, ``{kind = "random-polygon", k = 6, seed = 3}``; the old
    spelling ``"random"`` is an alias); ``rng`` is the stream of a random kind without ``seed``.

    Raises
    ------
    ValueError
        If the kind is not a polytope kind, or a parameter is missing, unknown or bad.

    Examples
    --------
    >>> polytope_from_spec({"kind": "random", "k": 5, "seed": 2}).name
    'random-5'
    """
    from .registry import polytope_from_dict

    return polytope_from_dict(spec, rng=rng)


def recorded(
    model: Model, x0: np.ndarray, steps: int, every: int, fine: int, chains: int, rng: SeedLike
) -> tuple[np.ndarray, np.ndarray]:
    """(times, trajectories) of ``chains`` chains: every step up to ``fine``, every ``every``
    steps after, up to ``steps``. Two runs from the same seed, whose paths agree step for step
    (chain k's stream depends only on the seed and k), so the start is seen in full without
    recording the whole run."""
    from .engine import simulate

    head = simulate(model, x0, steps=fine, chains=chains, record_every=1, rng=rng)
    tail = simulate(model, x0, steps=steps, chains=chains, record_every=every, rng=rng)
    assert head.times is not None and tail.times is not None  # recorded runs
    assert head.trajectory is not None and tail.trajectory is not None
    later = tail.times > fine
    return (
        np.concatenate([head.times, tail.times[later]]),
        np.concatenate([head.trajectory, tail.trajectory[:, later]], axis=1),
    )


def quantile_band(
    values: np.ndarray, model: str, beta: float, times: np.ndarray, chains: int
) -> pd.DataFrame:
    """The 10%, 50% and 90% quantiles over the chains (axis 0) of ``values`` at each of
    ``times``: columns model, beta, step, q10, median, q90, chains."""
    q = np.quantile(values, [0.1, 0.5, 0.9], axis=0)
    return pd.DataFrame(
        {
            "model": model,
            "beta": beta,
            "step": times,
            "q10": q[0],
            "median": q[1],
            "q90": q[2],
            "chains": chains,
        }
    )
