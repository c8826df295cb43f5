"""All numba code of metastab, and its plain-Python twins.

Nothing here imports the rest of metastab: the spec objects of :mod:`metastab.models` and
:mod:`metastab.events` build the parameter tuples of :mod:`.params`, and the engine calls the
drivers. The files, from the bottom up:

- ``params.py``: kind and event codes, the NamedTuples ``Dynamics``, ``Schedule`` and
  ``EventArrays`` in which parameters travel, ``no_event``, the numba options ``JIT`` (no numba).
- ``cache.py``: :func:`~.cache.njit_keyed`, numba's on-disk cache keyed also on sibling files.
- ``streams.py``: per-chain xoshiro256** streams (``seed_streams``, ``next_u64``,
  ``next_uniform``).
- ``steps.py``: one step of each model (scores, the exact exp, the pick; ``chain_step``,
  ``flow_step``, ``hardmax_step``, ``localmax_step``, each with its ``*_work(n, d)`` scratch).
- ``clustering.py``: clustered pairs, the number of clusters (``cluster_count``, union-find) and
  the cluster observables of a configuration (``observe``).
- ``events.py``: ``event_hit`` and the point-to-hull distance ``hull_dist2``.
- ``drivers.py``: many chains in parallel (``advance``, ``events_at``, ``cross_weights``,
  ``neighbour_sets``; ``step_tokens`` splits one chain's tokens over threads).
- ``accelerated.py``: the event-driven SA_P kernels (``advance_accelerated``, ``jump``).
- ``splitting.py``: the splitting kernel (``excursions``, ``coordinates``).
- ``reference.py``: slow plain-Python twins, compared with the kernels bit for bit in the tests.
- ``reference_clustering.py``: the twins of ``clustering.py``.

numba caches a function on its own file only, yet the code it stores holds what it calls from
other files; so every file whose jitted functions call (or read constants of) a sibling decorates
them with ``cache.njit_keyed("sibling.py", ...)``, naming its sibling imports and theirs.
Import the files themselves (``from metastab.kernels import drivers``); this package re-exports
nothing, so that each kernel has one name.
"""
