"""``metastab study noisy-metastability`` (data/noisy-metastability/): the mean time N noisy (USA)
tokens on the circle take to leave the metastable uniform state (β > β_*, K_c < K < K_#), and to
leave a metastable cluster (K just below K_c), against N, fitted as e^(a + bN) and compared with
the mean-field free-energy barrier of :mod:`metastab.theory.noisy`.
"""
