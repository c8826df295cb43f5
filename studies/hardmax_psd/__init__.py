"""``metastab study hardmax-psd`` (data/hardmax-psd/): [FW] §4, the theorem on positive definite B:
hardmax with B ≻ 0, straight lines into the own vertex; the hardmax ODE.
"""
