"""Seeds: one user-facing ``rng`` in, one independent xoshiro256** stream per chain out.

The root is a :class:`numpy.random.SeedSequence`; it is hashed into a 128-bit key, and chain c's
stream is a pure function of (key, c) (see ``kernels.streams.seed_streams``). Hence chain c is the
same whatever the number of chains, the chunk it runs in, the machine or the thread count, and a
sweep can be split anywhere. The root entropy is always recorded, even when the user passed
``None``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias, cast

import numpy as np

from .kernels import streams as _streams

__all__ = ["RNGLike", "Seed", "SeedLike", "as_seed"]

# What numpy.random.default_rng accepts, and what the ``rng`` of a simulation accepts (also a
# recorded Seed, defined below).
RNGLike: TypeAlias = "None | int | np.integer | np.random.SeedSequence | np.random.Generator"
SeedLike: TypeAlias = "RNGLike | Seed"


@dataclass(frozen=True)
class Seed:
    """The root of a run's randomness: a SeedSequence's entropy and spawn key (its provenance).

    Chain c's stream is a pure function of the seed and c (:meth:`streams`), so a recorded seed
    reproduces every chain of a run whatever its chunking or thread count.

    Parameters
    ----------
    entropy : int or tuple of int
        The entropy of the root :class:`numpy.random.SeedSequence`: an int, or a tuple of ints as
        in ``SeedSequence([1, 2])``.
    spawn_key : tuple of int, optional
        The root's spawn key (default empty: a root that was not spawned from another).

    See Also
    --------
    as_seed : the seed of any ``rng`` argument.

    Examples
    --------
    >>> import metastab as ms
    >>> seed = ms.Seed(42)
    >>> seed.to_dict()
    {'entropy': '42', 'spawn_key': []}
    >>> ms.Seed.from_dict(seed.to_dict()) == seed
    True
    """

    entropy: int | tuple[int, ...]
    spawn_key: tuple[int, ...] = ()

    @property
    def sequence(self) -> np.random.SeedSequence:
        return np.random.SeedSequence(self.entropy, spawn_key=self.spawn_key)

    def streams(self, chains: int, first: int = 0) -> np.ndarray:
        """The (chains, 4) uint64 states of chains ``first .. first + chains - 1``."""
        if chains < 0 or first < 0:
            raise ValueError(f"chains and first must be >= 0, got chains={chains}, first={first}")
        key = self.sequence.generate_state(2, np.uint64)
        out = np.empty((chains, 4), dtype=np.uint64)
        _streams.seed_streams(key[0], key[1], np.uint64(first), out)
        return out

    def to_dict(self) -> dict:
        # entropy can exceed 64 bits: keep it as decimal strings so JSON and CSV readers agree
        entropy = (
            [str(w) for w in self.entropy] if isinstance(self.entropy, tuple) else str(self.entropy)
        )
        return {"entropy": entropy, "spawn_key": list(self.spawn_key)}

    @classmethod
    def from_dict(cls, data: dict) -> Seed:
        entropy = data["entropy"]
        entropy = tuple(int(w) for w in entropy) if isinstance(entropy, list) else int(entropy)
        return cls(entropy, tuple(int(k) for k in data.get("spawn_key", ())))


def as_seed(rng: SeedLike = None) -> Seed:
    """The recorded :class:`Seed` of an ``rng`` argument (None, int, SeedSequence or Generator).

    None draws fresh entropy from the OS; a Generator is asked for 128 bits (and advanced), so that
    the run is reproducible from the recorded entropy alone.

    Parameters
    ----------
    rng : None, int, numpy.random.SeedSequence, numpy.random.Generator or Seed, optional
        The seed: None (default) for fresh entropy, a non-negative int, a SeedSequence (its
        entropy and spawn key are kept), a Generator (128 bits drawn from it) or a Seed (returned
        as it is).

    Returns
    -------
    seed : Seed
        The root whose entropy the run records.

    Raises
    ------
    TypeError
        For a bool or any other type.
    ValueError
        For a negative int.

    Examples
    --------
    >>> import numpy as np
    >>> import metastab as ms
    >>> ms.as_seed(42)
    Seed(entropy=42, spawn_key=())
    >>> ms.as_seed(np.random.SeedSequence([1, 2], spawn_key=(3,)))
    Seed(entropy=(1, 2), spawn_key=(3,))
    """
    if isinstance(rng, Seed):
        return rng
    if rng is None:
        # a SeedSequence made without entropy draws an int of it from the OS
        return Seed(int(cast(int, np.random.SeedSequence().entropy)))
    if isinstance(rng, (bool, np.bool_)):
        raise TypeError(f"rng must be None, an int, a SeedSequence or a Generator, got {rng!r}")
    if isinstance(rng, (int, np.integer)):
        if rng < 0:
            raise ValueError(f"rng must be a non-negative int, got {rng}")
        return Seed(int(rng))
    if isinstance(rng, np.random.SeedSequence):
        # never None: a SeedSequence made without entropy draws it from the OS
        entropy = cast("int | Sequence[int]", rng.entropy)
        entropy = (
            int(entropy)
            if isinstance(entropy, (int, np.integer))
            else tuple(int(w) for w in entropy)
        )
        return Seed(entropy, tuple(int(k) for k in rng.spawn_key))
    if isinstance(rng, np.random.Generator):
        words = rng.integers(0, 2**63, size=2, dtype=np.int64)
        return Seed((int(words[0]) << 63) | int(words[1]))
    raise TypeError(f"rng must be None, an int, a SeedSequence or a Generator, got {rng!r}")
