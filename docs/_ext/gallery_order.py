"""The order of the examples gallery: a researcher's path through the package, not the alphabet.

A first run, escape times and their fit, a sweep, large β, clusters and their merges, the phase
diagram, max-margin selection, and the GPU last (it needs a device). An example not listed here
comes after the listed ones and before the GPU's, by file name.
"""

PATH = (
    "plot_first_hour.py",
    "plot_escape_times.py",
    "plot_sweep.py",
    "plot_large_beta.py",
    "plot_clusters_on_circle.py",
    "plot_phase_diagram.py",
    "plot_maxmargin.py",
)
LAST = ("nr_gpu_run.py",)


class ResearcherOrder:
    """sphinx-gallery's ``within_subsection_order``: a sort key of the examples' file names."""

    def __init__(self, src_dir: str) -> None:
        self.src_dir = src_dir

    def __call__(self, filename: str) -> tuple[int, str]:
        if filename in PATH:
            return PATH.index(filename), filename
        if filename in LAST:
            return len(PATH) + 1 + LAST.index(filename), filename
        return len(PATH), filename

    def __repr__(self) -> str:  # in sphinx-gallery's cache key: a new order rebuilds the index
        return f"<ResearcherOrder : {PATH + LAST}>"
