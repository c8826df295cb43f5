"""The dynamics, as frozen validated specs that hold no behaviour (science.md §1, sphere.md).

- :mod:`.euclidean`: the models in R^d: :class:`SoftmaxChain` (SA_P), :class:`SoftmaxFlow`
  (SA_β), :class:`Hardmax` (SA_∞), :class:`Localmax`, and :func:`step_matrix`.
- :mod:`.sphere`: the models on the unit sphere: :class:`SphereFlow`, :class:`SphereChain`.

Their initial configurations are in :mod:`metastab.setups`; the engine runs them.
"""

from .euclidean import NEIGHBOUR_RULES, Hardmax, Localmax, SoftmaxChain, SoftmaxFlow, step_matrix
from .sphere import ATTENTIONS, SCHEMES, SPHERE_TOL, SphereChain, SphereFlow, check_on_sphere

__all__ = [
    "SoftmaxChain",
    "SoftmaxFlow",
    "Hardmax",
    "Localmax",
    "NEIGHBOUR_RULES",
    "step_matrix",
    "SphereFlow",
    "SphereChain",
    "SPHERE_TOL",
    "ATTENTIONS",
    "SCHEMES",
    "check_on_sphere",
]
