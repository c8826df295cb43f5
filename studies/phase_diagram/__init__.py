"""``metastab study phase-diagram`` (data/phase-diagram/): GLPR Fig. 3/4: (t, β) phase diagram of
the clustered-pair probability for d = 2…1024 with the curve Γ of (6.9); cluster counts on the
circle at β = 4, 9.
"""
