"""``metastab study normalisation`` (data/normalisation/): Karagodin–Ge–Polyanskiy–Rigollet, the
speed of each normalisation scheme: the initial speed from orthogonal starts (§4.1) and the rate of
collapse inside a cluster (§4.3).
"""
