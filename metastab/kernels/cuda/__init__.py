"""The CUDA kernels (numba.cuda), loaded only for ``device="cuda"``; see :mod:`metastab.kernels`.

The twins of :mod:`metastab.kernels.cpu`'s ``steps``, ``events``, ``sphere`` and ``drivers``: a
thread block per chain (or several per block), the same streams and operations, so numba's CUDA
simulator gives the CPU's bits. This package imports nothing itself (not even numba.cuda):
import the files.
"""
