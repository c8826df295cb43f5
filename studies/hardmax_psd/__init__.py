"""``metastab study hardmax-psd`` (data/hardmax-psd/): [FW] thm. exp.fast.polytope: hardmax with
B ≻ 0, straight lines into the own vertex; the hardmax ODE.
"""
