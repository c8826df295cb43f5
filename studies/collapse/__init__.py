"""``metastab study collapse`` (data/collapse/): [FW] §5, the collapse proposition: SA_β contracts
the diameter by ≥ 1 − γc per step; collapse times of SA_β and SA_P.
"""
