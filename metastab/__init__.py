"""metastab: self-attention dynamics as an interacting particle system, and its metastability.

Simulates many independent chains of the finite-β self-attention Markov chain (SA_P), the
deterministic softmax layer (SA_β), the hardmax / Frank-Wolfe limit (SA_∞) and localmax dynamics
with JIT-compiled kernels, and measures first-passage times with censoring.
"""

__version__ = "0.1.0"

from .accelerate import ResolutionWarning
from .configs import clusters, in_cells, near_vertices, shrunk, uniform_in
from .events import Collapse, LeaveBall, LeaveHull, ReachVertices
from .models import Hardmax, Localmax, SoftmaxChain, SoftmaxFlow, step_matrix
from .polytope import Polytope, cross_polytope, gaussian, random_polygon, regular_polygon, simplex
from .results import FirstPassage, Run
from .rng import Seed, as_seed
from .simulate import first_passage, simulate

__all__ = [
    "Collapse", "FirstPassage", "Hardmax", "LeaveBall", "LeaveHull", "Localmax", "Polytope",
    "ReachVertices", "ResolutionWarning", "Run", "Seed", "SoftmaxChain", "SoftmaxFlow", "as_seed", "clusters",
    "cross_polytope",
    "first_passage", "gaussian", "in_cells", "near_vertices", "random_polygon", "regular_polygon",
    "shrunk", "simplex", "simulate", "step_matrix", "uniform_in", "__version__",
]
