"""Checks of the localmax study ([LM]'s statements, read from its abstract; the neighbour rule is
this package's reading, not a verified transcription), from the tables only.

The rules (a)–(d) are those of ``figures.verdicts``, stated in the report. Claims: (a) the hull
converges, (b) no finite-time convergence for r > 0, token by token, (c) r_t → 0 recovers the
hardmax limit, (d) quiescent tokens. Corrections: (b) for the configuration as a whole, and (c)
while r_t stays below the hardmax score gaps (with r large giving uniform averaging).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from metastab.results import read_table
from metastab.studies.runner import sibling
from metastab.studies.verdict import check, checks_frame

SOURCE = "[LM] abstract (this package's reading)"


def checks(out: Path, config: dict) -> pd.DataFrame:
    """The checks table of the study (columns of :mod:`metastab.studies.verdict`)."""
    summary, meta = read_table(Path(out) / "summary.csv")
    v = sibling(__file__, "figures").verdicts(summary, meta["config"] | config)
    tol = f"{config['roundoff']:g}"
    a, b, c, d = v["a"], v["b"], v["c"], v["d"]
    arrivals = b["arrivals"] + b["vanishing_arrivals"]
    return checks_frame(
        [
            check(
                "a_hull_converges",
                "claim",
                "(a) the convex hull converges to a polytope",
                measured=a["grew"],
                threshold=0.0,
                rule=f"runs of {a['runs']} whose hull area grows by more than {tol} (relative) at "
                "some step = 0",
                passed=a["holds"],
                source=SOURCE,
            ),
            check(
                "b_no_token_stops",
                "claim",
                "(b) for r > 0 no token reaches its limit in finite time",
                measured=arrivals,
                threshold=0.0,
                rule=f"tokens exactly at their limit before the end, over {b['const_runs']} "
                f"settled constant-r runs and {b['vanishing_runs']} vanishing-r runs, = 0",
                passed=arrivals == 0,
                source=SOURCE,
            ),
            check(
                "b_no_token_stops/configuration",
                "correction",
                "(b) for r > 0 the configuration does not reach its limit in finite time",
                measured=b["config_arrivals"],
                high=b["rate_max"],
                threshold=0.0,
                rule=f"settled runs of {b['runs']} whose whole configuration is at its limit = 0 "
                "and every fitted geometric decay rate < 1 (interval: largest rate)",
                passed=b["holds"],
                source="this study",
            ),
            check(
                "c_recovers_hardmax",
                "claim",
                "(c) r_t → 0 recovers the hardmax limit",
                measured=c["exact_fraction_smallest"],
                threshold=1.0,
                rule="fraction of the runs with the smallest r0 that end on the hardmax limit "
                f"(to {tol}, `roundoff`) = 1",
                passed=c["exact_fraction_smallest"] >= 1.0,
                source=SOURCE,
            ),
            check(
                "c_recovers_hardmax/below_gaps",
                "correction",
                "(c) r_t → 0 recovers hardmax exactly while r_t stays below the hardmax score "
                "gaps; the distance shrinks with r0; r large is uniform averaging",
                measured=c["median_smallest"],
                threshold=c["median_largest"],
                rule=f"all {c['below']} runs below the gaps end on the hardmax limit (to {tol}), "
                "the median distance at the smallest r0 (measured) ≤ that at the largest "
                f"(threshold), and r ≥ the score spread gives uniform averaging (to {tol})",
                passed=c["holds"],
                source="this study",
            ),
            check(
                "d_quiescent",
                "claim",
                "(d) tokens become quiescent",
                measured=d["quiet"],
                threshold=float(d["runs"]),
                rule="settled runs whose tokens are all quiescent before the resolution step = "
                "all settled runs",
                passed=d["holds"],
                source=SOURCE,
            ),
        ]
    )
