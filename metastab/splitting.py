"""The documented path of adaptive multilevel splitting; the code is
:mod:`metastab.engine.splitting`."""

from .engine.splitting import *  # noqa: F403  (the public names, re-exported)
from .engine.splitting import __all__ as __all__
