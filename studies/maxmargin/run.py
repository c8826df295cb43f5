"""Compute experiments E1-E6 of max-margin token selection (docs: models#mm-experiments) into
``out``.

E1 [MM] single input, global vs local direction; E2 [MM] several inputs, NGD vs GD; E3 [MM]
joint (p, v) training and the relaxed ATT-SVM; E4 [SVM] W vs (K, Q) parametrisation and the
Frobenius vs nuclear-norm bias; the optional extras E5 ([MM] losses and scores) and E6 ([SVM]
rank of the Frobenius SVM); plus the hardmax limit along the SVM ray. Every table is written
with a provenance sidecar; figures.py only reads them.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TypeVar

import numpy as np
import pandas as pd

from metastab import maxmargin as mm
from metastab.results import provenance, write_table

from .config import E1, E2, E3, E4, E5, E6, Config, Hardmax

T = TypeVar("T")

W3 = np.diag([1.0, 1.0, 0.0])  # [MM] W = Wk^T Wq = diag(1, 1, 0)
V3 = np.array([0.0, 0.0, 1.0])  # [MM] v = (0, 0, 1): the third coordinate is the token score


def solved(value: T | None) -> T:
    """``value`` of a feasible problem (None only where infeasible: the problems solved here are
    feasible by construction, or read under ``feasible``)."""
    assert value is not None
    return value


def single_input(c):
    return np.array([[[-0.1, 1.0, 1.0], [1.0, 0.0, 0.9], [0.0, 0.0, c]]])


def multi_input(seed):
    """docs: models#mm-experiments (E2) data, regenerated with numpy (torch streams cannot be)."""
    rng = np.random.default_rng(seed)
    X = 0.2 * rng.standard_normal((3, 7, 3))
    X[:, 0] += [1.0, 0.0, 0.0]
    X[:, 1:4] += [-1.0, 1.0, 0.0]
    X[:, 4:] += [-0.5, -0.5, 0.0]
    X[:, 0, 2] = 1.0
    X[:, 1:, 2] = 0.5
    return X


def joint_data(tight):
    third = (0.5, 1.0) if tight else (0.5, 1.5)
    X = np.array([[[0, 0], [1, 1]], [[0, 0], [1, -1]], [[0, 0], third]], dtype=float)
    return X, np.array([1.0, -1.0, 1.0])


def _svm_row(experiment, problem, res):
    c = res.certificate
    return {
        "experiment": experiment,
        "problem": problem,
        "feasible": res.feasible,
        "objective": res.objective,
        "published": None,  # filled from config.published
        "solution": " ".join(f"{x:.6f}" for x in np.ravel(res.p)) if res.feasible else "",
        "support": ";".join(",".join(map(str, s)) for s in res.support),
        "primal": c.primal,
        "dual": c.dual,
        "stationarity": c.stationarity,
        "duality_gap": c.duality_gap,
        "complementarity": c.complementarity,
        "certificate_ok": c.ok,
    }


def _compact(frame: pd.DataFrame, digits: int = 10) -> pd.DataFrame:
    """Float columns rounded to ``digits`` significant digits (smaller CSV files)."""
    out = frame.copy()
    for col in out.columns:
        if out[col].dtype == np.float64:
            out[col] = [float(f"{x:.{digits}g}") for x in out[col]]
    return out


def _keep(steps, dense=200, sparse=10):
    """Iterations stored for path figures: all of the first ``dense``, then every ``sparse``."""
    return np.union1d(np.arange(min(dense, steps) + 1), np.arange(0, steps + 1, sparse))


