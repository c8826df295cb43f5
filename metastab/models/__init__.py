"""The dynamics, as frozen validated specs that hold no behaviour (the models of [FW] and [GLPR]).

- :mod:`.euclidean`: the models in R^d: :class:`SoftmaxChain` (SA_P), :class:`SoftmaxFlow`
  (SA_β), :class:`Hardmax` (SA_∞), :class:`Localmax`, and :func:`step_matrix`.
- :mod:`~metastab.models.sphere`: the models on the unit sphere: :class:`SphereFlow`,
  :class:`SphereChain`, :class:`NoisySphere`.

Their initial configurations are in :mod:`metastab.setups`; the engine runs them.
"""

from . import euclidean, sphere
from .euclidean import *  # noqa: F403  (its public names, named here too)
from .sphere import *  # noqa: F403  (its public names, named here too)

__all__ = [*euclidean.__all__, *sphere.__all__]
