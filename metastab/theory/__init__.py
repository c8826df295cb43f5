"""The published bounds and exact laws ([FW] in R^d; [GLPR] and others on the sphere), as functions.

- :mod:`.euclidean`: [FW] in R^d: :func:`clustering_phase` (m, τ and T1 of the clustering phase,
  Thm 5.2), :func:`metastability_bound`, :func:`metastability_exponent`, :func:`exit_time_bound`
  (the lower bound on P[T2 >= t] of Thm 5.4 and what it implies for E[T2]) and
  :func:`collapse_rate` ([FW] §5, the collapse proposition).
- :mod:`.frozen`: the exact geometric exit law of a frozen configuration, :func:`frozen_law`, in
  log space; :func:`sphere_frozen_law` the same for the chain on the sphere (its no-op picks from
  :func:`sphere_jumps`), and :func:`frozen_asymptote` the large-β line of log E[T] of either.
- :mod:`~metastab.theory.sphere`: the attention dynamics on the sphere:
  :func:`meanfield_growth_rates`, :func:`meanfield_clusters` (Bruno, Pasqualotto, Agazzi),
  :func:`merge_time` (GKPR's staircase, by quadrature), :func:`orthogonal_cosine`,
  :func:`orthogonal_time`, :func:`phase_boundary` (GLPR Thm 6.8), :func:`random_start_bound`,
  :func:`random_start_probability` (GLPR Thm 6.9).
- :mod:`.noisy`: the mean-field theory of the noisy (USA) transformer on S^{d−1} (Mun,
  Rosenzweig): :func:`critical_coupling_linear` (K_#), :func:`tricritical_beta` (β_*),
  :func:`funk_hecke_coefficients`, :func:`noisy_growth_rates`, and on zonal densities
  :func:`zonal_free_energy`, :func:`stationary_branch` (:class:`NoisyBranch`),
  :func:`critical_coupling` (K_c), :func:`fold_coupling` (K_fold) and
  :func:`free_energy_barrier` (ΔF).

Everything is float64 NumPy; nothing here simulates. Every public name is importable from this
package (``from metastab.theory import frozen_law``).
"""

from . import euclidean, frozen, noisy, sphere
from .euclidean import *  # noqa: F403  (its public names, named here too)
from .frozen import *  # noqa: F403  (its public names, named here too)
from .noisy import *  # noqa: F403  (its public names, named here too)
from .sphere import *  # noqa: F403  (its public names, named here too)

__all__ = [*euclidean.__all__, *frozen.__all__, *noisy.__all__, *sphere.__all__]