def e1(cfg: E1, svm_rows, hard_rows):
    paths, summary, verdicts = [], [], []
    for c in cfg.cs:
        X = single_input(c)
        glob, loc = mm.att_svm(X, 0, W3), mm.att_svm(X, 1, W3)
        svm_rows += [
            _svm_row("E1", "global, alpha=0", glob) | {"c": c},
            _svm_row("E1", "local, alpha=1", loc) | {"c": c},
        ]
        for alpha in (0, 1):
            lo = mm.local_optimality(X, 1, V3, alpha, W3)
            verdicts.append(
                {
                    "c": c,
                    "alpha": alpha,
                    "kind": lo.kind,
                    "locally_optimal": lo.locally_optimal,
                    "support": ",".join(map(str, lo.svm.support[0])),
                }
            )
        keep = _keep(cfg.steps)
        for s in cfg.inits:
            path = mm.train_p(X, [1.0], V3, W3, [0.0, s, 0.0], steps=cfg.steps, lr=cfg.lr)
            probs = mm.attention(X, W3, path[-1])[0]
            sel = int(np.argmax(probs))
            summary.append(
                {
                    "c": c,
                    "init": s,
                    "corr_global": mm.correlation(path[-1], solved(glob.p)),
                    "corr_local": mm.correlation(path[-1], solved(loc.p)),
                    "selected": sel,
                    "selected_prob": probs[sel],
                    "norm": np.linalg.norm(path[-1]),
                }
            )
            paths.append(
                pd.DataFrame(
                    {"c": c, "init": s, "iteration": keep, "p1": path[keep, 0], "p2": path[keep, 1]}
                )
            )
            if c == 0.0 and s in (0.0, -1.5):
                _hardmax_path(hard_rows, f"E1 c=0, p0=(0,{s:g},0)", X, W3, path, sel)
    return pd.concat(paths), pd.DataFrame(summary), pd.DataFrame(verdicts)


def _hardmax_path(rows, label, X, W, path, alpha):
    norms = np.linalg.norm(path, axis=1)
    for k in range(1, len(path), 5):
        rows.append(
            {
                "source": label,
                "kind": "GD path",
                "R": norms[k],
                "gap": _unselected(X, W, path[k], alpha),
            }
        )


def _unselected(X, W, p, alpha):
    """max_i (1 − s_{i,α_i}), summed over the other tokens (no cancellation near 1)."""
    s = mm.attention(X, W, p)
    others = np.ones(s.shape, dtype=bool)
    others[np.arange(len(s)), np.broadcast_to(alpha, (len(s),))] = False
    return float(np.max(np.where(others, s, 0.0).sum(axis=1)))


def e2(cfg: E2, svm_rows, hard_rows):
    X = multi_input(cfg.seed)
    n = len(X)
    Y = np.ones(n)
    svm = mm.att_svm(X, 0, W3)
    svm_rows.append(_svm_row("E2", "alpha=0 (numpy data)", svm))
    keep = _keep(cfg.steps)
    curves, summary = [], []
    for method, lr, normalized in (("NGD", cfg.lr_ngd, True), ("GD", cfg.lr_gd, False)):
        for s in cfg.inits:
            path = mm.train_p(
                X, Y, V3, W3, [s, 0.0, 0.0], steps=cfg.steps, lr=lr, normalized=normalized
            )
            prob0 = np.array([mm.attention(X, W3, p)[:, 0].mean() for p in path])
            summary.append(
                {
                    "method": method,
                    "init": s,
                    "corr_svm": mm.correlation(path[-1], solved(svm.p)),
                    "norm_200": np.linalg.norm(path[min(200, len(path) - 1)]),
                    "prob_50": prob0[min(50, len(path) - 1)],
                    "prob_200": prob0[min(200, len(path) - 1)],
                    "first_095": int(np.argmax(prob0 > 0.95)) if (prob0 > 0.95).any() else -1,
                }
            )
            curves.append(
                pd.DataFrame(
                    {
                        "method": method,
                        "init": s,
                        "iteration": keep,
                        "p1": path[keep, 0],
                        "p2": path[keep, 1],
                        "norm": np.linalg.norm(path[keep], axis=1),
                        "prob0": prob0[keep],
                    }
                )
            )
            if method == "NGD" and s == 0.0:
                _hardmax_path(hard_rows, "E2 NGD, p0=0", X, W3, path, 0)
    return pd.concat(curves), pd.DataFrame(summary), svm


