"""
A parameter sweep, resumable, locally or on Dask
================================================

A sweep is a grid declared in TOML. ``metastab.sweep.run_sweep`` runs it in chunks of chains,
each a pure function of (point, root seed, chain range), written atomically as a parquet file
before its journal record: interrupt it at any moment and run it again, and the finished chunks
are verified and kept; the final dataset is bit-identical to an uninterrupted run.
"""

import tempfile
from pathlib import Path

from metastab import plotting, stats, sweep

# %%
# The grid: SA_P from ten tokens in five clusters at the vertices of the pentagon, the time at
# which some token is farther than 0.3 from where it started, at four β. (The example of the
# repository, ``studies/sweeps/example.toml``, is the same with 2000 chains per point.)
config = """
[model]
kind = "softmax-chain"
gamma = 0.1
[grid]
beta = [4.0, 6.0, 8.0, 10.0]
[polytope]
kind = "regular"
k = 5
[initial]
kind = "repeated-points"
multiplicities = [2, 2, 2, 2, 2]
[event]
kind = "leave-ball"
radius = 0.3
[run]
chains = 400
chunk = 100
max_steps = 100000
seed = 1
"""
work = Path(tempfile.mkdtemp())
_ = (work / "sweep.toml").write_text(config)

# %%
# Run it embedded (in this process, on all cores). Running the same call again reuses every
# chunk: nothing is recomputed.
summary = sweep.run_sweep(work / "sweep.toml", work / "out")
print(summary.points, "points,", summary.chains, "chains,", summary.escapes, "escapes")
again = sweep.run_sweep(work / "sweep.toml", work / "out")
print("second run:", again.chunks_run, "chunks run,", again.chunks_reused, "reused")

# %%
# Read it back (every chunk checked against the journal) and fit the Arrhenius law
# log E[T] = a + b·β to every chain of every point in one censored likelihood. The per-β table
# gives each mean with its interval: the law's exact one, or the law-free bootstrap's where the
# memorylessness test rejects the geometric law (the ``interval`` column says which).
frame, meta = sweep.read_sweep(work / "out")
table, fit = stats.fit_report(frame)
columns = ["beta", "chains", "events", "censored", "mean", "mean_low", "mean_high", "interval"]
print(table[columns + ["memoryless_p"]].to_string())
low, high = fit.confidence_interval("slope")
print(f"fitted exponent b = {fit.slope:.3f}, 95% interval [{low:.3f}, {high:.3f}]")
rejected = table.loc[table["interval"] == "bootstrap", "beta"]
if len(rejected):
    print(
        "the geometric law is rejected at β = "
        + ", ".join(f"{b:g}" for b in rejected)
        + " (memorylessness test): the slope's interval, a profile of the geometric "
        "likelihood, holds only approximately there; the means' intervals are the bootstrap's"
    )

# %%
# The Arrhenius plot: each mean with its interval, and the fitted law with its 95% band.
fig = plotting.arrhenius_figure((table, fit))

# %%
# On Dask
# -------
# The same call runs the chunks on a local Dask cluster or on an existing scheduler (for
# instance an HPC allocation through dask-jobqueue), with bit-identical results; failed chunks
# are retried and then reported, never dropped. It needs the ``dask`` extra
# (``pip install -e '.[dask]'``), so it is shown here, not run::
#
#     sweep.run_sweep(work / "sweep.toml", work / "out-dask", cluster="local:2")
#     sweep.run_sweep(work / "sweep.toml", work / "out-hpc", scheduler="tcp://HOST:8786")
#
# On the command line::
#
#     metastab sweep sweep.toml --out DIR --cluster local:2
#     metastab sweep --status DIR
#     metastab fit DIR
