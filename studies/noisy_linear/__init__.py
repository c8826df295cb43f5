"""``metastab study noisy-linear`` (data/noisy-linear/): the growth rates of the first
spherical-harmonic modes of the noisy (USA) transformer at the uniform state, simulated against
the closed form of :func:`metastab.theory.noisy.noisy_growth_rates`; K_# located by them.
"""
