"""The CPU kernels (numba's ``njit``, chains in parallel on a pool of threads:
:mod:`.threads`); see :mod:`metastab.kernels`.

This package re-exports nothing: import the files themselves
(``from metastab.kernels.cpu import drivers``), so that each kernel has one name.
"""