def e3(cfg: E3, svm_rows):
    curves, summary = [], []
    for tight in (True, False):
        X, Y = joint_data(tight)
        case = "tight" if tight else "non-tight"
        js = mm.joint_svm(X, Y, 1)
        svm_rows += [
            _svm_row("E3", f"{case}, full", js.full),
            _svm_row("E3", f"{case}, relaxed", js.p),
            _svm_row("E3", f"{case}, v classifier", js.v),
        ]
        ps, vs = mm.train_joint(
            X, Y, [-1.0, 0.0], np.eye(2), [0.0, -1.0], steps=cfg.steps, lr=cfg.lr
        )
        prob1 = np.array([mm.attention(X, np.eye(2), p)[:, 1].mean() for p in ps])
        logit = np.array(
            [
                np.mean(1.0 / (1.0 + np.exp(-Y * mm.predict(X, v, np.eye(2), p))))
                for p, v in zip(ps, vs)
            ]
        )
        keep = _keep(cfg.steps)
        curves.append(
            pd.DataFrame(
                {
                    "case": case,
                    "iteration": keep,
                    "p1": ps[keep, 0],
                    "p2": ps[keep, 1],
                    "v1": vs[keep, 0],
                    "v2": vs[keep, 1],
                    "prob1": prob1[keep],
                    "logistic": logit[keep],
                }
            )
        )
        summary.append(
            {
                "case": case,
                "corr_p_relaxed": mm.correlation(ps[-1], solved(js.p.p)),
                "corr_p_full": mm.correlation(ps[-1], solved(js.full.p)),
                "corr_v": mm.correlation(vs[-1], solved(js.v.p)),
                "relaxed_samples": ",".join(map(str, np.flatnonzero(js.relaxed))),
                "prob1_0": prob1[0],
                "prob1_min": prob1.min(),
                "prob1_argmin": int(np.argmin(prob1)),
                "prob1_first_099": int(np.argmax(prob1 > 0.99)),
                "logistic_0": logit[0],
                "logistic_first_099": int(np.argmax(logit > 0.99)),
            }
        )
    return pd.concat(curves), pd.DataFrame(summary)


def e4_data(run, n, T, d):
    """docs: models#mm-experiments (E4) generator with numpy seed ``run``; initialisation
    U(±1/√d)."""
    rng = np.random.default_rng(run)

    def unit(a):
        return a / np.linalg.norm(a, axis=-1, keepdims=True)

    v = unit(rng.standard_normal(d))
    Y = np.where(rng.standard_normal(n) >= 0, 1.0, -1.0)
    X = unit(rng.standard_normal((n, T, d)))
    Z = unit(rng.standard_normal((n, d)))
    b = 1.0 / np.sqrt(d)
    return (
        X,
        Y,
        v,
        Z,
        rng.uniform(-b, b, (d, d)),
        rng.uniform(-b, b, (d, d)),
        rng.uniform(-b, b, (d, d)),
    )


