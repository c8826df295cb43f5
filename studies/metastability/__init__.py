"""``metastab study metastability`` (data/metastability/): [FW] Thm 5.4: the exit time T2 of SA_P
against β up to 80, beside the bound.
"""
