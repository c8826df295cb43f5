"""All numba code of metastab, and its plain-Python twins.

Nothing here imports the rest of metastab: the spec objects of :mod:`metastab.models` and
:mod:`metastab.events` build the parameter tuples of :mod:`.params`, and the engine calls the
drivers. A folder per target; the leaves that every target shares sit at the top. From the
bottom up:

- ``params.py``: model and event codes, the NamedTuples ``Dynamics``, ``Schedule`` and
  ``EventArrays`` in which parameters travel, ``no_event``, the numba options ``JIT`` (no numba).
- ``cache.py``: :func:`~.cache.njit_keyed`, numba's on-disk cache keyed also on other kernel
  files.
- ``leaves.py``: the scalar leaves written once as functions of their arithmetic, which the
  CPU compiles with ``njit`` and the device with ``cuda.jit(device=True)`` (the streams, the FMA
  exp, the exact Bernoulli trial, the rare pick, the hull's minor cycle).
- ``arith.py``: the fused arithmetic (``fma``, ``mul``) and the FMA exp ``exp_fma``.
- ``streams.py``: per-chain xoshiro256** streams (``seed_streams``, ``next_u64``,
  ``next_uniform``).
- ``cpu/``: the CPU kernels.

  - ``steps.py``: one step of each model (scores, the exact exp, the pick; ``chain_step``,
    ``softmax_flow_step``, ``hardmax_step``, ``localmax_step``, each with its ``*_work(n, d)``
    scratch).
  - ``clustering.py``: clustered pairs, the number of clusters (``cluster_count``, union-find)
    and the cluster observables of a configuration (``observe``).
  - ``events.py``: ``event_hit`` and the point-to-hull distance ``hull_dist2``.
  - ``chain_loop.py``: the one loop of every driver (``loop_for``: chains, done flags, the
    stopping test ``stopped``), compiled with a model family's ``Stepper`` (scratch and step).
  - ``euclidean_family.py``, ``sphere_family.py``: the models of R^d and of the sphere as that
    loop takes them (``stepper``; ``step_tokens`` splits one SA_P chain's tokens over threads).
  - ``drivers.py``: many chains in parallel (``advance``, ``kernel_for``, ``events_at``,
    ``cross_weights``, ``neighbour_sets``); the model code picks the family.
  - ``sphere.py``: the sphere models: the flow (post-LN, RK4) and the chain.
  - ``accelerated.py``: the event-driven SA_P kernels (``advance_accelerated``, ``jump``).
  - ``splitting.py``: the splitting kernel (``excursions``, ``coordinates``).

- ``cuda/``: ``steps.py``, ``events.py``, ``sphere.py``, ``drivers.py``, the CUDA twins of
  those of ``cpu/`` (numba.cuda, loaded only for ``device="cuda"``): one thread block per
  chain, the same streams and operations, so numba's CUDA simulator gives the CPU's bits.
- ``reference/``: slow plain-Python twins, compared with the kernels bit for bit in the tests:
  ``euclidean.py`` (of ``cpu/euclidean_steps.py``, ``events.py``, ``drivers.py``,
  ``accelerated.py``), ``sphere.py`` (of ``cpu/sphere_steps.py``) and ``clustering.py`` (of
  ``cpu/clustering.py``).

numba caches a function on its own file only, yet the code it stores holds what it calls from
other files; so every file whose jitted functions call (or read constants of) another kernel file
decorates them with ``cache.njit_keyed()``, which keys them also on the kernel files they import
(and what those import, and the files of the jitted functions a closure holds), derived from the
imports.
Import the files themselves (``from metastab.kernels.cpu import drivers``); no package here
re-exports anything, so that each kernel has one name.
"""