def e4(cfg: E4):
    R, n, T, d, steps = cfg.runs, cfg.n, cfg.T, cfg.d, cfg.steps
    data = [e4_data(r, n, T, d) for r in range(R)]
    X, Y, v, Z, W0, K0, Q0 = (np.array(a) for a in zip(*data))
    tic = time.perf_counter()
    paths = {
        "W": mm.train_w(X, Y, v, Z, W0, steps=steps, lr=cfg.lr),
        "KQ": mm.train_kq(X, Y, v, Z, K0, Q0, steps=steps, lr=cfg.lr, reg=cfg.reg_kq),
        "KQ, no ridge": mm.train_kq(X, Y, v, Z, K0, Q0, steps=steps, lr=cfg.lr),
    }
    train_s = time.perf_counter() - tic
    cache = {}

    def svm(r, alpha, norm):
        key = (r, tuple(alpha), norm)
        if key not in cache:
            cache[key] = mm.att_svm_w(X[r], alpha, Z[r], norm=norm)
        return cache[key]

    tic = time.perf_counter()
    marks = np.arange(0, steps + 1, cfg.every)
    curve_rows, run_rows = [], []
    for param, path in paths.items():
        for r in range(R):
            logits = np.einsum("ktd,ide,ke->ikt", X[r], path[:, r], Z[r])
            probs = np.exp(logits - logits.max(-1, keepdims=True))
            probs /= probs.sum(-1, keepdims=True)
            alpha = np.argmax(logits[-1], axis=1)
            moved = np.flatnonzero(np.any(path[1:, r] != path[:-1, r], axis=(1, 2)))
            frozen = int(moved[-1]) + 1 if len(moved) and moved[-1] + 1 < steps else -1
            fro, nuc = svm(r, alpha, "fro"), svm(r, alpha, "nuclear")
            lo = mm.local_optimality(X[r], Y[r], v[r], alpha, Z=Z[r])
            corr_f = [mm.correlation(path[k, r], fro.W) if fro.feasible else np.nan for k in marks]
            corr_n = [mm.correlation(path[k, r], nuc.W) if nuc.feasible else np.nan for k in marks]
            curve_rows.append(
                pd.DataFrame(
                    {
                        "param": param,
                        "run": r,
                        "iteration": marks,
                        "corr_fro": corr_f,
                        "corr_nuc": corr_n,
                        "max_softmax": probs[marks].max(-1).mean(-1),
                    }
                )
            )
            run_rows.append(
                {
                    "param": param,
                    "run": r,
                    "selection": lo.kind,
                    "feasible": fro.feasible,
                    "min_selected_prob": probs[-1].max(-1).min(),
                    "rank_fro": np.linalg.matrix_rank(fro.W, 1e-7) if fro.feasible else -1,
                    "rank_nuc": np.linalg.matrix_rank(nuc.W, 1e-6) if nuc.feasible else -1,
                    "nuc_gap": nuc.certificate.duality_gap if nuc.feasible else np.nan,
                    "fro_ok": fro.certificate.ok,
                    "norm_final": np.linalg.norm(path[-1, r]),
                    "frozen_from": frozen,
                    "corr_fro_final": corr_f[-1],
                    "corr_nuc_final": corr_n[-1],
                }
            )
    svm_s = time.perf_counter() - tic
    return (
        pd.concat(curve_rows),
        pd.DataFrame(run_rows),
        {"train_seconds": train_s, "svm_seconds": svm_s, "svm_solves": len(cache)},
    )


def e5(cfg: E5):
    """[MM] §4.4: two inputs whose optimal tokens score C and 1, linear and logistic loss."""
    keep = _keep(cfg.steps)
    paths, summary = [], []
    for loss in ("linear", "logistic"):
        for C in cfg.Cs:
            X = np.array([[[0, 0, 0], [1, 1, C]], [[0, 0, 0], [1, -1, 1]]], dtype=float)
            svm = mm.att_svm(X, 1, W3)
            path = mm.train_p(
                X, [1.0, 1.0], V3, W3, np.zeros(3), steps=cfg.steps, lr=cfg.lr, loss=loss
            )
            summary.append(
                {
                    "loss": loss,
                    "C": C,
                    "svm": " ".join(f"{x:.6f}" for x in solved(svm.p)),
                    "corr_svm": mm.correlation(path[-1], solved(svm.p)),
                    "p1_final": path[-1, 0],
                    "p2_final": path[-1, 1],
                }
            )
            paths.append(
                pd.DataFrame(
                    {
                        "loss": loss,
                        "C": C,
                        "iteration": keep,
                        "p1": path[keep, 0],
                        "p2": path[keep, 1],
                    }
                )
            )
    return pd.concat(paths), pd.DataFrame(summary)


def e6(cfg: E6):
    """[SVM] §4.7: Frobenius ATT-SVM at the globally optimal tokens; infeasible ones counted."""
    rows = []
    for n in cfg.ns:
        for d in cfg.ds:
            for run in range(cfg.instances):
                X, Y, v, Z, *_ = e4_data(run, n, cfg.T, d)
                res = mm.att_svm_w(X, mm.optimal_tokens(X, Y, v), Z)
                rows.append(
                    {
                        "n": n,
                        "T": cfg.T,
                        "d": d,
                        "instance": run,
                        "feasible": res.feasible,
                        "certificate_ok": res.certificate.ok,
                        "ill_conditioned": res.certificate.ill_conditioned,
                        "rank_fro": (
                            np.linalg.matrix_rank(solved(res.W), 1e-7) if res.feasible else -1
                        ),
                        "support_samples": (
                            int((solved(res.multipliers).sum(axis=1) > 0).sum())
                            if res.feasible
                            else -1
                        ),
                        "norm": res.norm if res.feasible else np.nan,
                    }
                )
    return pd.DataFrame(rows)


