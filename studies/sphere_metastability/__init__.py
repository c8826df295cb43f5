"""``metastab study sphere-metastability`` (data/sphere-metastability/): SphereChain: escape
times from clusters against β, exact law, accelerated to 1e40+.
"""
