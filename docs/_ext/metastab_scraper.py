"""A sphinx-gallery image scraper for the figures of :mod:`metastab.plotting`, which are plain
matplotlib Figures (no pyplot state), so the default scraper does not see them."""

_SCRAPED: dict = {}


def scrape(block, block_vars, gallery_conf):
    """Scrape the figures of :mod:`metastab.plotting`: plain matplotlib Figures, not pyplot's,
    found among the example's globals after each block (each drawn once)."""
    from matplotlib.figure import Figure
    from sphinx_gallery.scrapers import figure_rst

    seen = _SCRAPED.setdefault(block_vars["src_file"], [])
    paths = []
    for value in list(block_vars["example_globals"].values()):
        if not isinstance(value, Figure) or any(value is s for s in seen):
            continue
        seen.append(value)  # pyplot's figures (with a manager) are the matplotlib scraper's
        if value.canvas.manager is None:
            path = next(block_vars["image_path_iterator"])
            value.savefig(path, dpi=100, bbox_inches="tight")
            paths.append(path)
    return figure_rst(paths, gallery_conf["src_dir"])


def _get_sg_image_scraper():
    return scrape
