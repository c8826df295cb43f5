"""``metastab study staircase`` (data/staircase/): GKPR dynamic metastability: merge times e^{β(1
− cos Δθ)} from prepared and random starts, energy staircase.
"""
