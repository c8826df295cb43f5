"""to_sphere: the explicit way onto the sphere for a start written with fewer digits, and the
hint that names it when a run refuses such a start."""

import numpy as np
import pytest

import metastab as ms
from metastab.models.sphere import SPHERE_TOL


def _printed(x: np.ndarray, digits: int) -> np.ndarray:
    """x as a table printed with ``digits`` significant digits and read back."""
    return np.array([[float(f"{v:.{digits}g}") for v in row] for row in x])


def test_a_start_printed_to_8_digits_is_refused_with_the_line_that_fixes_it():
    x0 = _printed(ms.sphere_uniform(16, 3, rng=5), 8)
    assert abs(np.linalg.norm(x0, axis=1) - 1).max() > SPHERE_TOL  # the case at hand
    model = ms.SphereFlow(beta=1.0, dt=0.1)
    with pytest.raises(ValueError, match=r"x0 = metastab\.to_sphere\(x0\)"):
        ms.simulate(model, x0, steps=3, rng=1)
    y = ms.to_sphere(x0)
    assert abs(np.linalg.norm(y, axis=1) - 1).max() <= 4e-16
    np.testing.assert_allclose(y, x0, rtol=0, atol=1e-7)  # the digits were kept
    ms.simulate(model, y, steps=3, rng=1)


def test_a_start_far_from_the_sphere_is_not_offered_to_sphere():
    x0 = np.array([[1.0, 0.0], [1.0, 1.0]])
    with pytest.raises(ValueError) as err:
        ms.simulate(ms.SphereFlow(beta=1.0, dt=0.1), x0, steps=3, rng=1)
    assert "to_sphere" not in str(err.value) and "normalise it" in str(err.value)
    with pytest.raises(ValueError, match=r"tol = 1e-06 .* \|x\[1\]\| = 1\.41421356237"):
        ms.to_sphere(x0)


def test_to_sphere_normalises_stacks_and_names_bad_input():
    x = ms.sphere_uniform(5, 4, chains=3, rng=2) * (1 + 5e-7)
    y = ms.to_sphere(x)
    assert y.shape == (3, 5, 4) and abs(np.linalg.norm(y, axis=-1) - 1).max() <= 4e-16
    assert ms.to_sphere(x, tol=1e-6) is not x  # a fresh array
    with pytest.raises(ValueError, match=r"\|x\[0, 0\]\|"):
        ms.to_sphere(x, tol=1e-7)  # the negative control: the same start at a tighter tol
    with pytest.raises(ValueError, match="tol"):
        ms.to_sphere(x, tol=-1.0)
    with pytest.raises(ValueError, match=r"shape \(4,\)"):
        ms.to_sphere(np.ones(4))
    with pytest.raises(ValueError, match=r"\|x\[0\]\| = nan"):
        ms.to_sphere([[np.nan, 1.0]])
