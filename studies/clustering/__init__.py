"""``metastab study clustering`` (data/clustering/): [FW] Thm 5.2: SA_P reaches the near-vertex
event by T1 with probability ≥ 1 − β^(-1/8).
"""
