"""``metastab study localmax`` (data/localmax/): [LM] localmax dynamics (this package's reading
of the abstract) on [AFZ] Figure 2 configurations.
"""
