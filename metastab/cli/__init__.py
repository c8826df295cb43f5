"""The ``metastab`` command: ``simulate``, ``passage``, ``demo``, ``bench``, ``fit``, ``sweep`` and
``study``.

A thin layer over the library: it parses flags, builds the polytope, the initial configuration,
the model(s) and the event from :mod:`metastab.registry`, runs :func:`metastab.simulate` or
:func:`metastab.first_passage` once per β, prints a short summary and optionally writes a tidy
table with a JSON provenance sidecar. Every error a user can cause exits with status 2 and one
line on stderr, no traceback (:mod:`metastab.cli.exits`).

Layout: :mod:`~metastab.cli.command` (the top-level parser and :func:`main`, the only module that
imports the command modules), :mod:`~metastab.cli.parser` (the shared flags and value types),
one module per command (:mod:`~metastab.cli.dynamics` for ``simulate`` and ``passage``,
:mod:`~metastab.cli.demo`, :mod:`~metastab.cli.bench`, :mod:`~metastab.cli.fit`,
:mod:`~metastab.cli.study`; ``sweep`` is :mod:`metastab.sweep.command`), each with its parser
builder ``add_parser`` and its handler ``run``; :mod:`~metastab.cli.output` for tables and
``--out``; :mod:`~metastab.cli.exits` for the exit policy. numpy, pandas, numba and the library
are imported where they are used, so that ``--help`` and ``--version`` answer at once.
"""

from __future__ import annotations

from .command import build_parser, main

__all__ = ["main", "build_parser"]