def hardmax_ray(cfg: Hardmax, rows):
    """1 − s_α along p = R p^mm/||p^mm|| against the bound (T − 1) exp(−R/||p^mm||) (§6)."""
    for label, X, alpha in (
        ("E1 c=0.9, global", single_input(0.9), 0),
        ("E1 c=0, local", single_input(0.0), 1),
        ("E2, alpha=0", multi_input(0), 0),
    ):
        svm = mm.att_svm(X, alpha, W3)
        for R in cfg.scales:
            gap = _unselected(X, W3, R * solved(svm.p) / solved(svm.norm), alpha)
            rows.append({"source": label, "kind": "SVM ray", "R": R, "gap": gap})
            rows.append(
                {
                    "source": label,
                    "kind": "bound",
                    "R": R,
                    "gap": float(mm.hardmax_gap_bound(X.shape[1], solved(svm.norm), R)),
                }
            )


def run(config: Config, out: Path) -> None:
    out = Path(out)
    meta = {"config": config.to_dict(), "provenance": provenance()}
    svm_rows: list[dict] = []
    hard_rows: list[dict] = []
    seconds = {}

    tic = time.perf_counter()
    paths1, sum1, loc1 = e1(config.e1, svm_rows, hard_rows)
    seconds["e1"] = time.perf_counter() - tic
    tic = time.perf_counter()
    curves2, sum2, _ = e2(config.e2, svm_rows, hard_rows)
    seconds["e2"] = time.perf_counter() - tic
    tic = time.perf_counter()
    curves3, sum3 = e3(config.e3, svm_rows)
    seconds["e3"] = time.perf_counter() - tic
    tic = time.perf_counter()
    curves4, runs4, timing4 = e4(config.e4)
    seconds["e4"] = time.perf_counter() - tic
    tic = time.perf_counter()
    paths5, sum5 = e5(config.e5)
    seconds["e5"] = time.perf_counter() - tic
    tic = time.perf_counter()
    ranks6 = e6(config.e6)
    seconds["e6"] = time.perf_counter() - tic
    hardmax_ray(config.hardmax, hard_rows)
    published = {(p["experiment"], p["problem"]): p["value"] for p in config.published}
    for row in svm_rows:
        row["published"] = published.get((row["experiment"], row["problem"]))

    meta = meta | {"seconds": seconds, "e4_timing": timing4}
    write_table(pd.DataFrame(svm_rows), out / "svm_values.csv", meta)
    write_table(_compact(paths1), out / "e1_paths.csv", meta)
    write_table(sum1, out / "e1_summary.csv", meta)
    write_table(loc1, out / "e1_local_optimality.csv", meta)
    write_table(_compact(curves2), out / "e2_curves.csv", meta)
    write_table(sum2, out / "e2_summary.csv", meta)
    write_table(_compact(curves3), out / "e3_curves.csv", meta)
    write_table(sum3, out / "e3_summary.csv", meta)
    write_table(runs4, out / "e4_runs.csv", meta)
    agg = (
        curves4.groupby(["param", "iteration"])
        .agg(
            corr_fro_mean=("corr_fro", "mean"),
            corr_fro_std=("corr_fro", "std"),
            corr_nuc_mean=("corr_nuc", "mean"),
            corr_nuc_std=("corr_nuc", "std"),
            max_softmax_mean=("max_softmax", "mean"),
        )
        .reset_index()
    )
    write_table(_compact(agg), out / "e4_curves.csv", meta)
    write_table(_compact(paths5), out / "e5_paths.csv", meta)
    write_table(sum5, out / "e5_summary.csv", meta)
    write_table(ranks6, out / "e6_ranks.csv", meta)
    write_table(_compact(pd.DataFrame(hard_rows)), out / "hardmax.csv", meta)
