"""``metastab study hardmax-nsd`` (data/hardmax-nsd/): [FW] §3, the Frank-Wolfe rate theorem:
hardmax with B ⪯ 0, the printed O(1/t) bound and its counterexample.
"""
