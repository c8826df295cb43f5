"""What a run returns and how it is kept: result objects, tidy frames, tables with provenance.

- :mod:`.passage`: :class:`FirstPassage` (of :func:`metastab.first_passage`) and :class:`Run`
  (of :func:`metastab.simulate`).
- :mod:`.track`: :class:`~.track.Track` (of :func:`metastab.track`) and
  :func:`~.track.plateau_durations`.
- :mod:`.io`: :func:`write_table` and :func:`read_table` (CSV or parquet with a JSON sidecar),
  :func:`provenance`, :func:`check_writable`, and the helpers the result objects share.

Every result has ``to_frame()`` (tidy long form), ``metadata()`` and ``save(path)``.
"""

from .io import check_writable, provenance, read_table, sidecar, write_table
from .passage import FirstPassage, Run

__all__ = [
    "FirstPassage",
    "Run",
    "provenance",
    "write_table",
    "read_table",
    "check_writable",
    "sidecar",
]
