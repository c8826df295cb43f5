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
from typing import cast

import numpy as np

from .kernels import streams as _streams

__all__ = ["Seed", "as_seed"]


@dataclass(frozen=True)
class Seed:
    """The root of a run's randomness: a SeedSequence's entropy (an int, or a tuple of ints as in
    ``SeedSequence([1, 2])``) and spawn key (its provenance)."""

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


def as_seed(rng=None) -> Seed:
    """Coerce ``rng`` (None, int, SeedSequence, Generator or Seed) to a recorded :class:`Seed`.

    None draws fresh entropy from the OS; a Generator is asked for 128 bits (and advanced), so that
    the run is reproducible from the recorded entropy alone.

    >>> as_seed(42).entropy
    42
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
