"""``metastab study meanfield-clusters`` (data/meanfield-clusters/): Bruno–Pasqualotto–Agazzi:
(USA) on the circle forms k* = argmax k² I_k(β) clusters, against β and N ≤ 2000.
"""
