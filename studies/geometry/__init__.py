"""``metastab study geometry`` (data/geometry/): [FW] §2: cells, dominance cones, erosions and
Voronoi agreement, in parity with the paper's figure scripts.
"""
