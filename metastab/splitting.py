"""The documented path of adaptive multilevel splitting; the code is
:mod:`metastab.engine.splitting`."""

from .engine.splitting import (
    EscapeTime,
    SplittingResult,
    escape_probability,
    mean_escape_time,
    reaction_coordinate,
)

__all__ = [
    "SplittingResult",
    "EscapeTime",
    "escape_probability",
    "mean_escape_time",
    "reaction_coordinate",
]
