"""``metastab study causal-parking`` (data/causal-parking/): Karagodin–Polyanskiy–Rigollet:
under causal masking the metastable clusters on the circle sit at the strong Rényi centres
(n = 200, d = 2, δ = 4β^{−1/2}, their Fig. 2): their count, their place and their lifetime
against β.
"""
