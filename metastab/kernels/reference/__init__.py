"""Slow, plain-Python twins of the kernels: the bit-exact oracle of the tests; see
:mod:`metastab.kernels`. No numba here. Import the files themselves
(``from metastab.kernels.reference import euclidean as ref``).
"""
