"""What a run returns and how it is kept: result objects, tidy frames, tables with provenance.

- :mod:`.passage`: :class:`FirstPassage` (of :func:`metastab.first_passage`) and :class:`Run`
  (of :func:`metastab.simulate`).
- :mod:`.track`: :class:`~.track.Track` (of :func:`metastab.track`) and
  :func:`~.track.plateau_durations`.
- :mod:`.ams`: :class:`~.ams.AMSResult` and :class:`~.ams.AMSMeanTime` (of
  :func:`metastab.engine.ams_probability` and :func:`metastab.engine.ams_mean_escape_time`).
- :mod:`.io`: :func:`write_table` and :func:`read_table` (CSV or parquet with a JSON sidecar),
  :func:`provenance`, :func:`check_writable`, and the helpers the result objects share.
- :mod:`.protocol`: :class:`Result`, what every result shares: ``to_frame()`` (tidy long
  form), ``metadata()``, ``save(path)``, ``load(path)`` and ``replay()``; and :func:`load`,
  which reads any saved result back as its class.
"""

from .io import check_writable, provenance, read_table, sidecar, write_table
from .passage import FirstPassage, Run
from .protocol import SCHEMA_VERSION, Result, load

__all__ = [
    "FirstPassage",
    "Run",
    "Result",
    "load",
    "SCHEMA_VERSION",
    "provenance",
    "write_table",
    "read_table",
    "check_writable",
    "sidecar",
]
