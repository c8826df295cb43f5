"""``metastab study hardmax-tracking`` (data/hardmax-tracking/): finite β (SA_P, SA_β) follows
the hardmax path for a time exponential in β.
"""
