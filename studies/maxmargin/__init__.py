"""``metastab study maxmargin`` (data/maxmargin/): [MM] E1–E6: max-margin token selection, ATT-
SVM solutions and training paths.
"""
