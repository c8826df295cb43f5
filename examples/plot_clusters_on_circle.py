"""
Clusters on the circle and their merge times
============================================

placeholder
"""
import metastab as ms
print(ms.__version__)
