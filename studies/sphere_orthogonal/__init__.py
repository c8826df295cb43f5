"""``metastab study sphere-orthogonal`` (data/sphere-orthogonal/): GLPR Thm 6.8/6.9: orthogonal
starts follow (6.9)/(6.10), t*(β); random starts in high d; rk4 and post-LN convergence.
"""
