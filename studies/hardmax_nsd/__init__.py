"""``metastab study hardmax-nsd`` (data/hardmax-nsd/): [FW] thm. fw.cluster: hardmax with B ⪯ 0,
the printed O(1/t) bound and its counterexample.
"""
