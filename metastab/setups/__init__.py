"""What a run starts from: polytopes and initial configurations, pure functions of (..., rng).

- :mod:`.polytopes`: :class:`~.polytopes.Polytope` (cells, ownership, separation, cones,
  erosions) and its constructors; public as ``metastab.polytopes``.
- :mod:`.initial`: initial configurations in R^d (near_vertices, in_cells, uniform_in,
  repeated_points, shrunk, from_file), and those on the sphere of :mod:`.sphere` under the same
  namespace; public as ``metastab.initial``.
- :mod:`.sphere`: initial configurations on the unit sphere (sphere_uniform, orthogonal, caps),
  one stream per chain.

The spec dicts of :mod:`metastab.registry` build them by name. Nothing here imports the others
at package level: import the modules.
"""
