"""``metastab study noisy-transition`` (data/noisy-transition/): the stationary order parameter of
the noisy (USA) transformer on the circle against K, swept up and down for β below and above the
tricritical β_*, against the mean-field branches of :mod:`metastab.theory.noisy`.
"""
